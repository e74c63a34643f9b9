#!/usr/bin/env bash
# Regenerates the committed SPIR-V (spv/) and MSL (msl/) from the GLSL in
# src/. Needs glslangValidator (Debian glslang-tools) and spirv-cross
# (Debian spirv-cross). Usage: gen.sh [OUTDIR] (default: this folder).
# The same SPIR-V runs on Vulkan; the MSL is translated from it, so both
# hosts execute one kernel source.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here}"
mkdir -p "$out/spv" "$out/msl"
# name  source  defines...
variants=(
  "qmv4 qmv.comp -DBITS=4"
  "qmv8 qmv.comp -DBITS=8"
  "qmm4 qmm.comp -DMODE=4"
  "qmm8 qmm.comp -DMODE=8"
  "mm qmm.comp -DMODE=0"
  "gather gather.comp"
  "rmsnorm rmsnorm.comp"
  "rope rope.comp"
  "attn attn.comp"
  "attnmerge attnmerge.comp"
  "eltwise eltwise.comp"
  "softmax softmax.comp"
  "argmax argmax.comp"
  "rowstat rowstat.comp"
  "streams streams.comp"
  "qmvt4 fused.comp -DBITS=4"
  "qmvt8 fused.comp -DBITS=8"
  "vchain fused.comp -DBITS=0"
  "attnd attnd.comp"
  "qmvx4 qmv.comp -DBITS=4 -DEXT=1"
  "qmvx8 qmv.comp -DBITS=8 -DEXT=1"
  "normx normx.comp"
  "eltx eltwise.comp -DEXT=1"
  "mmx qmm.comp -DMODE=0 -DEXT=1"
  "qmvw4 qmv.comp -DBITS=4 -DWIDE=1"
  "qmvw8 qmv.comp -DBITS=8 -DWIDE=1"
  "qmvxw4 qmv.comp -DBITS=4 -DEXT=1 -DWIDE=1"
  "qmvxw8 qmv.comp -DBITS=8 -DEXT=1 -DWIDE=1"
)
for v in "${variants[@]}"; do
  read -r name src defs <<<"$v"
  # shellcheck disable=SC2086
  glslangValidator -V --target-env vulkan1.1 -I"$here/src" $defs \
    -o "$out/spv/$name.spv" "$here/src/$src" >/dev/null
  spirv-cross --msl --msl-version 20300 --msl-decoration-binding \
    --rename-entry-point main "$name" comp \
    --output "$out/msl/$name.metal" "$out/spv/$name.spv"
done

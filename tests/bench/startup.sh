#!/usr/bin/env bash
# Start-up costs of the release binary: `envctl --version`, `envctl doctor` with no NVIDIA
# stack and with the stand-in NVML at 8 GPUs, and the binary's size.
# Goals (issue "hardening and performance"): --version ≤ 5 ms, doctor ≤ 150 ms.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v hyperfine >/dev/null; then
    apt-get install -y -q hyperfine >/dev/null
fi
cargo build --release -q
cargo build -q -p envctl-nvml-stub
target=$(realpath "${CARGO_TARGET_DIR:-target}")
ENVCTL=$target/release/envctl
STUB=$(ls "$target"/debug/libenvctl_nvml_stub.so "$target"/debug/deps/libenvctl_nvml_stub.so 2>/dev/null | head -1)
FIXTURE=$PWD/tests/fixtures/nvml/healthy-8x-h100.conf
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
hyperfine -N -i --warmup 5 --runs 50 --export-json "$work/startup.json" \
    -n version "$ENVCTL --version" \
    -n doctor-no-gpu "$ENVCTL doctor" \
    -n doctor-no-gpu-profile "$ENVCTL doctor pytorch-2.8"
ENVCTL_NVML_LIBRARY="$STUB" ENVCTL_NVML_STUB_FIXTURE="$FIXTURE" \
    hyperfine -N -i --warmup 5 --runs 50 -n doctor-8-gpus "$ENVCTL doctor pytorch-2.8"
size=$(stat -c %s "$ENVCTL")
echo "release binary: $size bytes ($((size / 1024 / 1024)) MiB)"

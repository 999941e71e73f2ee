#!/usr/bin/env bash
# The image scan of `envctl doctor` (issue 41): the cold scan of a large image and the
# cached one, against `docker save IMAGE > /dev/null` on the same image (the I/O floor:
# the daemon writing the same archive the scan reads).
#
#   tests/bench/image-scan.sh                 # a ~2 GB image, 3 rounds
#   SIZE_MB=8000 ROUNDS=5 tests/bench/image-scan.sh
#   ENVCTL=target/debug/envctl tests/bench/image-scan.sh
#
# Needs a Docker daemon, the fetched corpus (`bash tests/corpus/fatbin/fetch.sh`), and
# the stand-in NVML that `cargo test` builds (target/debug/deps/libenvctl_nvml_stub.so):
# doctor reads images only where NVML names GPUs. The image holds every library of the
# corpus (bitsandbytes' and libcurand's, 17 files) and enough copies of libcurand (167 MB
# of fat binaries each) to reach SIZE_MB, as one imported layer; it is labelled
# envctl.test=1 and removed at the end. Each cold run starts with an empty cache folder.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
SIZE_MB=${SIZE_MB:-2000}
ROUNDS=${ROUNDS:-3}
ENVCTL=${ENVCTL:-target/release/envctl}
CORPUS=${ENVCTL_FATBIN_CORPUS:-target/fatbin-corpus}
STUB=""
for candidate in target/debug/deps/libenvctl_nvml_stub.so target/debug/libenvctl_nvml_stub.so; do
    [ -f "$candidate" ] && STUB=$(realpath "$candidate") && break
done
[ -x "$ENVCTL" ] || { echo "error: $ENVCTL is not built" >&2; echo "hint: cargo build --release" >&2; exit 2; }
[ -n "$STUB" ] || { echo "error: the stand-in NVML is not built" >&2; echo "hint: cargo test --test it doctor_libraries::" >&2; exit 2; }
[ -d "$CORPUS/nvidia-curand-cu12" ] || { echo "error: no corpus in $CORPUS" >&2; echo "hint: bash tests/corpus/fatbin/fetch.sh" >&2; exit 2; }

work=$(mktemp -d)
image="envctl-bench-image-scan:$$"
cleanup() { docker rmi -f "$image" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT

site="$work/root/usr/lib/python3.12/site-packages"
mkdir -p "$site"
cp -r "$CORPUS/bitsandbytes/bitsandbytes" "$CORPUS/nvidia-curand-cu12/nvidia" "$site/"
curand="$CORPUS/nvidia-curand-cu12/nvidia/curand/lib/libcurand.so.10"
copies=0
while [ "$(du -sm "$work/root" | cut -f1)" -lt "$SIZE_MB" ]; do
    copies=$((copies + 1))
    mkdir -p "$work/root/opt/copy$copies/lib"
    cp "$curand" "$work/root/opt/copy$copies/lib/libcurand.so.10"
done
tar -C "$work/root" -cf - . | docker import --change 'LABEL envctl.test=1' - "$image" >/dev/null
size=$(docker image inspect --format '{{.Size}}' "$image")
printf 'image %s: %d MB, %d shared objects with fat binaries\n' "$image" $((size / 1000000)) $((17 + copies))
printf 'image = "%s"\ngpus = "all"\nuser = "1000:1000"\nmemory = "8g"\n' "$image" >"$work/bench.toml"

seconds() { local start end; start=$(date +%s%N); "$@" >/dev/null 2>&1 || true; end=$(date +%s%N); echo "scale=3; ($end - $start) / 1000000000" | bc; }
doctor() {
    XDG_CACHE_HOME="$work/cache" HOME="$work" ENVCTL_NVML_LIBRARY="$STUB" \
        ENVCTL_NVML_STUB_FIXTURE=tests/fixtures/nvml/rtx-5090.conf \
        "$ENVCTL" doctor --json "$work/bench.toml"
}
nogpu() { XDG_CACHE_HOME="$work/cache" HOME="$work" ENVCTL_NVML_LIBRARY=/nonexistent "$ENVCTL" doctor --json "$work/bench.toml"; }
save() { docker save "$image" >/dev/null; }

echo "round  docker-save  doctor-cold  doctor-cached  doctor-without-gpu"
for round in $(seq "$ROUNDS"); do
    floor=$(seconds save)
    rm -rf "$work/cache"
    cold=$(seconds doctor)
    cached=$(seconds doctor)
    plain=$(seconds nogpu)
    printf '%5d  %11s  %11s  %13s  %18s\n' "$round" "$floor" "$cold" "$cached" "$plain"
done
# One cold run's findings, to show what was judged.
rm -rf "$work/cache"
doctor | python3 -c 'import json,sys
r=json.load(sys.stdin)
def walk(v):
    if isinstance(v,dict):
        if v.get("id")=="gpu.library-arch": yield v
        for x in v.values(): yield from walk(x)
    elif isinstance(v,list):
        for x in v: yield from walk(x)
found=list(walk(r)); print(len(found),"gpu.library-arch findings:", ", ".join(sorted({f["status"] for f in found})))'

#!/usr/bin/env bash
# Benchmark: what GPU placement adds to `envctl up`, on a host with 8 GPUs (the stand-in
# NVML) and 50 containers that hold GPUs.
#
# Usage: tests/bench/placement.sh [--runs N] [--holders N]
#
#   --runs N     timed runs per command (default 40, after 3 warm-up runs)
#   --holders N  containers holding GPUs (default 50)
#
# Environment:
#   ENVCTL  the envctl binary (default: target/release/envctl, built when missing)
#   STUB    the stand-in NVML (default: target/debug/deps/libenvctl_nvml_stub.so, which
#           `cargo test` builds)
#
# Two profiles differ only in `placement`: `free` (envctl picks free GPUs: it lists the
# containers and reads each holder's request) and `first` (Docker's first N: no listing).
# `up --dry-run --force` runs everything `up` decides before the create (--force: no NVIDIA
# runtime here, and a dry run judges the doctor verdict as `up` does), so the difference of the
# two is what placement costs; the create and start themselves are the daemon's and are the
# same either way. It is measured for two kinds of holders:
#   envctl  containers made as `up` makes them (label `envctl.gpus`: read from the list)
#   other   containers made by `docker create --gpus` (no label: each one is inspected
#           once, then its request is read from envctl's cache; "cold" empties the cache
#           before every run, so every holder is inspected)
# The holders are created, not started (no NVIDIA runtime here), and removed at the end.
set -euo pipefail

RUNS=40
HOLDERS=50
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) RUNS="$2"; shift 2 ;;
        --holders) HOLDERS="$2"; shift 2 ;;
        -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
command -v hyperfine >/dev/null || { echo "error: hyperfine is missing: apt-get install -y hyperfine" >&2; exit 1; }
command -v jq >/dev/null || { echo "error: jq is missing: apt-get install -y jq" >&2; exit 1; }
ENVCTL="${ENVCTL:-$ROOT/target/release/envctl}"
if [ ! -x "$ENVCTL" ]; then
    echo "building $ENVCTL (cargo build --release) …" >&2
    (cd "$ROOT" && cargo build --release --bin envctl >&2)
fi
STUB="${STUB:-$ROOT/target/debug/deps/libenvctl_nvml_stub.so}"
[ -f "$STUB" ] || { echo "error: $STUB is missing: run \`cargo test --no-run\` first" >&2; exit 1; }
IMAGE="$(docker images --format '{{.Repository}}:{{.Tag}}' envctl-test/busybox | head -n 1)"
[ -n "$IMAGE" ] || { echo "error: no envctl-test/busybox image: run the tests once (cargo test)" >&2; exit 1; }

WORK="$(mktemp -d -t envctl-bench-placement-XXXXXX)"
OWNER="envctl-bench-placement=$$"
cleanup() {
    local ids
    ids="$(docker ps -aq --filter "label=$OWNER")"
    # shellcheck disable=SC2086
    [ -z "$ids" ] || docker rm -f $ids >/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$WORK/envctl"
printf 'image = "%s"\ngpus = 2\n' "$IMAGE" >"$WORK/envctl/free.toml"
printf 'image = "%s"\ngpus = 2\nplacement = "first"\n' "$IMAGE" >"$WORK/envctl/first.toml"
# Eight idle GPUs; the holders take GPUs 0-5 between them, so 6 and 7 are the free ones.
grep -v '^gpu\.[0-9]*\.uuid=' "$ROOT/tests/fixtures/nvml/healthy-8x-h100.conf" >"$WORK/machine.conf"
for index in 0 1 2 3 4 5 6 7; do
    echo "gpu.$index.uuid=GPU-00000000-0000-0000-0000-00000000000$index" >>"$WORK/machine.conf"
done
export ENVCTL_NVML_LIBRARY="$STUB" ENVCTL_NVML_STUB_FIXTURE="$WORK/machine.conf"
export ENVCTL_GPU_LOCK="$WORK/gpus.lock" NO_COLOR=1 XDG_CACHE_HOME="$WORK/cache"
CACHE="$WORK/cache/envctl/gpu-requests.json"
cd "$WORK"

holders() { # KIND
    local ids i
    ids="$(docker ps -aq --filter "label=$OWNER")"
    # shellcheck disable=SC2086
    [ -z "$ids" ] || docker rm -f $ids >/dev/null
    for i in $(seq "$HOLDERS"); do
        local index=$(( i % 6 ))
        if [ "$1" = envctl ]; then
            docker create -q --label "$OWNER" --label envctl.profile=bench \
                --label "envctl.gpus=devices=GPU-00000000-0000-0000-0000-00000000000$index" \
                --gpus "device=GPU-00000000-0000-0000-0000-00000000000$index" "$IMAGE" >/dev/null
        else
            docker create -q --label "$OWNER" --gpus "device=$index" "$IMAGE" >/dev/null
        fi
    done
}

# The floor: what one container list costs at this daemon in this run (curl, against a
# ping from the same curl), since placement cannot answer before the daemon lists.
SOCKET="/var/run/docker.sock"
case "${DOCKER_HOST:-}" in unix://*) SOCKET="${DOCKER_HOST#unix://}" ;; esac
floor() {
    hyperfine --style basic -N --warmup 5 --runs "$RUNS" --export-json "$WORK/floor.json" \
        -n ping "curl -s --unix-socket $SOCKET http://docker/_ping" \
        -n list "curl -s --unix-socket $SOCKET http://docker/containers/json?all=1" >/dev/null
    jq -r '(.results | map({(.command): .}) | add) as $r
        | "the daemon lists \($r.list.median*1000 - $r.ping.median*1000 | . * 10 | floor / 10) ms slower than it answers a ping (curl, medians)"' "$WORK/floor.json"
}

for kind in envctl other; do
    holders "$kind"
    chosen="$("$ENVCTL" --json up free --dry-run --force | jq -c '[.placement.gpus[].index]')"
    [ "$chosen" = "[6,7]" ] || { echo "error: placement chose $chosen, not [6,7]" >&2; exit 1; }
    floor
    hyperfine --style basic --warmup 3 --runs "$RUNS" --export-json "$WORK/$kind.json" \
        -n first "$ENVCTL up first --dry-run --force" \
        -n free "$ENVCTL up free --dry-run --force" >/dev/null
    if [ "$kind" = other ]; then
        hyperfine --style basic --warmup 3 --runs "$RUNS" --export-json "$WORK/cold.json" \
            --prepare "rm -f $CACHE" -n cold "$ENVCTL up free --dry-run --force" >/dev/null
        jq -r --slurpfile first "$WORK/$kind.json" '
            "\(.results[0].median*1000 | floor) ms with the cache emptied before each run: an uncached reading adds \(((.results[0].median - ($first[0].results | map(select(.command == "first"))[0].median))*10000 | floor) / 10) ms"
        ' "$WORK/cold.json"
    fi
    jq -r --arg kind "$kind" --arg holders "$HOLDERS" '
        (.results | map({(.command): .}) | add) as $r
        | "\($holders) \($kind) holders: first \($r.first.median*1000 | floor) ms, free \($r.free.median*1000 | floor) ms (medians); placement adds \((($r.free.median - $r.first.median)*10000 | floor) / 10) ms"
    ' "$WORK/$kind.json"
done

#!/usr/bin/env bash
# Benchmark: how long an Xid takes to mark its GPU fatal in `envctl stats --serve`
# (issue 43's bound: p95 ≤ 2 s from the Xid to `envctl_gpu_health` fatal).
#
# Usage: tests/bench/xid-latency.sh [--repeats N] [--interval S]
#
#   --repeats N   Xids injected, one run of stats each (default 20)
#   --interval S  stats' sampling interval in seconds (default 0.5)
#
# Environment:
#   ENVCTL  the envctl binary (default: target/release/envctl, built when missing)
#
# A fatal Xid keeps its GPU fatal until envctl restarts, so each repeat is one `stats
# --serve 127.0.0.1:0 --interval S` over the stand-in NVML (tests/fixtures/nvml/
# gpu-health-faults.conf, whose GPU 0 reads its health and is sound; its events fed
# through ENVCTL_NVML_STUB_EVENTS, its record kept in a folder of its own): once GPU 0 reads `state="ok"`, a random pause (0 to S) puts the
# Xid anywhere in a sampling interval, then Xid 79 is appended, and `/metrics` is polled
# every 20 ms until GPU 0's `envctl_gpu_health` says `state="fatal"` (at most 10 s: a
# miss is counted as 10 s and said). Prints each delay, then p50, p95 (nearest rank) and
# the maximum. The delay includes the stand-in's event wait (200 ms at a time, as the
# watcher's), the next sample and one HTTP poll: what a scraper would see.
set -euo pipefail

REPEATS=20
INTERVAL=0.5
while [ $# -gt 0 ]; do
    case "$1" in
        --repeats) REPEATS="$2"; shift 2 ;;
        --interval) INTERVAL="$2"; shift 2 ;;
        -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done
case "$REPEATS" in ''|*[!0-9]*|0) echo "error: --repeats takes a whole number ≥ 1, not '$REPEATS'" >&2; exit 2 ;; esac

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ENVCTL="${ENVCTL:-$ROOT/target/release/envctl}"
if [ ! -x "$ENVCTL" ]; then
    echo "building $ENVCTL (cargo build --release) …" >&2
    (cd "$ROOT" && cargo build --release --bin envctl >&2)
fi
STUB="$(find "$ROOT"/target/*/deps -maxdepth 1 -name libenvctl_nvml_stub.so 2>/dev/null | head -n 1 || true)"
[ -n "$STUB" ] || { echo "error: no stand-in NVML: run \`cargo test --no-run\` once" >&2; exit 1; }
command -v curl >/dev/null || { echo "error: curl is needed" >&2; exit 1; }

WORK="$(mktemp -d -t envctl-bench-xid-latency-XXXXXX)"
PID=""
cleanup() {
    if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

now_ms() { date +%s%3N; }

# GPU 0's health line says STATE in the exposition at ADDRESS.
gpu0_is() {
    curl -fsS --max-time 2 "http://$1/metrics" 2>/dev/null \
        | grep '^envctl_gpu_health{' | grep 'gpu="0"' | grep -q "state=\"$2\""
}

# One repeat: prints the delay in milliseconds from the Xid to GPU 0 fatal.
one() {
    local folder="$WORK/run-$1"
    mkdir -p "$folder"
    : >"$folder/events"
    ENVCTL_NVML_LIBRARY="$STUB" \
        ENVCTL_NVML_STUB_FIXTURE="$ROOT/tests/fixtures/nvml/gpu-health-faults.conf" \
        ENVCTL_NVML_STUB_EVENTS="$folder/events" ENVCTL_GPU_LOCK="$folder/gpus.lock" \
        ENVCTL_POLICY="$folder/no-policy.toml" \
        "$ENVCTL" stats --serve 127.0.0.1:0 --interval "$INTERVAL" >/dev/null 2>"$folder/stderr" &
    PID=$!
    local address="" _
    for _ in $(seq 1 200); do
        address="$(sed -n '1s|^serving Prometheus metrics at http://\(.*\)/metrics$|\1|p' "$folder/stderr")"
        [ -n "$address" ] && break
        sleep 0.05
    done
    [ -n "$address" ] || { echo "error: stats did not serve: $(cat "$folder/stderr")" >&2; exit 1; }
    for _ in $(seq 1 200); do
        gpu0_is "$address" ok && break
        sleep 0.05
    done
    gpu0_is "$address" ok || { echo "error: GPU 0 never read ok" >&2; exit 1; }
    # Anywhere in a sampling interval.
    sleep "$(awk -v seed="$RANDOM" -v interval="$INTERVAL" 'BEGIN { srand(seed); print rand() * interval }')"
    local start delay
    start="$(now_ms)"
    echo "0:79" >>"$folder/events"
    while ! gpu0_is "$address" fatal; do
        if [ $(($(now_ms) - start)) -ge 10000 ]; then
            echo "repeat $1: not fatal after 10 s (counted as 10 s)" >&2
            break
        fi
        sleep 0.02
    done
    delay=$(($(now_ms) - start))
    kill "$PID"
    wait "$PID" 2>/dev/null || true
    PID=""
    echo "$delay"
}

declare -a DELAYS
for repeat in $(seq 1 "$REPEATS"); do
    DELAYS+=("$(one "$repeat")")
    printf 'repeat %2d: Xid 79 → envctl_gpu_health fatal in %d ms\n' "$repeat" "${DELAYS[-1]}"
done
mapfile -t SORTED < <(printf '%s\n' "${DELAYS[@]}" | sort -n)
# Nearest rank: the smallest delay with at least P % of the repeats at or below it.
rank() { local index=$(((${#SORTED[@]} * $1 + 99) / 100 - 1)); echo "${SORTED[$index]}"; }
printf '\n%d Xids, stats --serve --interval %s, stand-in NVML (4 GPUs):\n' "$REPEATS" "$INTERVAL"
printf '  p50 %d ms, p95 %d ms, max %d ms (goal: p95 ≤ 2000 ms)\n' "$(rank 50)" "$(rank 95)" "${SORTED[-1]}"

#!/usr/bin/env bash
# Benchmark: what the Xid watcher (issue 43) costs `envctl stats --serve`.
#
# Usage: tests/bench/xid-watcher.sh [--seconds S] [--rounds R]
#
#   --seconds S  length of each measurement (default 60)
#   --rounds R   rounds of the three runs, in turn (default 3)
#
# Environment:
#   ENVCTL  the envctl binary (default: target/release/envctl, built when missing)
#
# Three runs of S seconds each of `envctl stats --serve 127.0.0.1:0 --interval 1s` over
# the stand-in NVML with 8 GPUs (tests/fixtures/nvml/healthy-8x-h100.conf), output to
# /dev/null:
#   1. without the watcher: the stand-in answers nvmlDeviceGetSupportedEventTypes with
#      "function not found", so no GPU offers Xid events and the watcher thread ends at
#      once (what `stats --serve` cost before issue 43);
#   2. the watcher, no event (its thread waits in nvmlEventSetWait_v2, 200 ms at a time);
#   3. the watcher with one Xid per second (application Xid 43, on each GPU in turn),
#      each counted and recorded beside the placement lock (read, written whole, synced).
# For each: envctl's CPU seconds (utime + stime from /proc/PID/stat), as a percentage of
# one core over the run. The figures that matter are 2 − 1 and 3 − 1 (goal: ≤ 0.5 % of a
# core). The stand-in's wait sleeps as the driver's blocks, so the watcher's own work is
# what is measured, not the driver's.
set -euo pipefail

SECONDS_RUN=60
ROUNDS=3
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) SECONDS_RUN="$2"; shift 2 ;;
        --rounds) ROUNDS="$2"; shift 2 ;;
        -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ENVCTL="${ENVCTL:-$ROOT/target/release/envctl}"
if [ ! -x "$ENVCTL" ]; then
    echo "building $ENVCTL (cargo build --release) …" >&2
    (cd "$ROOT" && cargo build --release --bin envctl >&2)
fi
STUB="$(ls "$ROOT"/target/*/deps/libenvctl_nvml_stub.so 2>/dev/null | head -n 1 || true)"
[ -n "$STUB" ] || { echo "error: no stand-in NVML: run \`cargo test --no-run\` once" >&2; exit 1; }

WORK="$(mktemp -d -t envctl-bench-xid-XXXXXX)"
cleanup() {
    jobs -p | xargs -r kill 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

cp "$ROOT/tests/fixtures/nvml/healthy-8x-h100.conf" "$WORK/watched.conf"
{ cat "$ROOT/tests/fixtures/nvml/healthy-8x-h100.conf"; echo "missing=nvmlDeviceGetSupportedEventTypes"; } >"$WORK/unwatched.conf"

# CPU seconds of a process (utime + stime), read before it ends.
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"; }

# One run: fixture, whether to send one Xid a second; prints the CPU percent of one core.
run() {
    local fixture="$1" events="$2" folder="$WORK/run-$RANDOM"
    mkdir -p "$folder"
    : >"$folder/events"
    ENVCTL_NVML_LIBRARY="$STUB" ENVCTL_NVML_STUB_FIXTURE="$WORK/$fixture" \
        ENVCTL_NVML_STUB_EVENTS="$folder/events" ENVCTL_GPU_LOCK="$folder/gpus.lock" \
        ENVCTL_POLICY="$folder/no-policy.toml" \
        "$ENVCTL" stats --serve 127.0.0.1:0 --interval 1s >/dev/null 2>"$folder/stderr" &
    local pid=$!
    # Start-up (NVML opened, the first samples) is not counted.
    sleep 3
    local start
    start="$(cpu_seconds "$pid")"
    local second
    for second in $(seq 1 "$SECONDS_RUN"); do
        [ "$events" = yes ] && echo "$((second % 8)):43" >>"$folder/events"
        sleep 1
    done
    local end
    end="$(cpu_seconds "$pid")"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    if [ "$events" = yes ]; then
        # Every Xid was recorded: the record names all 8 GPUs.
        local recorded
        recorded="$(grep -c '"uuid"' "$folder"/envctl-gpu-health.*.json || true)"
        [ "$recorded" = 8 ] || { echo "error: the record names $recorded GPUs, not 8" >&2; exit 1; }
    fi
    echo "($end - $start) * 100 / $SECONDS_RUN" | bc -l
}

declare -a NONE WAITING EVENTS
for round in $(seq 1 "$ROUNDS"); do
    NONE+=("$(run unwatched.conf no)")
    WAITING+=("$(run watched.conf no)")
    EVENTS+=("$(run watched.conf yes)")
    printf 'round %d: without watcher %.3f %%, watcher idle %.3f %%, watcher + 1 Xid/s %.3f %% of a core\n' \
        "$round" "${NONE[-1]}" "${WAITING[-1]}" "${EVENTS[-1]}"
done
mean() { local sum=0 value; for value in "$@"; do sum="$(echo "$sum + $value" | bc -l)"; done; echo "$sum / $#" | bc -l; }
none="$(mean "${NONE[@]}")"
waiting="$(mean "${WAITING[@]}")"
events="$(mean "${EVENTS[@]}")"
printf '\nmean over %d rounds of %d s (stats --serve, 8 stand-in GPUs, 1 s interval):\n' "$ROUNDS" "$SECONDS_RUN"
printf '  without the watcher      %.3f %% of a core\n' "$none"
printf '  watcher, no event        %.3f %% (+%.3f)\n' "$waiting" "$(echo "$waiting - $none" | bc -l)"
printf '  watcher, 1 Xid/s kept    %.3f %% (+%.3f)\n' "$events" "$(echo "$events - $none" | bc -l)"

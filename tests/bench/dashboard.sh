#!/usr/bin/env bash
# Benchmark: what serving the `stats --serve` dashboard to one browser costs envctl.
#
# Usage: tests/bench/dashboard.sh [--containers N] [--seconds S] [--interval D]
#
#   --containers N  idle containers followed (default 50)
#   --seconds S     length of each measurement (default 60)
#   --interval D    envctl's sampling interval (default 1s)
#
# Environment:
#   ENVCTL    the envctl binary (default: target/release/envctl, built when missing)
#   IMAGE     a local image with `sleep` (default: the test image `envctl-test/busybox:*`)
#   CHROMIUM  the browser (default: `chromium` on PATH)
#
# Three runs of S seconds each over the same N containers, each with the stand-in NVML
# (8 GPUs, tests/fixtures/nvml/healthy-8x-h100.conf), output to /dev/null:
#   1. `envctl stats NAME…`                       (no server: a table per interval)
#   2. `envctl stats --serve ADDR NAME…`          (server, nobody asking)
#   3. the same, with headless Chromium showing the dashboard the whole time (it polls
#      /api/v1/history?since=N and /api/v1/snapshot once an interval)
# For each: envctl's CPU seconds (utime + stime from /proc/PID/stat) and peak RSS
# (VmHWM), and for 3 the browser's CPU seconds (all its processes, after 5 s of start-up
# that are not counted). The figure that
# matters is 3 against 1 and 2: the dashboard's cost is the difference.
set -euo pipefail

CONTAINERS=50
SECONDS_RUN=60
INTERVAL=1s
while [ $# -gt 0 ]; do
    case "$1" in
        --containers) CONTAINERS="$2"; shift 2 ;;
        --seconds) SECONDS_RUN="$2"; shift 2 ;;
        --interval) INTERVAL="$2"; shift 2 ;;
        -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
docker version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
    { echo "error: the Docker daemon does not answer (\`docker version\`)" >&2; exit 1; }
CHROMIUM="${CHROMIUM:-$(command -v chromium || true)}"
[ -n "$CHROMIUM" ] || { echo "error: no chromium: sudo apt-get install -y chromium" >&2; exit 1; }
ENVCTL="${ENVCTL:-$ROOT/target/release/envctl}"
if [ ! -x "$ENVCTL" ]; then
    echo "building $ENVCTL (cargo build --release) …" >&2
    (cd "$ROOT" && cargo build --release --bin envctl >&2)
fi
STUB="$(ls "$ROOT"/target/*/deps/libenvctl_nvml_stub.so 2>/dev/null | head -n 1 || true)"
[ -n "$STUB" ] || { echo "error: no stand-in NVML: run \`cargo test --no-run\` once" >&2; exit 1; }
IMAGE="${IMAGE:-$(docker images --format '{{.Repository}}:{{.Tag}}' envctl-test/busybox | head -n 1)}"
[ -n "$IMAGE" ] || { echo "error: no test image: run \`cargo test --test it stats::\` once, or set IMAGE" >&2; exit 1; }

PREFIX="envctl-bench-dash-$$"
WORK="$(mktemp -d -t envctl-bench-dash-XXXXXX)"
cleanup() {
    jobs -p | xargs -r kill 2>/dev/null || true
    docker ps -aq --filter "label=envctl.bench=$PREFIX" | xargs -r docker rm -f >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

echo "starting $CONTAINERS idle containers …" >&2
seq 1 "$CONTAINERS" | xargs -P 8 -I{} docker run -d --name "$PREFIX-{}" \
    --label "envctl.bench=$PREFIX" --label envctl.test=1 --label "envctl.profile=$PREFIX" \
    "$IMAGE" sleep 3600 >/dev/null
NAMES="$(seq 1 "$CONTAINERS" | sed "s/^/$PREFIX-/" | tr '\n' ' ')"

# CPU seconds of a process (utime + stime), read before it ends.
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"; }
# Peak RSS in kB.
peak_rss() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }
# CPU seconds of a process and all its descendants still alive.
tree_cpu_seconds() {
    local total=0 pid
    for pid in $(pstree -pT "$1" 2>/dev/null | grep -o '([0-9]*)' | tr -d '()'); do
        [ -r "/proc/$pid/stat" ] && total="$(echo "$total + $(cpu_seconds "$pid")" | bc -l)"
    done
    echo "$total"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# run LABEL SERVE(0/1) BROWSER(0/1)
run() {
    local label="$1" serve="$2" browser="$3" port args=() envctl_pid browser_pid="" browser_cpu="-"
    if [ "$serve" = 1 ]; then
        port="$(free_port)"
        args=(--serve "127.0.0.1:$port")
    fi
    # shellcheck disable=SC2086
    ENVCTL_NVML_LIBRARY="$STUB" ENVCTL_NVML_STUB_FIXTURE="$ROOT/tests/fixtures/nvml/healthy-8x-h100.conf" \
        NO_COLOR=1 "$ENVCTL" stats --interval "$INTERVAL" "${args[@]}" $NAMES >/dev/null 2>"$WORK/$label.err" &
    envctl_pid=$!
    sleep 3
    if [ "$browser" = 1 ]; then
        "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
            --disable-component-update --disable-sync --user-data-dir="$WORK/profile-$label" \
            --window-size=1400,1100 "http://127.0.0.1:$port/" >/dev/null 2>&1 &
        browser_pid=$!
        # Its start-up is not the dashboard's cost.
        sleep 5
    fi
    local start_cpu; start_cpu="$(cpu_seconds "$envctl_pid")"
    local browser_start=0
    [ -n "$browser_pid" ] && browser_start="$(tree_cpu_seconds "$browser_pid")"
    sleep "$SECONDS_RUN"
    local end_cpu; end_cpu="$(cpu_seconds "$envctl_pid")"
    local rss; rss="$(peak_rss "$envctl_pid")"
    if [ -n "$browser_pid" ]; then
        browser_cpu="$(printf '%.2f' "$(echo "$(tree_cpu_seconds "$browser_pid") - $browser_start" | bc -l)")"
        kill "$browser_pid" 2>/dev/null || true
        wait "$browser_pid" 2>/dev/null || true
    fi
    kill "$envctl_pid"
    wait "$envctl_pid" 2>/dev/null || true
    printf '%-34s  envctl CPU %6.2f s (%5.2f %% of a core)  peak RSS %6.1f MB  browser CPU %s s\n' \
        "$label" "$(echo "$end_cpu - $start_cpu" | bc -l)" \
        "$(echo "($end_cpu - $start_cpu) * 100 / $SECONDS_RUN" | bc -l)" \
        "$(echo "$rss / 1024" | bc -l)" "$browser_cpu"
}

echo "machine: $(nproc) CPU cores, Docker $(docker version --format '{{.Server.Version}}'), $CONTAINERS containers, 8 stand-in GPUs, interval $INTERVAL, $SECONDS_RUN s each, $ENVCTL"
run "stats (no --serve)" 0 0
run "stats --serve, no client" 1 0
run "stats --serve, dashboard open" 1 1

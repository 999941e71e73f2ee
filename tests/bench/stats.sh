#!/usr/bin/env bash
# Benchmark: `envctl stats` against `docker stats`.
#
# Usage: tests/bench/stats.sh [--runs N] [--seconds S] [--sizes "10 50"] [--check] [--skip-stream]
#
#   --runs N        timed runs of each one-shot command per size (default 10, 2 warm-up)
#   --seconds S     length of each streaming measurement (default 30)
#   --sizes LIST    container counts for the one-shot comparison (default "10 50")
#   --check         exit 1 when a goal is missed
#   --skip-stream   only the one-shot comparison
#
# Environment:
#   ENVCTL  the envctl binary (default: target/release/envctl, built when missing)
#   IMAGE   a local image with `sleep` (default: the test image `envctl-test/busybox:*`)
#
# 1. `envctl stats --once NAME…` against `docker stats --no-stream NAME…` over the same
#    N idle containers (hyperfine). Goal: envctl ≤ 0.15 × the docker CLI's wall time.
# 2. Streaming for S seconds over 50 containers: `envctl stats NAME…` (cgroup source),
#    `ENVCTL_STATS_SOURCE=api envctl stats NAME…` (the Engine API's streams, as for a
#    remote daemon), `docker stats NAME…`, and nothing at all (the daemons' own
#    background). For each: CPU seconds of the client, of dockerd, and of containerd with
#    its shims (from /proc/PID/stat), and the client's peak RSS. Goal: envctl ≤ 20 MB.
#    Output goes to /dev/null: neither client draws a terminal.
set -euo pipefail

RUNS=10
SECONDS_STREAM=30
SIZES="10 50"
CHECK=0
STREAM=1
ONCE_GOAL=0.15
RSS_GOAL_KB=20480
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) RUNS="$2"; shift 2 ;;
        --seconds) SECONDS_STREAM="$2"; shift 2 ;;
        --sizes) SIZES="$2"; shift 2 ;;
        --check) CHECK=1; shift ;;
        --skip-stream) STREAM=0; shift ;;
        -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
for tool in hyperfine jq; do
    command -v "$tool" >/dev/null || { echo "error: \`$tool\` is missing: sudo apt-get install -y $tool" >&2; exit 1; }
done
docker version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
    { echo "error: the Docker daemon does not answer (\`docker version\`)" >&2; exit 1; }

ENVCTL="${ENVCTL:-$ROOT/target/release/envctl}"
if [ ! -x "$ENVCTL" ]; then
    echo "building $ENVCTL (cargo build --release) …" >&2
    (cd "$ROOT" && cargo build --release --bin envctl >&2)
fi
IMAGE="${IMAGE:-$(docker images --format '{{.Repository}}:{{.Tag}}' envctl-test/busybox | head -n 1)}"
if [ -z "$IMAGE" ]; then
    echo "error: no test image: run \`cargo test --test it stats::\` once, or set IMAGE" >&2
    exit 1
fi

PREFIX="envctl-bench-stats-$$"
LARGEST=0
for size in $SIZES; do [ "$size" -gt "$LARGEST" ] && LARGEST="$size"; done
[ "$STREAM" = 1 ] && [ "$LARGEST" -lt 50 ] && LARGEST=50
WORK="$(mktemp -d -t envctl-bench-stats-XXXXXX)"
cleanup() {
    docker ps -aq --filter "label=envctl.bench=$PREFIX" | xargs -r docker rm -f >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

echo "starting $LARGEST idle containers …" >&2
seq 1 "$LARGEST" | xargs -P 8 -I{} docker run -d --name "$PREFIX-{}" \
    --label "envctl.bench=$PREFIX" --label envctl.test=1 --label "envctl.profile=$PREFIX" \
    "$IMAGE" sleep 3600 >/dev/null
names() { seq 1 "$1" | sed "s/^/$PREFIX-/" | tr '\n' ' '; }

echo "machine:  $(nproc) CPU cores, Docker $(docker version --format '{{.Server.Version}}'), cgroup $( [ -f /sys/fs/cgroup/cgroup.controllers ] && echo v2 || echo v1)"
echo "envctl:   $ENVCTL"
echo "image:    $IMAGE"
echo "other containers running: $(( $(docker ps -q | wc -l) - LARGEST ))"
echo

export NO_COLOR=1
MISSED=0
for size in $SIZES; do
    list="$(names "$size")"
    JSON="$WORK/once-$size.json"
    hyperfine --runs "$RUNS" --warmup 2 --export-json "$JSON" --style basic \
        --command-name "envctl stats --once ($size)" "$ENVCTL stats --once $list >/dev/null 2>&1" \
        --command-name "docker stats --no-stream ($size)" "docker stats --no-stream $list >/dev/null" >&2
    envctl_mean="$(jq '.results[0].mean' "$JSON")"
    docker_mean="$(jq '.results[1].mean' "$JSON")"
    ratio="$(jq -n --argjson a "$envctl_mean" --argjson b "$docker_mean" '$a / $b')"
    printf '%2d containers: envctl --once %7.1f ms ± %5.1f, docker stats --no-stream %7.1f ms ± %5.1f, ratio %.3f (goal ≤ %s)\n' \
        "$size" \
        "$(jq -n --argjson a "$envctl_mean" '$a * 1000')" "$(jq '.results[0].stddev * 1000' "$JSON")" \
        "$(jq -n --argjson a "$docker_mean" '$a * 1000')" "$(jq '.results[1].stddev * 1000' "$JSON")" \
        "$ratio" "$ONCE_GOAL"
    jq -e -n --argjson r "$ratio" --argjson g "$ONCE_GOAL" '$r <= $g' >/dev/null || MISSED=1
done

[ "$STREAM" = 1 ] || { [ "$CHECK" = 1 ] && [ "$MISSED" = 1 ] && exit 1; exit 0; }

# CPU seconds (user + system) of the processes in $@, from /proc/PID/stat fields 14 and 15.
ticks() {
    local total=0 pid fields
    for pid in "$@"; do
        fields="$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)"
        total=$((total + fields))
    done
    echo "$total"
}
dockerd_pids() { pgrep -x dockerd || true; }
containerd_pids() { { pgrep -x containerd; pgrep -f containerd-shim; } 2>/dev/null | sort -u || true; }
HZ="$(getconf CLK_TCK)"

# stream LABEL COMMAND…: runs the command for SECONDS_STREAM in the background, then
# reads its CPU time and peak RSS (VmHWM) from /proc before stopping it, so every client is
# measured over the same window whatever it does with signals (the docker CLI, its output
# not a terminal, does not stop on SIGTERM at once). Prints one line.
stream() {
    local label="$1"; shift
    local daemon_before shim_before daemon_after shim_after client_ticks=0 rss=0 pid=""
    daemon_before="$(ticks $(dockerd_pids))"
    shim_before="$(ticks $(containerd_pids))"
    if [ "$#" -gt 0 ]; then
        "$@" >/dev/null 2>&1 &
        pid=$!
    fi
    sleep "$SECONDS_STREAM"
    if [ -n "$pid" ]; then
        client_ticks="$(ticks "$pid")"
        rss="$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)"
    fi
    daemon_after="$(ticks $(dockerd_pids))"
    shim_after="$(ticks $(containerd_pids))"
    if [ -n "$pid" ]; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    local client_seconds dockerd_seconds containerd_seconds total
    client_seconds="$(jq -n --argjson a "$client_ticks" --argjson hz "$HZ" '$a / $hz')"
    dockerd_seconds="$(jq -n --argjson a "$daemon_before" --argjson b "$daemon_after" --argjson hz "$HZ" '($b - $a) / $hz')"
    containerd_seconds="$(jq -n --argjson a "$shim_before" --argjson b "$shim_after" --argjson hz "$HZ" '($b - $a) / $hz')"
    total="$(jq -n --argjson c "$client_seconds" --argjson d "$dockerd_seconds" --argjson s "$containerd_seconds" '$c + $d + $s')"
    printf '%-28s client %6.2f s  dockerd %6.2f s  containerd+shims %6.2f s  total %6.2f s  client peak RSS %6.1f MB\n' \
        "$label" "$client_seconds" "$dockerd_seconds" "$containerd_seconds" "$total" "$(jq -n --argjson r "$rss" '$r / 1024')"
    echo "$rss" >"$WORK/rss-$label"
}

list50="$(names 50)"
echo
echo "streaming $SECONDS_STREAM s over 50 containers (CPU seconds over the whole run):"
stream "nothing (background)"
stream "envctl stats" "$ENVCTL" stats $list50
stream "envctl stats (API streams)" env ENVCTL_STATS_SOURCE=api "$ENVCTL" stats $list50
stream "docker stats" docker stats $list50

rss="$(cat "$WORK/rss-envctl stats")"
printf 'envctl peak RSS %.1f MB (goal ≤ %d MB)\n' "$(jq -n --argjson r "$rss" '$r / 1024')" "$((RSS_GOAL_KB / 1024))"
[ "$rss" -le "$RSS_GOAL_KB" ] || MISSED=1

if [ "$MISSED" = 1 ]; then
    echo "a goal was NOT met"
    [ "$CHECK" = 1 ] && exit 1
else
    echo "goals met"
fi
exit 0

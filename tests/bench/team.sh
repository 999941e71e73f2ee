#!/usr/bin/env bash
# The live team view (issue 38, item 6): `envctl stats --serve --hosts` over 3 endpoints ×
# 20 containers against `envctl stats --serve` of one daemon, in the same run.
# Goal: the team's CPU time and peak RSS ≤ 3× one daemon's.
#
#   sudo bash .ci/dockerd2.sh start && tests/bench/team.sh
#   tests/bench/team.sh --seconds 120 --rounds 3 --containers 20
#   ENVCTL=target/debug/envctl tests/bench/team.sh   # another binary (default: release, built if missing)
#   tests/bench/team.sh --check                       # exit 1 when a goal is missed
#
# Needs the second daemon of .ci/dockerd2.sh, jq and curl. It starts N idle envctl
# containers (labelled `envctl.profile`, `envctl.test=1`) on the local daemon and N on the
# second one, and removes them at the end. The three endpoints: the local daemon
# (unix socket: its containers read from their cgroup files), the second daemon over TLS
# (tcp://127.0.0.1:23760) and the second daemon again through its unix socket (both
# another machine's daemon by its /info name: the Engine API's stats stream per container),
# so the team follows 3 × N containers. Each run lasts S seconds with a scraper asking
# /metrics and /api/v1/snapshot every second (Prometheus and an open dashboard); envctl's
# CPU time is counted after 5 s of start-up (from /proc/PID/stat) and given per minute,
# its RSS is the peak (VmHWM). The references, in the same round: one daemon served alone,
# the second over TLS (the dearer kind: a stream per container) and the local one (cgroup
# files). Rounds alternate the order, as the load of a shared machine drifts.
set -euo pipefail
cd "$(dirname "$0")/../.."

SECONDS_RUN=60
ROUNDS=2
CONTAINERS=20
CHECK=0
GOAL=3
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) SECONDS_RUN="$2"; shift 2 ;;
        --rounds) ROUNDS="$2"; shift 2 ;;
        --containers) CONTAINERS="$2"; shift 2 ;;
        --check) CHECK=1; shift ;;
        -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done
for tool in jq curl; do
    command -v "$tool" >/dev/null || { echo "error: \`$tool\` is missing: sudo apt-get install -y $tool" >&2; exit 1; }
done
bash .ci/dockerd2.sh status >/dev/null 2>&1 || {
    echo "error: the second daemon does not answer; start it: sudo bash .ci/dockerd2.sh start" >&2
    exit 1
}
if [ -z "${ENVCTL:-}" ]; then
    ENVCTL=$(realpath "${CARGO_TARGET_DIR:-target}")/release/envctl
    [ -x "$ENVCTL" ] || cargo build --release --locked -q --bin envctl
fi
LOCAL=unix:///var/run/docker.sock
D2=unix:///run/envctl-ci/dockerd2.sock
TLS=tcp://127.0.0.1:23760
export DOCKER_CERT_PATH=/run/envctl-ci/dockerd2-tls
PREFIX="envctl-bench-team-$$"
work=$(mktemp -d)
cleanup() {
    for daemon in "$LOCAL" "$D2"; do
        docker -H "$daemon" ps -aq --filter "label=envctl.bench=$PREFIX" | xargs -r docker -H "$daemon" rm -f >/dev/null 2>&1 || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

image_of() { docker -H "$1" images --format '{{.Repository}}:{{.Tag}}' envctl-test/busybox | head -n 1; }
for daemon in "$LOCAL" "$D2"; do
    image=$(image_of "$daemon")
    [ -n "$image" ] || { echo "error: no test image on $daemon: run \`cargo test --test it team_view::\` once" >&2; exit 1; }
    echo "starting $CONTAINERS idle containers on $daemon …" >&2
    seq 1 "$CONTAINERS" | xargs -P 8 -I{} docker -H "$daemon" run -d --name "$PREFIX-{}" \
        --label "envctl.bench=$PREFIX" --label envctl.test=1 --label "envctl.profile=$PREFIX" \
        --memory 64m "$image" sleep 3600 >/dev/null
done

HZ=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# run LABEL TLS_VERIFY GLOBAL_FLAGS STATS_FLAGS: envctl stats --serve for SECONDS_RUN with
# a scraper; prints "LABEL cpu_seconds_per_minute rss_kib followed_containers".
run() {
    local label="$1" verify="$2" global="$3" flags="$4"
    local port; port=$(free_port)
    # shellcheck disable=SC2086 # the flags are words on purpose
    DOCKER_TLS_VERIFY="$verify" NO_COLOR=1 "$ENVCTL" $global stats --all-users --interval 1s \
        --serve "127.0.0.1:$port" $flags >/dev/null 2>"$work/$label.err" &
    local pid=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/metrics" >/dev/null && break; sleep 0.1; done
    sleep 5
    local before; before=$(ticks "$pid")
    local end=$((SECONDS + SECONDS_RUN))
    while [ "$SECONDS" -lt "$end" ]; do
        curl -sf "http://127.0.0.1:$port/metrics" >/dev/null || true
        curl -sf "http://127.0.0.1:$port/api/v1/snapshot" >"$work/$label.json" || true
        sleep 1
    done
    local after; after=$(ticks "$pid")
    local rss; rss=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status")
    local followed; followed=$(jq '.containers | length' "$work/$label.json")
    kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
    jq -n --arg l "$label" --argjson t "$((after - before))" --argjson hz "$HZ" --argjson s "$SECONDS_RUN" \
        --argjson r "$rss" --argjson c "$followed" -r '"\($l) \($t / $hz * 60 / $s) \($r) \($c)"'
}

echo "machine:  $(nproc) CPU cores, load $(cut -d' ' -f1-3 /proc/loadavg), Docker $(docker version --format '{{.Server.Version}}')"
echo "envctl:   $ENVCTL"
echo "each run: ${SECONDS_RUN} s at 1 s, $CONTAINERS containers per daemon, scraped every second"
echo "other envctl containers running: local $(( $(docker ps -q --filter label=envctl.profile | wc -l) - CONTAINERS )), second $(( $(docker -H "$D2" ps -q --filter label=envctl.profile | wc -l) - CONTAINERS ))"
echo
: >"$work/results"
for round in $(seq 1 "$ROUNDS"); do
    runs=("team" "tls" "local")
    [ $((round % 2)) = 0 ] && runs=("local" "tls" "team")
    for which in "${runs[@]}"; do
        case "$which" in
            team) line=$(run team 1 "" "--hosts $LOCAL,$TLS,$D2") ;;
            tls) line=$(run tls 1 "-H $TLS" "") ;;
            local) line=$(run local "" "-H $LOCAL" "") ;;
        esac
        echo "round $round: $line" | awk '{printf "%s %-6s CPU %6.2f s/min  RSS %6.1f MiB  containers %s\n", $1" "$2, $3, $4, $5 / 1024, $6}'
        echo "$line" >>"$work/results"
    done
done
echo
mean() { awk -v l="$1" -v f="$2" '$1 == l {s += $f; n++} END {printf "%.3f", s / n}' "$work/results"; }
team_cpu=$(mean team 2); tls_cpu=$(mean tls 2); local_cpu=$(mean local 2)
team_rss=$(mean team 3); tls_rss=$(mean tls 3); local_rss=$(mean local 3)
printf 'mean CPU per minute: team %.2f s, one daemon over TLS %.2f s, the local one %.2f s\n' "$team_cpu" "$tls_cpu" "$local_cpu"
printf 'mean peak RSS:       team %.1f MiB, one daemon over TLS %.1f MiB, the local one %.1f MiB\n' \
    "$(jq -n "$team_rss / 1024")" "$(jq -n "$tls_rss / 1024")" "$(jq -n "$local_rss / 1024")"
cpu_ratio=$(jq -n "$team_cpu / $tls_cpu"); rss_ratio=$(jq -n "$team_rss / $tls_rss")
printf 'team / one daemon (TLS): CPU %.2f×, RSS %.2f× (goal ≤ %s×); team / the three served alone: CPU %.2f×\n' \
    "$cpu_ratio" "$rss_ratio" "$GOAL" "$(jq -n "$team_cpu / ($tls_cpu * 2 + $local_cpu)")"
if [ "$CHECK" = 1 ]; then
    jq -e -n "$cpu_ratio <= $GOAL and $rss_ratio <= $GOAL" >/dev/null || exit 1
fi

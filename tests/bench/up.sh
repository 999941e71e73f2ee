#!/usr/bin/env bash
# Benchmark: `envctl up PROFILE` against `docker run -d` with exactly the same settings.
#
# Usage: tests/bench/up.sh [--rounds N] [--runs N] [--warmup N] [--check] [--keep-json FILE]
#
#   --rounds N     rounds of hyperfine, the two commands' order swapped each round (default 8)
#   --runs N       timed runs per command and round (default 5)
#   --warmup N     untimed runs per command and round (default 1)
#   --check        exit 1 when envctl's mean is above the goal (0.90 × docker's)
#   --keep-json F  keep the pooled times (JSON) in F
#
# Environment:
#   ENVCTL  the envctl binary (default: target/release/envctl, built when missing)
#   IMAGE   a local image with `sleep` (default: the test image `envctl-test/busybox:*`
#           when present, else one imported here from Debian's busybox-static and
#           removed again at the end)
#
# Both commands create and start a fresh container each run: hyperfine's --prepare
# removes the previous one (untimed). The daemon's create + start is most of both and
# drifts with the machine's load, so short rounds alternate the two commands and the ratio
# is taken over all runs pooled. The docker command is the very line that
# `envctl up --dry-run` prints, so both make the same container (spec_equivalence.rs
# proves that line and the create body agree field by field). A third command, the curl
# floor, sends the same create and start requests from one curl process: the daemon's own
# time plus one process start, about the best any client could do without overlapping
# its own work with the daemon's.
set -euo pipefail

# Seconds to let the daemon finish tearing down the previous container (network namespace,
# layers) before the next timed run, so that work is not counted against either command.
SETTLE=0.3
ROUNDS=8
RUNS=5
WARMUP=1
CHECK=0
KEEP_JSON=""
GOAL=0.90
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS="$2"; shift 2 ;;
        --runs) RUNS="$2"; shift 2 ;;
        --warmup) WARMUP="$2"; shift 2 ;;
        --check) CHECK=1; shift ;;
        --keep-json) KEEP_JSON="$2"; shift 2 ;;
        -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

need() {
    command -v "$1" >/dev/null 2>&1 && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing $2 …" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y "$2" >/dev/null
    else
        echo "error: \`$1\` is missing: sudo apt-get install -y $2" >&2
        exit 1
    fi
}
need hyperfine hyperfine
need jq jq
need curl curl
if ! docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
    echo "error: the Docker daemon does not answer (\`docker version\`)" >&2
    exit 1
fi

ENVCTL="${ENVCTL:-$ROOT/target/release/envctl}"
if [ ! -x "$ENVCTL" ]; then
    echo "building $ENVCTL (cargo build --release) …" >&2
    (cd "$ROOT" && cargo build --release --bin envctl >&2)
fi
ENVCTL="$(cd "$(dirname "$ENVCTL")" && pwd)/$(basename "$ENVCTL")"

WORK="$(mktemp -d -t envctl-bench-XXXXXX)"
PROFILE="bench-$$"
CONTAINER="envctl-$PROFILE"
BUILT_IMAGE=""
cleanup() {
    docker rm -f "$CONTAINER" >/dev/null 2>&1 || true
    [ -n "$BUILT_IMAGE" ] && docker rmi -f "$BUILT_IMAGE" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

if [ -z "${IMAGE:-}" ]; then
    IMAGE="$(docker images --format '{{.Repository}}:{{.Tag}}' envctl-test/busybox | head -n 1)"
fi
if [ -z "$IMAGE" ]; then
    busybox="$(command -v busybox || true)"
    if [ -z "$busybox" ] || ldd "$busybox" >/dev/null 2>&1; then
        need busybox busybox-static
        busybox="$(command -v busybox)"
    fi
    IMAGE="envctl-bench/busybox:$$"
    mkdir -p "$WORK/rootfs/bin" "$WORK/rootfs/tmp"
    cp "$busybox" "$WORK/rootfs/bin/busybox"
    for applet in $("$busybox" --list); do
        [ "$applet" = busybox ] || ln -s busybox "$WORK/rootfs/bin/$applet"
    done
    tar -C "$WORK/rootfs" -cf - . |
        docker import --change 'CMD ["sh"]' --change 'ENV PATH=/bin' \
            --change 'LABEL envctl.test=1' - "$IMAGE" >/dev/null
    BUILT_IMAGE="$IMAGE"
fi

# A profile with the settings a team profile has: memory, CPUs, shared memory, a published
# port, a bind mount and environment. (No named volume: it would outlive each run.)
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null || echo 18765)"
mkdir -p "$WORK/envctl" "$WORK/data"
cat >"$WORK/envctl/$PROFILE.toml" <<EOF
image = "$IMAGE"
memory = "256m"
cpus = 1.0
shm_size = "128m"
ports = ["$PORT:8888"]
mounts = ["./data:/data"]
env = { PYTHONUNBUFFERED = "1", TEAM = "bench" }
EOF

cd "$WORK"
export NO_COLOR=1
DOCKER_LINE="$("$ENVCTL" up "$PROFILE" --dry-run)"
case "$DOCKER_LINE" in
    "docker run -d "*) ;;
    *) echo "error: unexpected dry-run line: $DOCKER_LINE" >&2; exit 1 ;;
esac

# The floor: the same two requests (create, start) sent by curl straight to the socket, no
# checks, no output. No client can do much better than this on this daemon.
SOCKET="/var/run/docker.sock"
case "${DOCKER_HOST:-}" in
    unix://*) SOCKET="${DOCKER_HOST#unix://}" ;;
    "") ;;
    *) echo "error: the curl floor needs a unix socket, DOCKER_HOST is $DOCKER_HOST" >&2; exit 1 ;;
esac
"$ENVCTL" --json up "$PROFILE" --dry-run | jq '.body' >"$WORK/body.json"
# One curl process sends both (`--next`), one after the other, so the floor pays one
# process start, as envctl and docker do.
FLOOR_LINE="curl -sSf -o /dev/null --unix-socket $SOCKET -H 'Content-Type: application/json' --data-binary @$WORK/body.json 'http://localhost/containers/create?name=$CONTAINER' --next -sSf --unix-socket $SOCKET -X POST 'http://localhost/containers/$CONTAINER/start'"

# All three must work before timing them.
"$ENVCTL" -q up "$PROFILE" >/dev/null
docker rm -f "$CONTAINER" >/dev/null
sh -c "$DOCKER_LINE" >/dev/null
docker rm -f "$CONTAINER" >/dev/null
sh -c "$FLOOR_LINE"
[ "$(docker inspect -f '{{.State.Running}}' "$CONTAINER")" = true ]
docker rm -f "$CONTAINER" >/dev/null

echo "machine:  $(nproc) CPU cores, Docker $(docker version --format '{{.Server.Version}}')"
echo "envctl:   $ENVCTL"
echo "image:    $IMAGE"
echo "docker:   $DOCKER_LINE"
echo "floor:    curl create + start of the same body (\`envctl up --dry-run --json\`)"
echo

ENVCTL_COMMAND="$ENVCTL -q up $PROFILE"
for round in $(seq 1 "$ROUNDS"); do
    # Alternate which command goes first, so a slow stretch of the daemon hits both.
    if [ $((round % 2)) = 1 ]; then
        order=(--command-name "envctl up" "$ENVCTL_COMMAND" --command-name "docker run -d" "$DOCKER_LINE" --command-name "curl floor" "$FLOOR_LINE")
    else
        order=(--command-name "curl floor" "$FLOOR_LINE" --command-name "docker run -d" "$DOCKER_LINE" --command-name "envctl up" "$ENVCTL_COMMAND")
    fi
    hyperfine --style none \
        --runs "$RUNS" \
        --warmup "$WARMUP" \
        --prepare "docker rm -f $CONTAINER >/dev/null 2>&1 || true; sleep $SETTLE" \
        --cleanup "docker rm -f $CONTAINER >/dev/null 2>&1 || true" \
        --export-json "$WORK/round-$round.json" \
        "${order[@]}" >/dev/null
    printf 'round %2d/%s: envctl %6.1f ms, docker %6.1f ms, curl floor %6.1f ms\n' "$round" "$ROUNDS" \
        "$(jq '.results[] | select(.command == "envctl up") | .mean * 1000' "$WORK/round-$round.json")" \
        "$(jq '.results[] | select(.command == "docker run -d") | .mean * 1000' "$WORK/round-$round.json")" \
        "$(jq '.results[] | select(.command == "curl floor") | .mean * 1000' "$WORK/round-$round.json")"
done

JSON="${KEEP_JSON:-$WORK/pooled.json}"
jq -s '{
    envctl: [.[].results[] | select(.command == "envctl up") | .times[]],
    docker: [.[].results[] | select(.command == "docker run -d") | .times[]],
    floor: [.[].results[] | select(.command == "curl floor") | .times[]]
}' "$WORK"/round-*.json >"$JSON"
mean() { jq --arg key "$1" '.[$key] | add / length' "$JSON"; }
median() { jq --arg key "$1" '.[$key] | sort | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end' "$JSON"; }
ENVCTL_MEAN="$(mean envctl)"
DOCKER_MEAN="$(mean docker)"
RATIO="$(jq -n --argjson a "$ENVCTL_MEAN" --argjson b "$DOCKER_MEAN" '$a / $b')"
FLOOR_MEAN="$(mean floor)"
FLOOR_RATIO="$(jq -n --argjson a "$FLOOR_MEAN" --argjson b "$DOCKER_MEAN" '$a / $b')"
MEDIAN_RATIO="$(jq -n --argjson a "$(median envctl)" --argjson b "$(median docker)" '$a / $b')"

echo
printf 'envctl up      mean %7.1f ms  median %7.1f ms  (%s runs)\n' "$(jq -n --argjson a "$ENVCTL_MEAN" '$a * 1000')" "$(jq -n --argjson a "$(median envctl)" '$a * 1000')" "$(jq '.envctl | length' "$JSON")"
printf 'docker run -d  mean %7.1f ms  median %7.1f ms  (%s runs)\n' "$(jq -n --argjson a "$DOCKER_MEAN" '$a * 1000')" "$(jq -n --argjson a "$(median docker)" '$a * 1000')" "$(jq '.docker | length' "$JSON")"
printf 'curl floor     mean %7.1f ms  median %7.1f ms  (%s runs)\n' "$(jq -n --argjson a "$FLOOR_MEAN" '$a * 1000')" "$(jq -n --argjson a "$(median floor)" '$a * 1000')" "$(jq '.floor | length' "$JSON")"
printf 'floor ratio    %.3f × the docker CLI (curl sending the two requests, nothing else)\n' "$FLOOR_RATIO"
printf 'ratio          %.3f × the docker CLI by mean, %.3f by median (goal ≤ %s, by mean)\n' "$RATIO" "$MEDIAN_RATIO" "$GOAL"

if jq -e -n --argjson r "$RATIO" --argjson g "$GOAL" '$r <= $g' >/dev/null; then
    echo "goal met"
else
    echo "goal NOT met"
    [ "$CHECK" = 1 ] && exit 1
fi
exit 0

#!/usr/bin/env bash
# `up --hosts` (issue 38, item 4): `envctl up P --hosts A,B,C` over three endpoints
# against `envctl -H A up P` on the host it chooses, each run a real create and start,
# the container removed before the next.
# Goal: --hosts over 3 servers ≤ 1.3× up -H on the chosen one.
#
#   sudo bash .ci/dockerd2.sh start && sudo tests/bench/up_hosts.sh
#   ENVCTL=target/release/envctl tests/bench/up_hosts.sh   # default: the debug build
#   RUNS=20 tests/bench/up_hosts.sh
#
# The three endpoints: this machine's daemon (the profile's image is only there, so it is
# chosen), the second daemon of .ci/dockerd2.sh over its socket and over plain TCP. Needs root,
# hyperfine, and the test image (`envctl-test/busybox:*`, made by the tests) or busybox.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-10}
command -v hyperfine >/dev/null || apt-get install -y -q hyperfine >/dev/null
bash .ci/dockerd2.sh status || {
    echo "error: the second daemon does not answer; start it: sudo bash .ci/dockerd2.sh start" >&2
    exit 1
}
ENVCTL=${ENVCTL:-$(realpath "${CARGO_TARGET_DIR:-target}")/debug/envctl}
[ -x "$ENVCTL" ] || cargo build -q
image=$(docker images --format '{{.Repository}}:{{.Tag}}' | grep '^envctl-test/busybox:' | head -1)
[ -n "$image" ] || {
    echo "error: no test image here; run \`cargo test --test it up::\` once to build it" >&2
    exit 1
}
work=$(mktemp -d)
name=bench-hosts-$$
cleanup() {
    docker rm -f "envctl-$name" >/dev/null 2>&1 || true
    docker rmi "envctl-bench/$name:1" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
docker tag "$image" "envctl-bench/$name:1"
mkdir -p "$work/envctl"
printf 'image = "envctl-bench/%s:1"\ngpus = "none"\nmemory = "64m"\ncommand = ["sleep", "600"]\n' \
    "$name" >"$work/envctl/$name.toml"
cd "$work"
export ENVCTL_POLICY="$work/none.toml"
unset DOCKER_HOST DOCKER_TLS_VERIFY DOCKER_CERT_PATH DOCKER_CONTEXT
hosts="unix:///var/run/docker.sock,unix:///run/envctl-ci/dockerd2.sock,tcp://127.0.0.1:23750"
remove="docker rm -f envctl-$name >/dev/null 2>&1 || true"
hyperfine --runs "$RUNS" --warmup 1 --export-json "$work/result.json" \
    --prepare "$remove" \
    -n "up -H (the chosen host)" "$ENVCTL -H unix:///var/run/docker.sock up $name" \
    -n "up --hosts (3 servers)" "$ENVCTL up $name --hosts $hosts"
python3 - "$work/result.json" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
alone, hosts = (result["mean"] for result in results)
print(f"up -H: {alone*1000:.0f} ms, up --hosts over 3: {hosts*1000:.0f} ms, ratio {hosts/alone:.2f}x (goal <= 1.3x)")
PY

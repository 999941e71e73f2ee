#!/usr/bin/env bash
# Remote daemons (issue 27): `envctl ps` and `envctl up` over TLS and over ssh against the
# docker CLI's `docker ps` and `docker run -d` (the line `up --dry-run` prints: the same
# container) on the same endpoint, and `envctl ps --hosts` over 8 endpoints against the
# slowest of them alone.
# Goals: ps and up over TLS and over ssh ≤ 1.0× the docker CLI; ps --hosts over 8
# endpoints ≤ 1.2× the slowest single one (asked at once, not one after another).
#
#   sudo bash .ci/dockerd2.sh start && sudo tests/bench/remote.sh
#   ENVCTL=target/debug/envctl tests/bench/remote.sh     # another binary (default: release)
#   RUNS=30 tests/bench/remote.sh
#
# Needs root, the second daemon of .ci/dockerd2.sh, Debian's sshd (openssh-server),
# hyperfine and jq. It starts its own sshd on a loopback port (keys and ssh_config in a
# temporary folder, an `ssh` wrapper first on PATH), makes 3 envctl containers on the
# second daemon, and removes all of it at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-20}
for tool in hyperfine jq; do
    command -v "$tool" >/dev/null || apt-get install -y -q "$tool" >/dev/null
done
# shellcheck source=tests/bench/lib/remote.sh
source tests/bench/lib/remote.sh
require_dockerd2
choose_envctl
work=$(mktemp -d)
cleanup() {
    [ -n "$sshd_pid" ] && kill "$sshd_pid" 2>/dev/null
    docker -H "$D2" ps -aq --filter label=com.example.bench=envctl-remote | xargs -r docker -H "$D2" rm -f >/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
start_sshd "$work"

# Contexts in a private DOCKER_CONFIG: two over TLS, one plain.
export DOCKER_CONFIG="$work/docker"
for name in tls-a tls-b; do
    docker context create "$name" --docker \
        "host=tcp://127.0.0.1:23760,ca=$CERTS/ca.pem,cert=$CERTS/cert.pem,key=$CERTS/key.pem" >/dev/null
done
docker context create plain --docker host=tcp://127.0.0.1:23750 >/dev/null

# Three envctl containers on the second daemon, so `ps` has something to list.
load_test_image
mkdir -p "$work/project/envctl"
cd "$work/project"
for n in 1 2 3; do
    printf 'image = "%s"\ncommand = ["sleep", "1000"]\nlabels = { "com.example.bench" = "envctl-remote" }\n' "$image" \
        >"envctl/bench-$n.toml"
    DOCKER_HOST=$D2 "$ENVCTL" -q up "bench-$n" --pull never >/dev/null
done

echo "== ps over TLS and ssh (envctl ps lists and inspects; docker ps lists), interleaved"
# The commands alternate run by run (hyperfine runs one after the other, and the load of a
# shared machine drifts between the blocks); medians and means of $RUNS runs each.
ENVCTL=$ENVCTL CERTS=$CERTS RUNS=$RUNS python3 - <<'PYTHON'
import os, statistics, subprocess, time
envctl, runs = os.environ["ENVCTL"], int(os.environ["RUNS"])
ways = {
    "TLS": dict(os.environ, DOCKER_HOST="tcp://127.0.0.1:23760", DOCKER_TLS_VERIFY="1",
                DOCKER_CERT_PATH=os.environ["CERTS"]),
    "ssh": dict(os.environ, DOCKER_HOST="ssh://gpu2"),
}
for way, env in ways.items():
    times = {"envctl": [], "docker": []}
    commands = [("envctl", [envctl, "ps"]), ("docker", ["docker", "ps"])]
    for run in range(runs + 2):
        for name, command in commands if run % 2 == 0 else commands[::-1]:
            start = time.perf_counter()
            subprocess.run(command, env=env, stdout=subprocess.DEVNULL, check=True)
            if run >= 2:  # two warm-up rounds
                times[name].append(time.perf_counter() - start)
    e, d = times["envctl"], times["docker"]
    print(f"{way}: envctl ps median {statistics.median(e) * 1000:.0f} ms (mean {statistics.mean(e) * 1000:.0f}),"
          f" docker ps median {statistics.median(d) * 1000:.0f} ms (mean {statistics.mean(d) * 1000:.0f});"
          f" ratio {statistics.median(e) / statistics.median(d):.2f}x (means {statistics.mean(e) / statistics.mean(d):.2f}x)")
PYTHON

echo "== up over TLS and ssh (envctl up against the docker run -d line its --dry-run prints), interleaved"
printf 'image = "%s"\ncommand = ["sleep", "1000"]\nlabels = { "com.example.bench" = "envctl-remote" }\n' "$image" \
    >"envctl/bench-up.toml"
docker_line=$(DOCKER_HOST=$D2 "$ENVCTL" up bench-up --dry-run)
case "$docker_line" in
"docker run -d "*) ;;
*) echo "error: unexpected dry-run line: $docker_line" >&2; exit 1 ;;
esac
# Each run makes a fresh container: the one before is removed (untimed) first.
ENVCTL=$ENVCTL CERTS=$CERTS RUNS=$RUNS DOCKER_LINE=$docker_line python3 - <<'PYTHON'
import os, shlex, statistics, subprocess, time
envctl, runs = os.environ["ENVCTL"], int(os.environ["RUNS"])
docker_run = shlex.split(os.environ["DOCKER_LINE"])
ways = {
    "TLS": dict(os.environ, DOCKER_HOST="tcp://127.0.0.1:23760", DOCKER_TLS_VERIFY="1",
                DOCKER_CERT_PATH=os.environ["CERTS"]),
    "ssh": dict(os.environ, DOCKER_HOST="ssh://gpu2"),
}
for way, env in ways.items():
    times = {"envctl": [], "docker": []}
    commands = [("envctl", [envctl, "-q", "up", "bench-up", "--pull", "never"]), ("docker", docker_run)]
    for run in range(runs + 1):
        for name, command in commands if run % 2 == 0 else commands[::-1]:
            subprocess.run(["docker", "rm", "-f", "envctl-bench-up"], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.3)  # the daemon's teardown of the one before, untimed
            start = time.perf_counter()
            subprocess.run(command, env=env, stdout=subprocess.DEVNULL, check=True)
            if run >= 1:  # one warm-up round
                times[name].append(time.perf_counter() - start)
    subprocess.run(["docker", "rm", "-f", "envctl-bench-up"], env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    e, d = times["envctl"], times["docker"]
    print(f"{way}: envctl up median {statistics.median(e) * 1000:.0f} ms (mean {statistics.mean(e) * 1000:.0f}),"
          f" docker run -d median {statistics.median(d) * 1000:.0f} ms (mean {statistics.mean(d) * 1000:.0f});"
          f" ratio {statistics.median(e) / statistics.median(d):.2f}x (means {statistics.mean(e) / statistics.mean(d):.2f}x)")
PYTHON

hosts=(unix:///var/run/docker.sock "$D2" tcp://127.0.0.1:23750 tls-a tls-b plain ssh://gpu2 ssh://gpu2b)
echo "== ps --hosts over ${#hosts[@]} endpoints against each alone"
commands=()
for host in "${hosts[@]}"; do
    commands+=(-n "$host" "$ENVCTL ps --hosts $host")
done
all=$(IFS=,; echo "${hosts[*]}")
# The floor the machine allows: the docker CLI on every endpoint at once, each its own
# process (a context by --context, a URL by -H).
cli_all=""
for host in "${hosts[@]}"; do
    case "$host" in
    *://*) cli_all+="docker -H $host ps >/dev/null & " ;;
    *) cli_all+="docker --context $host ps >/dev/null & " ;;
    esac
done
cli_all+="wait"
hyperfine -N --warmup 2 --runs "$RUNS" --export-json "$work/hosts.json" \
    "${commands[@]}" -n "all ${#hosts[@]}" "$ENVCTL ps --hosts $all" \
    -n "docker CLI on all ${#hosts[@]} at once" "bash -c '$cli_all'" >/dev/null
jq -r '.results[] | "\(.command): mean \(.mean * 1000 | floor) ms"' "$work/hosts.json"
jq -r '.results as $r | ($r[:-2] | max_by(.mean)) as $slowest
    | "envctl ps --hosts over all \($r | length - 2): \($r[-2].mean / $slowest.mean * 100 | floor / 100)× the slowest alone (\($slowest.command)); the docker CLI on all at once: \($r[-1].mean / $slowest.mean * 100 | floor / 100)×"' "$work/hosts.json"

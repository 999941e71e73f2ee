#!/usr/bin/env bash
# A server's facts from another machine (issue 38, item 1): the first `envctl doctor PROFILE`
# against the second daemon (another machine: its own UTS namespace, host name gpu2), which
# learns its GPUs with a probe container, and the next one, which reads the daemon's GPU
# record, each against `docker info` on the same endpoint (over TLS, and over ssh through
# an sshd of its own on a loopback port, as tests/bench/remote.sh starts it).
# Goals: with a probe ≤ 1.5× `docker info`; with the record ≤ 1.0×.
#
#   sudo bash .ci/dockerd2.sh start && sudo tests/bench/remote-facts.sh
#   ENVCTL=target/debug/envctl tests/bench/remote-facts.sh    # another binary (default: release)
#   RUNS=20 tests/bench/remote-facts.sh
#
# Needs root, the second daemon of .ci/dockerd2.sh, Debian's sshd and the test image
# (cargo test builds it). The record is removed before each probed run (untimed); the commands alternate run
# by run, medians and means of $RUNS runs each.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-10}
bash .ci/dockerd2.sh status || {
    echo "error: the second daemon does not answer; start it: sudo bash .ci/dockerd2.sh start" >&2
    exit 1
}
if [ -z "${ENVCTL:-}" ]; then
    cargo build --release -q
    ENVCTL=$(realpath "${CARGO_TARGET_DIR:-target}")/release/envctl
fi
CERTS=/run/envctl-ci/dockerd2-tls
D2=unix:///run/envctl-ci/dockerd2.sock
image=$(docker images --format '{{.Repository}}:{{.Tag}}' | grep '^envctl-test/busybox:' | head -1 || true)
if [ -z "$image" ]; then
    echo "error: no test image envctl-test/busybox:* (cargo test builds it)" >&2
    exit 1
fi
docker save "$image" | docker -H "$D2" load >/dev/null
work=$(mktemp -d)
sshd_pid=""
cleanup() {
    [ -n "$sshd_pid" ] && kill "$sshd_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

# sshd on a loopback port, the far side's docker pointed at the second daemon.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ssh-keygen -q -t ed25519 -N '' -f "$work/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$work/client_key"
cp "$work/client_key.pub" "$work/authorized_keys"
mkdir -p /run/sshd "$work/bin"
printf '%s\n' "Port $port" "ListenAddress 127.0.0.1" "HostKey $work/host_key" \
    "AuthorizedKeysFile $work/authorized_keys" "PasswordAuthentication no" "UsePAM no" \
    "StrictModes no" "PidFile none" "SetEnv DOCKER_HOST=$D2" >"$work/sshd_config"
printf '%s\n' "[127.0.0.1]:$port $(cat "$work/host_key.pub")" >"$work/known_hosts"
printf '%s\n' "Host gpu2 gpu2b" "  HostName 127.0.0.1" "  Port $port" "  User root" "Host *" \
    "  IdentityFile $work/client_key" "  IdentitiesOnly yes" "  UserKnownHostsFile $work/known_hosts" \
    "  StrictHostKeyChecking yes" "  BatchMode yes" "  LogLevel ERROR" >"$work/ssh_config"
printf '#!/bin/sh\nexec /usr/bin/ssh -F %s "$@"\n' "$work/ssh_config" >"$work/bin/ssh"
chmod 755 "$work/bin/ssh"
/usr/sbin/sshd -D -f "$work/sshd_config" &
sshd_pid=$!
export PATH="$work/bin:$PATH"
for _ in $(seq 50); do docker -H ssh://gpu2 version >/dev/null 2>&1 && break; sleep 0.1; done

mkdir -p "$work/envctl"
printf 'image = "%s"\ngpus = 1\ncommand = ["sleep", "1000"]\n' "$image" >"$work/envctl/bench-facts.toml"
cd "$work"
ENVCTL=$ENVCTL CERTS=$CERTS RUNS=$RUNS D2=$D2 python3 - <<'PYTHON'
import os, statistics, subprocess, time
envctl, runs, d2 = os.environ["ENVCTL"], int(os.environ["RUNS"]), os.environ["D2"]
no_nvml = "/nonexistent/libnvidia-ml.so.1"
ways = {
    "TLS": dict(os.environ, DOCKER_HOST="tcp://127.0.0.1:23760", DOCKER_TLS_VERIFY="1",
                DOCKER_CERT_PATH=os.environ["CERTS"], ENVCTL_NVML_LIBRARY=no_nvml),
    "ssh": dict(os.environ, DOCKER_HOST="ssh://gpu2", ENVCTL_NVML_LIBRARY=no_nvml),
}
forget = ["docker", "-H", d2, "volume", "rm", "-f", "envctl-gpus"]
def timed(command, env):
    start = time.perf_counter()
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start
for (way, env), (what, before) in [(w, b) for w in ways.items() for b in (("with a probe", forget), ("with the record", None))]:
    times = {"envctl": [], "docker": []}
    commands = [("envctl", [envctl, "doctor", "bench-facts"]), ("docker", ["docker", "info"])]
    if before is None:
        subprocess.run([envctl, "doctor", "bench-facts"], env=env, stdout=subprocess.DEVNULL)
    for run in range(runs + 1):
        for name, command in commands if run % 2 == 0 else commands[::-1]:
            if before is not None and name == "envctl":
                subprocess.run(before, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            took = timed(command, env)
            if run >= 1:  # one warm-up round
                times[name].append(took)
    e, d = times["envctl"], times["docker"]
    print(f"{way}: doctor {what}: envctl median {statistics.median(e) * 1000:.0f} ms (mean {statistics.mean(e) * 1000:.0f}),"
          f" docker info median {statistics.median(d) * 1000:.0f} ms (mean {statistics.mean(d) * 1000:.0f});"
          f" ratio {statistics.median(e) / statistics.median(d):.2f}x")
PYTHON

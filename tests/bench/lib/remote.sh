# shellcheck shell=bash
# The variables set here are read by the scripts that source it:
# shellcheck disable=SC2034
# The set-up the remote-daemon benchmarks share (tests/bench/remote.sh and
# tests/bench/remote-facts.sh): sourced from the repository root, never run on its own.
# It defines the second daemon's endpoints and the functions below; each script keeps its
# own cleanup trap, which stops the sshd of `start_sshd` by `$sshd_pid`.

# The second daemon of .ci/dockerd2.sh: its TLS certificates and its socket.
CERTS=/run/envctl-ci/dockerd2-tls
D2=unix:///run/envctl-ci/dockerd2.sock
# Set by start_sshd; empty until then, so a cleanup before it has nothing to stop.
sshd_pid=""

# Exits unless the second daemon answers.
require_dockerd2() {
    bash .ci/dockerd2.sh status || {
        echo "error: the second daemon does not answer; start it: sudo bash .ci/dockerd2.sh start" >&2
        exit 1
    }
}

# ENVCTL: the binary the caller named, else a release build made now.
choose_envctl() {
    if [ -z "${ENVCTL:-}" ]; then
        cargo build --release -q
        ENVCTL=$(realpath "${CARGO_TARGET_DIR:-target}")/release/envctl
    fi
}

# image: the test image (cargo test builds it), loaded into the second daemon; exits
# without it.
load_test_image() {
    image=$(docker images --format '{{.Repository}}:{{.Tag}}' | grep '^envctl-test/busybox:' | head -1 || true)
    if [ -z "$image" ]; then
        echo "error: no test image envctl-test/busybox:* (cargo test builds it)" >&2
        exit 1
    fi
    docker save "$image" | docker -H "$D2" load >/dev/null
}

# sshd on a loopback port, the far side's docker pointed at the second daemon: keys and
# configs in the folder $1, hosts gpu2 and gpu2b for it in an ssh_config that an `ssh`
# wrapper first on PATH uses. Sets sshd_pid; returns once `docker -H ssh://gpu2` answers
# (or after 5 s, leaving the failure to the first real command).
start_sshd() {
    local work=$1 port
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
}

#!/usr/bin/env bash
# A second Docker daemon for the tests of remote daemons (tests/it/daemon_choice.rs,
# remote_daemons.rs) and of clusters: the "other server" a context, `DOCKER_HOST=tcp://…`
# or `ssh://…` points to, on this machine.
#
#   bash .ci/dockerd2.sh start     # as root: start it (nothing happens if it already runs)
#   bash .ci/dockerd2.sh stop      # stop what start started, remove its netns and folders
#   bash .ci/dockerd2.sh status    # exit 0 when all three endpoints answer
#   . .ci/dockerd2.sh              # defines dockerd2_start, dockerd2_stop, dockerd2_status
#
# What it gives (fixed paths: the tests and other scripts rely on them):
#   unix:///run/envctl-ci/dockerd2.sock   the daemon's own socket
#   tcp://127.0.0.1:23760                 the same daemon over TLS (--tlsverify): client
#                                         files /run/envctl-ci/dockerd2-tls/{ca,cert,key}.pem
#                                         (DOCKER_CERT_PATH), the server's beside them
#   tcp://127.0.0.1:23750                 the same daemon in plain HTTP (socat to the socket)
#
# - The daemon runs in a network namespace of its own (`envctl-dockerd2`): started in the
#   host's namespace with `--bridge none`, dockerd deletes the host's docker0 and the main
#   daemon can then start no container. It is entered with `nsenter --net=`, not
#   `ip netns exec` (which remounts /sys, and dockerd then finds no devices cgroup).
# - Its own data root (vfs: no overlay in overlay), exec root, pidfile, and a `--config-file`
#   of `{}` (the machine's /etc/docker/daemon.json sets a data root and a storage driver
#   that would conflict with the flags). Containers on it have no network but `none` and
#   the loopback, and publish no port.
# - The TLS port listens inside the namespace (127.0.0.1:2376); a socat in the namespace
#   bridges it to a unix socket, and a socat on the host serves that socket on
#   127.0.0.1:23760, so the host reaches the daemon's own TLS.
# - A stand-in `nvidia-container-runtime-hook` (reads its stdin, exits 0) first on the
#   daemon's PATH makes dockerd register its `nvidia` device driver: `--gpus 2` and
#   `--gpus device=2,3` start, and the container gets `NVIDIA_VISIBLE_DEVICES=2,3` (no GPU
#   is touched; `/info` lists no `nvidia` runtime for it).
# - `start` installs socat and openssl when missing (apt-get).

DOCKERD2_NETNS=envctl-dockerd2
DOCKERD2_RUN=/run/envctl-ci
DOCKERD2_SOCKET=$DOCKERD2_RUN/dockerd2.sock
DOCKERD2_STATE=$DOCKERD2_RUN/dockerd2
DOCKERD2_TLS=$DOCKERD2_RUN/dockerd2-tls
DOCKERD2_EXEC_ROOT=$DOCKERD2_RUN/dockerd2-exec
DOCKERD2_DATA_ROOT=/var/lib/envctl-ci/dockerd2
DOCKERD2_TLS_PORT=23760
DOCKERD2_PLAIN_PORT=23750
# Where dockerd listens for TLS inside its namespace.
DOCKERD2_INNER_TLS=127.0.0.1:2376

dockerd2_answers_unix() {
    [ -S "$DOCKERD2_SOCKET" ] &&
        timeout 10 docker -H "unix://$DOCKERD2_SOCKET" version --format '{{.Server.Version}}' >/dev/null 2>&1
}

dockerd2_answers_tls() {
    [ -f "$DOCKERD2_TLS/ca.pem" ] &&
        DOCKER_CERT_PATH=$DOCKERD2_TLS DOCKER_TLS_VERIFY=1 timeout 10 \
            docker -H "tcp://127.0.0.1:$DOCKERD2_TLS_PORT" version --format '{{.Server.Version}}' >/dev/null 2>&1
}

dockerd2_answers_plain() {
    env -u DOCKER_TLS_VERIFY -u DOCKER_CERT_PATH timeout 10 \
        docker -H "tcp://127.0.0.1:$DOCKERD2_PLAIN_PORT" version --format '{{.Server.Version}}' >/dev/null 2>&1
}

dockerd2_status() {
    dockerd2_answers_unix && dockerd2_answers_tls && dockerd2_answers_plain
}

# The pid in FILE, when that process is alive (a zombie its parent has not reaped yet is
# not: this machine's init may reap late).
dockerd2_alive() { # FILE
    local pid state
    [ -f "$1" ] && pid=$(cat "$1") && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
    state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
    [ "$state" != Z ]
}

dockerd2_install() {
    local missing=() tool
    for tool in socat openssl; do
        command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "dockerd2: installing ${missing[*]}"
        apt-get update -q
        apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
}

# A CA, a server certificate for 127.0.0.1 and localhost, and a client certificate.
dockerd2_certificates() {
    local t=$DOCKERD2_TLS
    if [ -f "$t/ca.pem" ] && [ -f "$t/cert.pem" ] && [ -f "$t/key.pem" ] &&
        [ -f "$t/server-cert.pem" ] && [ -f "$t/server-key.pem" ]; then
        return 0
    fi
    rm -rf "$t" && mkdir -p "$t" && chmod 755 "$t"
    (
        set -e
        cd "$t"
        openssl req -x509 -newkey rsa:2048 -nodes -keyout ca-key.pem -out ca.pem -days 30 -sha256 \
            -subj /CN=envctl-ci-dockerd2-ca -addext basicConstraints=critical,CA:TRUE \
            -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -keyout server-key.pem -out server.csr \
            -subj /CN=localhost 2>/dev/null
        printf '%s\n' 'subjectAltName=IP:127.0.0.1,DNS:localhost' 'extendedKeyUsage=serverAuth' \
            'basicConstraints=CA:FALSE' >server.ext
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 30 \
            -sha256 -extfile server.ext -out server-cert.pem 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -keyout key.pem -out client.csr \
            -subj /CN=envctl-ci-client 2>/dev/null
        printf '%s\n' 'extendedKeyUsage=clientAuth' 'basicConstraints=CA:FALSE' >client.ext
        openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 30 \
            -sha256 -extfile client.ext -out cert.pem 2>/dev/null
        rm -f server.csr client.csr server.ext client.ext ca.srl
        # The tests run as root; readable by all so a test may also try as another user.
        chmod 644 ./*.pem
    )
}

dockerd2_start_daemon() {
    local state=$DOCKERD2_STATE log pid
    if dockerd2_answers_unix; then
        echo "dockerd2: the daemon already answers on $DOCKERD2_SOCKET"
        return 0
    fi
    mkdir -p "$state/bin" "$DOCKERD2_DATA_ROOT" "$DOCKERD2_EXEC_ROOT"
    echo '{}' >"$state/daemon.json"
    printf '%s\n' '#!/bin/sh' '# A stand-in for NVIDIA'"'"'s hook (.ci/dockerd2.sh): reads the state, does nothing.' \
        'cat >/dev/null' 'exit 0' >"$state/bin/nvidia-container-runtime-hook"
    chmod 755 "$state/bin/nvidia-container-runtime-hook"
    if ! ip netns list | awk '{print $1}' | grep -qx "$DOCKERD2_NETNS"; then
        ip netns add "$DOCKERD2_NETNS"
    fi
    ip netns exec "$DOCKERD2_NETNS" ip link set lo up
    rm -f "$DOCKERD2_SOCKET"
    log=$state/dockerd.log
    echo "dockerd2: starting dockerd in netns $DOCKERD2_NETNS (log: $log)"
    PATH="$state/bin:$PATH" setsid nsenter "--net=/run/netns/$DOCKERD2_NETNS" dockerd \
        --config-file "$state/daemon.json" \
        --data-root "$DOCKERD2_DATA_ROOT" --exec-root "$DOCKERD2_EXEC_ROOT" \
        --pidfile "$state/dockerd.pid" --storage-driver vfs \
        --bridge none --iptables=false --ip6tables=false --ip-masq=false \
        -H "unix://$DOCKERD2_SOCKET" -H "tcp://$DOCKERD2_INNER_TLS" \
        --tlsverify --tlscacert "$DOCKERD2_TLS/ca.pem" \
        --tlscert "$DOCKERD2_TLS/server-cert.pem" --tlskey "$DOCKERD2_TLS/server-key.pem" \
        >"$log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$state/launcher.pid"
    for _ in $(seq 120); do
        dockerd2_answers_unix && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
    done
    if ! dockerd2_answers_unix; then
        echo "error: dockerd2 did not answer on $DOCKERD2_SOCKET; last lines of $log:" >&2
        tail -n 40 "$log" >&2
        return 1
    fi
}

# socat ARGS… in the background, its pid in FILE (nothing when that one is alive).
dockerd2_forwarder() { # FILE ARGS…
    local file=$1
    shift
    dockerd2_alive "$file" && return 0
    setsid "$@" >>"$DOCKERD2_STATE/forwarders.log" 2>&1 </dev/null &
    echo $! >"$file"
}

dockerd2_start_forwarders() {
    local state=$DOCKERD2_STATE
    # Inside the namespace: its TLS port served on a unix socket (reachable from anywhere).
    dockerd2_alive "$state/inner.pid" || rm -f "$state/tls.sock"
    # nodelay on every TCP side: without it Nagle's algorithm and the peer's delayed ACK
    # stall a request written in two parts by 40 ms, which no real endpoint does.
    dockerd2_forwarder "$state/inner.pid" nsenter "--net=/run/netns/$DOCKERD2_NETNS" \
        socat "UNIX-LISTEN:$state/tls.sock,fork,mode=600" "TCP:$DOCKERD2_INNER_TLS,nodelay"
    dockerd2_forwarder "$state/tls.pid" socat \
        "TCP-LISTEN:$DOCKERD2_TLS_PORT,bind=127.0.0.1,reuseaddr,fork,nodelay" "UNIX-CONNECT:$state/tls.sock"
    dockerd2_forwarder "$state/plain.pid" socat \
        "TCP-LISTEN:$DOCKERD2_PLAIN_PORT,bind=127.0.0.1,reuseaddr,fork,nodelay" "UNIX-CONNECT:$DOCKERD2_SOCKET"
    local _
    for _ in $(seq 40); do
        dockerd2_answers_tls && dockerd2_answers_plain && return 0
        sleep 0.25
    done
    echo "error: dockerd2's TCP endpoints do not answer (tls $DOCKERD2_TLS_PORT, plain $DOCKERD2_PLAIN_PORT); $state/forwarders.log:" >&2
    tail -n 20 "$state/forwarders.log" >&2
    return 1
}

dockerd2_start() {
    dockerd2_install || return 1
    mkdir -p "$DOCKERD2_RUN" "$DOCKERD2_STATE"
    dockerd2_certificates || return 1
    dockerd2_start_daemon || return 1
    dockerd2_start_forwarders || return 1
    echo "dockerd2: Docker $(docker -H "unix://$DOCKERD2_SOCKET" version --format '{{.Server.Version}}')" \
        "on unix://$DOCKERD2_SOCKET, tcp://127.0.0.1:$DOCKERD2_TLS_PORT (TLS, DOCKER_CERT_PATH=$DOCKERD2_TLS)," \
        "tcp://127.0.0.1:$DOCKERD2_PLAIN_PORT (plain)"
}

# Kills the process in FILE (TERM, then KILL after `seconds`), and forgets it.
dockerd2_kill() { # FILE SECONDS
    local pid
    if dockerd2_alive "$1"; then
        pid=$(cat "$1")
        kill "$pid" 2>/dev/null
        for _ in $(seq $(($2 * 4))); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.25
        done
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
    fi
    rm -f "$1"
}

dockerd2_stop() {
    local state=$DOCKERD2_STATE
    dockerd2_kill "$state/tls.pid" 5
    dockerd2_kill "$state/plain.pid" 5
    dockerd2_kill "$state/inner.pid" 5
    if dockerd2_alive "$state/dockerd.pid"; then
        echo "dockerd2: stopping dockerd (pid $(cat "$state/dockerd.pid"))"
    fi
    # dockerd stops its containers and its containerd on TERM.
    dockerd2_kill "$state/dockerd.pid" 30
    dockerd2_kill "$state/launcher.pid" 5
    # What a killed daemon may have left mounted (shm, netns files, the exec root).
    awk '{print $2}' /proc/mounts | grep -E "^($DOCKERD2_DATA_ROOT|$DOCKERD2_EXEC_ROOT)(/|$)" |
        sort -r | while read -r mount; do
        umount -l "$mount" 2>/dev/null
    done
    if ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$DOCKERD2_NETNS"; then
        ip netns delete "$DOCKERD2_NETNS"
    fi
    rm -rf "$DOCKERD2_DATA_ROOT" "$DOCKERD2_EXEC_ROOT" "$DOCKERD2_STATE" "$DOCKERD2_TLS"
    rm -f "$DOCKERD2_SOCKET"
    echo "dockerd2: stopped; netns, folders and certificates removed"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -uo pipefail
    case "${1:-}" in
    start) dockerd2_start ;;
    stop) dockerd2_stop ;;
    status) dockerd2_status ;;
    *)
        echo "usage: bash .ci/dockerd2.sh start|stop|status" >&2
        exit 2
        ;;
    esac
fi

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
# - The daemon also has a UTS namespace of its own with the host name `gpu2`
#   (`unshare --uts`): its `/info` Name differs from the client's, as another machine's does.
# - A stand-in `nvidia-container-runtime-hook` first on the daemon's PATH makes dockerd
#   register its `nvidia` device driver: `--gpus 2` and `--gpus device=2,3` start, and the
#   container gets `NVIDIA_VISIBLE_DEVICES=2,3` (no GPU is touched; `/info` lists no
#   `nvidia` runtime for it). Like NVIDIA's hook, it gives the container an `nvidia-smi`:
#   it reads the OCI state on its stdin (bundle → config.json → root.path) and copies a
#   `#!/bin/sh` stand-in to /usr/bin/nvidia-smi and the daemon's fixture to
#   /usr/share/envctl-nvidia-fixture in the container's root. That `nvidia-smi` answers
#   `--query-gpu=…` and `--query-compute-apps=…` (`--format=csv,noheader,nounits`, the
#   fields of the fixture's header rows, only the GPUs of NVIDIA_VISIBLE_DEVICES) and `-q`
#   (driver and CUDA versions) from the fixture, so the probe of a daemon's GPUs
#   (crates/envctl-engine/src/probe.rs) gets real answers through the real path.
# - The fixture (a folder, `$DOCKERD2_STATE/nvidia-fixture` here; tests/it/support/server.rs
#   gives each of its daemons one of its own):
#     gpus.csv   header `index,uuid,name,compute_cap,memory.total,memory.used,driver_version`
#                (MiB), one row per GPU; `[N/A]` where a real GPU says it
#     apps.csv   header `gpu_uuid,pid,used_memory,process_name`, one row per compute process
#                (host pids: the probe maps them to containers through /proc/PID/cgroup)
#     cuda       the CUDA version the driver supports (`12.4`)
#   dockerd2's: four `NVIDIA A100-SXM4-80GB` (GPU-00000000-0000-0000-0000-00000000000N),
#   driver 550.54.15, CUDA 12.4, no process. A fixture read at each container's start: a
#   test may rewrite it between two probes.
# - `dockerd2_nvidia_standin BIN FIXTURE` writes the hook and the stand-in into BIN for the
#   fixture folder FIXTURE, `dockerd2_default_fixture FIXTURE` writes dockerd2's fixture
#   (the test support sources this file for both).
# - `start` installs socat and openssl when missing (apt-get).

DOCKERD2_NETNS=envctl-dockerd2
DOCKERD2_HOSTNAME=gpu2
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
# Where the hook puts the stand-in and the fixture in a container's root.
DOCKERD2_FIXTURE_IN_CONTAINER=/usr/share/envctl-nvidia-fixture

# The stand-in NVIDIA hook and nvidia-smi in BIN, answering from the folder FIXTURE.
dockerd2_nvidia_standin() { # BIN FIXTURE
    local bin=$1 fixture=$2
    mkdir -p "$bin"
    cat >"$bin/nvidia-smi-standin" <<'STANDIN'
#!/bin/sh
# A stand-in nvidia-smi (.ci/dockerd2.sh): answers from the fixture beside it, for the GPUs
# of NVIDIA_VISIBLE_DEVICES. Fields as nvidia-smi names them; an unknown one fails as
# nvidia-smi fails.
fixture=/usr/share/envctl-nvidia-fixture
visible=${NVIDIA_VISIBLE_DEVICES:-all}
query() { # FILE FIELDS
    awk -F', *' -v want="$2" -v visible="$visible" '
        BEGIN { n = split(want, w, ","); v = split(visible, shown, ",") }
        FNR == 1 { for (i = 1; i <= NF; i++) col[FILENAME, $i] = i }
        FNR == 1 && NR != 1 {
            for (j = 1; j <= n; j++) if (!((FILENAME, w[j]) in col)) {
                printf "Field \"%s\" is not a valid field to query.\n\n", w[j] > "/dev/stderr"; failed = 1; exit 2
            }
        }
        FNR == 1 { next }
        NR == FNR {
            index_ = $col[FILENAME, "index"]; uuid = $col[FILENAME, "uuid"]
            ok = (visible == "all")
            for (k = 1; k <= v; k++) if (shown[k] == index_ || shown[k] == uuid) ok = 1
            if (ok) seen[uuid] = 1
            next
        }
        {
            if (!seen[$col[FILENAME, gpus ? "uuid" : "gpu_uuid"]]) next
            line = ""
            for (j = 1; j <= n; j++) line = line (j > 1 ? ", " : "") $col[FILENAME, w[j]]
            print line
        }
        END { if (failed) exit 2 }
    ' gpus="$3" "$fixture/gpus.csv" "$1"
}
format_ok() {
    [ "$1" = "--format=csv,noheader,nounits" ] || { echo "stand-in nvidia-smi: only --format=csv,noheader,nounits" >&2; exit 2; }
}
case "$1" in
--query-gpu=*)
    format_ok "$2"
    query "$fixture/gpus.csv" "${1#--query-gpu=}" 1 ;;
--query-compute-apps=*)
    format_ok "$2"
    query "$fixture/apps.csv" "${1#--query-compute-apps=}" "" ;;
-q | "")
    echo "==============NVSMI LOG=============="
    echo
    echo "Driver Version                            : $(awk -F', *' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "driver_version") c = i } NR == 2 { print $c }' "$fixture/gpus.csv")"
    echo "CUDA Version                              : $(cat "$fixture/cuda")" ;;
*)
    echo "stand-in nvidia-smi: $1 is not answered" >&2
    exit 2 ;;
esac
STANDIN
    {
        printf '#!/bin/sh\n'
        printf "bin='%s' fixture='%s' inside='%s'\n" "$bin" "$fixture" "$DOCKERD2_FIXTURE_IN_CONTAINER"
        cat <<'HOOK'
# A stand-in for NVIDIA's hook (.ci/dockerd2.sh): reads the OCI state on stdin and gives
# the container the stand-in nvidia-smi and the fixture, as NVIDIA's hook gives it the
# driver's tools.
state=$(cat)
bundle=$(printf '%s' "$state" | sed -n 's/.*"bundle": *"\([^"]*\)".*/\1/p')
[ -n "$bundle" ] && [ -f "$bundle/config.json" ] || exit 0
root=$(sed -n 's/.*"root": *{ *"path": *"\([^"]*\)".*/\1/p' "$bundle/config.json")
case "$root" in
/*) ;;
*) root=$bundle/$root ;;
esac
[ -d "$root" ] || exit 0
mkdir -p "$root/usr/bin" "$root$inside"
cp "$bin/nvidia-smi-standin" "$root/usr/bin/nvidia-smi"
chmod 755 "$root/usr/bin/nvidia-smi"
cp "$fixture/gpus.csv" "$fixture/apps.csv" "$fixture/cuda" "$root$inside/"
exit 0
HOOK
    } >"$bin/nvidia-container-runtime-hook"
    chmod 755 "$bin/nvidia-container-runtime-hook" "$bin/nvidia-smi-standin"
}

# dockerd2's fixture: four A100s, driver 550.54.15, CUDA 12.4, no process.
dockerd2_default_fixture() { # FIXTURE
    local fixture=$1 n
    mkdir -p "$fixture"
    {
        echo 'index,uuid,name,compute_cap,memory.total,memory.used,driver_version'
        for n in 0 1 2 3; do
            echo "$n,GPU-00000000-0000-0000-0000-00000000000$n,NVIDIA A100-SXM4-80GB,8.0,81920,0,550.54.15"
        done
    } >"$fixture/gpus.csv"
    echo 'gpu_uuid,pid,used_memory,process_name' >"$fixture/apps.csv"
    echo '12.4' >"$fixture/cuda"
}

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
    [ -f "$state/nvidia-fixture/gpus.csv" ] || dockerd2_default_fixture "$state/nvidia-fixture"
    dockerd2_nvidia_standin "$state/bin" "$state/nvidia-fixture"
    if ! ip netns list | awk '{print $1}' | grep -qx "$DOCKERD2_NETNS"; then
        ip netns add "$DOCKERD2_NETNS"
    fi
    ip netns exec "$DOCKERD2_NETNS" ip link set lo up
    rm -f "$DOCKERD2_SOCKET"
    log=$state/dockerd.log
    echo "dockerd2: starting dockerd in netns $DOCKERD2_NETNS (log: $log)"
    # Its own UTS namespace and host name: `/info` names another machine.
    PATH="$state/bin:$PATH" setsid nsenter "--net=/run/netns/$DOCKERD2_NETNS" \
        unshare --uts sh -c 'hostname "$0" && exec "$@"' "$DOCKERD2_HOSTNAME" dockerd \
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

#!/usr/bin/env bash
# Podman for envctl's engine tests (tests/it/engines.rs): two rootful `podman system
# service`s on private sockets, next to the Docker daemon that .ci/run starts.
#
#   . .ci/podman.sh            # from .ci/run (as root): install, start, export
#   podman_ci_stop             # from .ci/run's cleanup: sweep envctl.test=1, stop what we started
#   bash .ci/podman.sh         # by hand: install and start, print the exports, leave them running
#
# - Podman 4.3 (Debian 12's package, with catatonit for `--init` and uidmap): its compat API
#   drops `HostConfig.DeviceRequests` and cannot take CDI devices; the tests prove envctl
#   says so instead of printing "started".
# - Podman 5.4.2 (the first whose compat API honours `DeviceRequests` with `Driver: "cdi"`),
#   from Debian trixie's package with trixie's libc beside it in /opt/envctl-ci/podman5,
#   never installed system-wide: the binaries are patched (patchelf) to load their own
#   interpreter and libraries. The tests write their CDI spec into /var/run/cdi (below).
# - Each service has its own storage, run folder, network (own bridge and subnet, so the two
#   never hand out the same address on one `podman0`), and a registries.conf marking the
#   loopback test registry (tests/it/support/registry.rs) insecure.
# - A socket that already answers is reused (and then not stopped at the end).
#
# Exports ENVCTL_TEST_PODMAN ("name=unix:///socket …") and ENVCTL_TEST_CDI_DIR.
# Rootless Podman is not set up: it needs /dev/net/tun, which this sandbox lacks.

PODMAN_CI_DIR=${PODMAN_CI_DIR:-/opt/envctl-ci}
PODMAN_CI_RUN=${PODMAN_CI_RUN:-/run/envctl-ci}
PODMAN_CI_STATE=${PODMAN_CI_STATE:-/var/lib/envctl-ci/engines}
PODMAN5_DIR="$PODMAN_CI_DIR/podman5"
# Podman 5.4.2 is what the tests are written against (CDI through the compat API); the
# libraries beside it are whatever trixie serves now: deb.debian.org keeps only the
# current version of a suite, so pinning libc6's point release would break CI at every
# trixie point release, and they do not change what is tested. All versions are printed.
PODMAN5_UPSTREAM="5.4.2"
PODMAN5_PACKAGES="podman libc6 libsubid5 libgpgme11t64 libassuan9 libgpg-error0 libsqlite3-0
    libseccomp2 netavark libaudit1 libcap-ng0 libsemanage2 libselinux1 libbsd0 libmd0
    libsystemd0 libcap2"
PODMAN_CI_STARTED_PIDS=()

podman_ci_answers() { # SOCKET
    timeout 10 docker -H "unix://$1" version --format '{{.Server.Version}}' 2>/dev/null
}

podman_ci_install() {
    local missing=() pkg
    # netavark: podman4 is configured for it (below); Debian only recommends it, and
    # --no-install-recommends leaves a fresh machine without it.
    for pkg in podman catatonit uidmap patchelf netavark; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' ||
            missing+=("$pkg")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "installing: ${missing[*]}"
        apt-get update -q
        apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
    local v4
    v4=$(podman --version | awk '{print $3}')
    case "$v4" in
    4.3.*) echo "Podman $v4 (Debian 12)" ;;
    *)
        echo "error: the tests expect Podman 4.3 from Debian 12, found $v4" >&2
        return 1
        ;;
    esac
    podman_ci_install5
}

podman_ci_install5() {
    local p=$PODMAN5_DIR
    if [ -x "$p/bin/podman" ] && "$p/bin/podman" --version 2>/dev/null | grep -qx "podman version $PODMAN5_UPSTREAM"; then
        echo "Podman $PODMAN5_UPSTREAM already in $p"
        return 0
    fi
    echo "preparing Podman $PODMAN5_UPSTREAM from Debian trixie in $p"
    local work
    work=$(mktemp -d /tmp/envctl-ci-trixie.XXXXXX)
    chmod 755 "$work" # apt downloads as _apt
    mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs"
    echo 'deb http://deb.debian.org/debian trixie main' >"$work/sources.list"
    local apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache")
    apt-get "${apt_opts[@]}" update -q
    # shellcheck disable=SC2086
    (cd "$work/debs" && apt-get "${apt_opts[@]}" download $PODMAN5_PACKAGES)
    local deb package version
    for deb in "$work"/debs/*.deb; do
        package=$(dpkg-deb -f "$deb" Package)
        version=$(dpkg-deb -f "$deb" Version)
        echo "  $package $version"
        if [ "$package" = podman ] && [ "${version%%+*}" != "$PODMAN5_UPSTREAM" ]; then
            echo "error: trixie serves podman $version, the tests expect $PODMAN5_UPSTREAM" >&2
            echo "hint: check tests/it/engines.rs on it, then update PODMAN5_UPSTREAM in .ci/podman.sh" >&2
            rm -rf "$work"
            return 1
        fi
        dpkg-deb -x "$deb" "$work/root"
    done
    rm -rf "$p.new"
    mkdir -p "$p.new/bin" "$p.new/lib" "$p.new/etc"
    cp -a "$work/root/usr/lib/x86_64-linux-gnu/." "$p.new/lib/"
    cp "$work/root/usr/bin/podman" "$work/root/usr/lib/podman/netavark" "$p.new/bin/"
    local binary
    for binary in podman netavark; do
        # Load trixie's libc from beside it, found by the final path ($p), not $p.new.
        patchelf --set-interpreter "$p/lib/ld-linux-x86-64.so.2" --force-rpath \
            --set-rpath "$p/lib" "$p.new/bin/$binary"
    done
    rm -rf "$p" && mv "$p.new" "$p"
    rm -rf "$work"
    "$p/bin/podman" --version
}

# containers.conf, registries.conf and the network of one service.
podman_ci_configure() { # NAME HELPERS
    local name=$1 helpers=$2 etc="$PODMAN_CI_DIR/etc/$1" octet
    case "$name" in podman4) octet=4 ;; podman5) octet=5 ;; esac
    mkdir -p "$etc/networks"
    {
        echo "# written by .ci/podman.sh"
        echo "[engine]"
        echo "helper_binaries_dir = [$helpers]"
        echo 'runtime = "runc"'
        echo "[network]"
        echo 'network_backend = "netavark"'
        echo "network_config_dir = \"$etc/networks\""
        echo "default_network = \"envctl-ci-$octet\""
        echo "default_subnet = \"10.89.$octet.0/24\""
    } >"$etc/containers.conf"
    # A network file of our own: its own bridge, so the two services (and any other Podman
    # on the host, which uses podman0 and 10.88.0.0/16) never share one address pool.
    printf '%s\n' "{" \
        "  \"name\": \"envctl-ci-$octet\"," \
        "  \"id\": \"$(printf 'envctl-ci-%s' "$octet" | sha256sum | cut -c1-64)\"," \
        '  "driver": "bridge",' \
        "  \"network_interface\": \"envctlci$octet\"," \
        '  "created": "2026-01-01T00:00:00Z",' \
        "  \"subnets\": [{\"subnet\": \"10.89.$octet.0/24\", \"gateway\": \"10.89.$octet.1\"}]," \
        '  "ipv6_enabled": false,' '  "internal": false,' '  "dns_enabled": false,' \
        '  "ipam_options": {"driver": "host-local"}' "}" >"$etc/networks/envctl-ci-$octet.json"
    # The test registry listens on 127.0.0.1:<random port>, plain HTTP. containers/image
    # matches a location "127.0.0.1" against "127.0.0.1:PORT/repo" (a prefix followed by
    # ':' counts, sysregistriesv2 refMatchingPrefix; its comment calls that unintended but
    # it is how 4.3 and 5.4 behave): the lock test fails loudly if a version stops doing so.
    printf '%s\n' "# written by .ci/podman.sh" 'unqualified-search-registries = []' \
        '[[registry]]' 'location = "127.0.0.1"' 'insecure = true' \
        '[[registry]]' 'location = "localhost"' 'insecure = true' >"$etc/registries.conf"
}

podman_ci_start_one() { # NAME BINARY HELPERS
    local name=$1 binary=$2 socket="$PODMAN_CI_RUN/$1.sock" etc="$PODMAN_CI_DIR/etc/$1"
    local version="" log pid
    if version=$(podman_ci_answers "$socket"); then
        # Its configuration is the one it started with: not rewritten under it.
        echo "$name: reusing the service that answers on $socket (Podman $version)"
        return 0
    fi
    podman_ci_configure "$name" "$3"
    rm -f "$socket"
    log=$(mktemp "/tmp/envctl-ci-$name.XXXXXX.log")
    echo "$name: starting $binary system service on $socket (log: $log)"
    CONTAINERS_CONF="$etc/containers.conf" CONTAINERS_REGISTRIES_CONF="$etc/registries.conf" \
        REGISTRIES_CONFIG_PATH="$etc/registries.conf" \
        setsid "$binary" --root "$PODMAN_CI_STATE/$name" --runroot "$PODMAN_CI_RUN/$name" \
        system service --time=0 "unix://$socket" >"$log" 2>&1 </dev/null &
    pid=$!
    PODMAN_CI_STARTED_PIDS+=("$pid")
    for _ in $(seq 60); do
        version=$(podman_ci_answers "$socket") && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 1
    done
    if [ -z "$version" ]; then
        echo "error: $name did not answer on $socket; last lines of $log:" >&2
        tail -n 40 "$log" >&2
        return 1
    fi
    echo "$name: Podman $version answers"
}

podman_ci_start() {
    mkdir -p "$PODMAN_CI_RUN" "$PODMAN_CI_STATE"
    # CDI's own folder for specs made at run time, which Podman reads: 5.4.2 ignores
    # containers.conf's `cdi_spec_dirs` (VERIFIED: a spec in a folder listed there is
    # "unresolvable CDI devices"; the same file in /etc/cdi or /var/run/cdi resolves).
    # A spec there takes precedence over /etc/cdi's for the same device name.
    export ENVCTL_TEST_CDI_DIR=/var/run/cdi
    mkdir -p "$ENVCTL_TEST_CDI_DIR"
    podman_ci_start_one podman4 /usr/bin/podman '"/usr/libexec/podman", "/usr/lib/podman"'
    podman_ci_start_one podman5 "$PODMAN5_DIR/bin/podman" \
        "\"$PODMAN5_DIR/bin\", \"/usr/libexec/podman\", \"/usr/lib/podman\""
    export ENVCTL_TEST_PODMAN="podman-4.3=unix://$PODMAN_CI_RUN/podman4.sock podman-5.4=unix://$PODMAN_CI_RUN/podman5.sock"
    echo "ENVCTL_TEST_PODMAN=$ENVCTL_TEST_PODMAN"
    echo "ENVCTL_TEST_CDI_DIR=$ENVCTL_TEST_CDI_DIR"
}

# Removes what the tests left (labelled envctl.test=1) on both services, then stops the
# services this script started.
podman_ci_stop() {
    local name socket containers images volumes pid
    for name in podman4 podman5; do
        socket="$PODMAN_CI_RUN/$name.sock"
        podman_ci_answers "$socket" >/dev/null || continue
        containers=$(docker -H "unix://$socket" ps -aq --filter label=envctl.test=1)
        if [ -n "$containers" ]; then
            echo "$name: left behind by the tests:"
            docker -H "unix://$socket" ps -a --filter label=envctl.test=1 --format '  {{.Names}} ({{.Status}}, image {{.Image}})'
            # shellcheck disable=SC2086
            docker -H "unix://$socket" rm -f -v $containers >/dev/null
        fi
        volumes=$(docker -H "unix://$socket" volume ls -q --filter label=envctl.test=1)
        # shellcheck disable=SC2086
        [ -z "$volumes" ] || docker -H "unix://$socket" volume rm -f $volumes >/dev/null
        images=$(docker -H "unix://$socket" images -aq --filter label=envctl.test=1 | sort -u)
        # shellcheck disable=SC2086
        [ -z "$images" ] || docker -H "unix://$socket" rmi -f $images >/dev/null
        echo "$name: removed $(echo "$containers" | grep -c .) container(s), $(echo "$images" | grep -c .) image(s), $(echo "$volumes" | grep -c .) volume(s)"
    done
    # The GPU test's CDI spec, if a killed run left it (its device node is gone with it).
    rm -f "${ENVCTL_TEST_CDI_DIR:-/var/run/cdi}/envctl-test-gpu.json" \
        "${ENVCTL_TEST_CDI_DIR:-/var/run/cdi}"/envctl-test-placement-*.json
    for pid in "${PODMAN_CI_STARTED_PIDS[@]}"; do
        echo "stopping the podman service this script started (pid $pid)"
        kill "$pid" 2>/dev/null
        for _ in $(seq 30); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 1
        done
    done
    PODMAN_CI_STARTED_PIDS=()
}

# Plain statements, not `a && b`: under .ci/run's `set -e` a failure inside either stops CI
# (bash ignores `set -e` inside a function called on the left of `&&`).
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
fi
podman_ci_install
podman_ci_start

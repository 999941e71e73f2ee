#!/usr/bin/env bash
# A real Slurm 22.05 cluster on loopback for envctl's cluster tests (tests/it/slurm.rs):
# slurmctld, two slurmd in Slurm's multiple-slurmd mode (nodes n1 and n2 on this one
# machine, a port each), and munge with its own socket and key. Everything lives under
# $SLURM_CI_DIR; nothing of the system's own Slurm or munge configuration is read or changed.
#
#   . .ci/slurm.sh ci          # from .ci/run (as root): install, start, export
#   . .ci/slurm.sh install     # from .ci/run --install-only: install only
#   slurm_ci_stop              # from .ci/run's cleanup: stop what we started, remove the files
#   bash .ci/slurm.sh start    # by hand: install and start, print the exports, leave it running
#   bash .ci/slurm.sh stop     # by hand: stop it and remove its files
#
# - Fake GPUs: four device nodes per node made with `mknod … c 195 N` in a private folder,
#   listed in gres.conf with AutoDetect=off (n1 `File=…/nvidia[0-3]`, n2 `…/nvidia[4-7]`:
#   Slurm's indices are positions in the list, 0-3 on both): Slurm hands them out
#   as it would real ones, and with ConstrainDevices=yes each job's devices cgroup lists
#   exactly its own (the NVIDIA driver is never involved).
# - cgroup v1 (this machine's hierarchy), ConstrainDevices=yes: CUDA_VISIBLE_DEVICES is
#   renumbered per job, the trap envctl must not fall into (issue 29).
# - Known traps, handled here: SlurmdSpoolDir=…/%n must exist before slurmd starts; without
#   DefMemPerCPU the first job takes all of a node's memory and the next one stays pending.
# - KillWait=10 (Slurm's default is 30): the tests wait at most that for a job's end.
#
# - Epilog=…/etc/epilog.sh runs every hook in …/epilog.d/ at each job's end: a test drops
#   one there to sweep its own jobs' containers, as a site's Epilog would.
#
# Exports ENVCTL_TEST_SLURM_CONF (the cluster's slurm.conf: tests set SLURM_CONF to it).

SLURM_CI_DIR=${SLURM_CI_DIR:-/run/envctl-ci/slurm}
SLURM_CI_CTLD_PORT=${SLURM_CI_CTLD_PORT:-16917}
SLURM_CI_PIDS=()

slurm_ci_install() {
    local missing=() pkg
    for pkg in slurmctld slurmd slurm-client munge; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' ||
            missing+=("$pkg")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "installing: ${missing[*]}"
        apt-get update -q
        # policy-rc.d keeps the packages' own services from starting: this script starts its own.
        apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
    echo "Slurm $(slurmd -V | awk '{print $2}'), $(munged --version 2>&1 | head -n 1)"
}

slurm_ci_write_config() {
    local d=$SLURM_CI_DIR host
    host=$(hostname -s)
    mkdir -p "$d/etc" "$d/state" "$d/log" "$d/spool/n1" "$d/spool/n2" "$d/dev" "$d/munge" "$d/epilog.d"
    # munged runs as the munge user: its folder and key are its own; o+x lets clients
    # (root, slurm) reach the socket inside.
    chown munge:munge "$d/munge"
    chmod 0711 "$d/munge"
    dd if=/dev/urandom of="$d/munge/munge.key" bs=1024 count=1 status=none
    chown munge:munge "$d/munge/munge.key"
    chmod 0400 "$d/munge/munge.key"
    local minor
    for minor in 0 1 2 3 4 5 6 7; do
        rm -f "$d/dev/nvidia$minor"
        mknod -m 0666 "$d/dev/nvidia$minor" c 195 "$minor"
    done
    cat >"$d/etc/slurm.conf" <<EOF
# written by .ci/slurm.sh
ClusterName=envctlci
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$SLURM_CI_CTLD_PORT
AuthType=auth/munge
AuthInfo=socket=$d/munge/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd-%n.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd-%n.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
DefMemPerCPU=100
KillWait=10
Epilog=$d/etc/epilog.sh
InactiveLimit=0
MinJobAge=30
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=n1 NodeHostname=$host NodeAddr=127.0.0.1 Port=$((SLURM_CI_CTLD_PORT + 1)) CPUs=8 RealMemory=4000 Gres=gpu:4 State=UNKNOWN
NodeName=n2 NodeHostname=$host NodeAddr=127.0.0.1 Port=$((SLURM_CI_CTLD_PORT + 2)) CPUs=8 RealMemory=4000 Gres=gpu:4 State=UNKNOWN
PartitionName=ci Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
EOF
    cat >"$d/etc/gres.conf" <<EOF
# written by .ci/slurm.sh: device nodes of no driver, handed out as Slurm hands out GPUs
AutoDetect=off
NodeName=n1 Name=gpu File=$d/dev/nvidia[0-3]
NodeName=n2 Name=gpu File=$d/dev/nvidia[4-7]
EOF
    # The site's Epilog (docs/clusters.md): here it runs the hooks tests drop in epilog.d/
    # (each sweeps its own jobs' containers with `envctl down --rm --slurm-job`). An Epilog
    # that fails drains the node, so it always succeeds.
    printf '%s\n' '#!/bin/sh' '# written by .ci/slurm.sh' \
        "for hook in $d/epilog.d/*.sh; do" \
        "    [ -f \"\$hook\" ] && sh \"\$hook\" >>$d/log/epilog.log 2>&1" \
        'done' 'exit 0' >"$d/etc/epilog.sh"
    chmod 0755 "$d/etc/epilog.sh"
    cat >"$d/etc/cgroup.conf" <<EOF
# written by .ci/slurm.sh
CgroupPlugin=cgroup/v1
CgroupAutomount=no
ConstrainDevices=yes
ConstrainCores=no
ConstrainRAMSpace=no
EOF
}

slurm_ci_wait_nodes() {
    local state=""
    for _ in $(seq 100); do
        state=$(SLURM_CONF="$SLURM_CI_DIR/etc/slurm.conf" timeout 5 sinfo -h -N -o '%N=%t' 2>/dev/null | sort | tr '\n' ' ')
        case "$state" in
        "n1=idle n2=idle ") return 0 ;;
        esac
        sleep 0.1
    done
    echo "error: Slurm's nodes are not idle (sinfo: ${state:-no answer}); logs in $SLURM_CI_DIR/log:" >&2
    tail -n 20 "$SLURM_CI_DIR"/log/*.log >&2
    return 1
}

slurm_ci_start() {
    local d=$SLURM_CI_DIR
    if [ -f "$d/etc/slurm.conf" ] &&
        SLURM_CONF="$d/etc/slurm.conf" timeout 5 scontrol ping 2>/dev/null | grep -q UP; then
        echo "Slurm: reusing the cluster that answers at $d/etc/slurm.conf"
        export ENVCTL_TEST_SLURM_CONF="$d/etc/slurm.conf"
        return 0
    fi
    slurm_ci_write_config
    local started
    started=$(date +%s.%N)
    setsid runuser -u munge -- munged --socket="$d/munge/munge.socket" --key-file="$d/munge/munge.key" \
        --pid-file="$d/munge/munged.pid" --log-file="$d/munge/munged.log" --seed-file="$d/munge/munged.seed" \
        </dev/null >/dev/null 2>&1
    for _ in $(seq 50); do
        [ -S "$d/munge/munge.socket" ] && break
        sleep 0.1
    done
    SLURM_CI_PIDS+=("$(cat "$d/munge/munged.pid")")
    SLURM_CONF="$d/etc/slurm.conf" setsid slurmctld -f "$d/etc/slurm.conf" -i </dev/null >/dev/null 2>&1
    SLURM_CONF="$d/etc/slurm.conf" setsid slurmd -f "$d/etc/slurm.conf" -N n1 </dev/null >/dev/null 2>&1
    SLURM_CONF="$d/etc/slurm.conf" setsid slurmd -f "$d/etc/slurm.conf" -N n2 </dev/null >/dev/null 2>&1
    slurm_ci_wait_nodes
    echo "Slurm: slurmctld on 127.0.0.1:$SLURM_CI_CTLD_PORT, slurmd n1 and n2, ready in" \
        "$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s"
    export ENVCTL_TEST_SLURM_CONF="$d/etc/slurm.conf"
    echo "ENVCTL_TEST_SLURM_CONF=$ENVCTL_TEST_SLURM_CONF"
}

# Cancels what the tests left, stops the daemons of this cluster (by their pid files,
# never by name: another Slurm may run on the machine) and removes its files.
slurm_ci_stop() {
    local d=$SLURM_CI_DIR pidfile pid
    [ -d "$d" ] || return 0
    if [ -f "$d/etc/slurm.conf" ]; then
        SLURM_CONF="$d/etc/slurm.conf" timeout 5 scancel --full --quiet --partition=ci 2>/dev/null
    fi
    for pidfile in "$d/slurmd-n1.pid" "$d/slurmd-n2.pid" "$d/slurmctld.pid" "$d/munge/munged.pid"; do
        [ -f "$pidfile" ] || continue
        pid=$(cat "$pidfile")
        [ -n "$pid" ] || continue
        kill "$pid" 2>/dev/null || continue
        for _ in $(seq 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null
    done
    # Step daemons of jobs that were still ending.
    local stepd
    for stepd in $(pgrep -x slurmstepd 2>/dev/null); do
        grep -qs "$d" "/proc/$stepd/environ" && kill -9 "$stepd" 2>/dev/null
    done
    rm -rf "$d"
    echo "Slurm: stopped and removed $d"
}

case "${1:-}" in
start)
    set -euo pipefail
    slurm_ci_install
    slurm_ci_start
    ;;
stop)
    slurm_ci_stop
    ;;
ci)
    slurm_ci_install
    slurm_ci_start
    ;;
install)
    slurm_ci_install
    ;;
*)
    echo "error: unknown argument \`${1:-}\`" >&2
    echo "hint: \`bash .ci/slurm.sh start\` or \`bash .ci/slurm.sh stop\`" >&2
    exit 2
    ;;
esac

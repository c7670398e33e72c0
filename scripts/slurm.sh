#!/usr/bin/env bash
# A one-node Slurm cluster for the tests (sourced by scripts/test.sh):
# slurm_start installs Slurm and MUNGE when missing, starts munged,
# slurmctld and slurmd with a configuration under target/slurm/, waits
# for the node, and exports ONESIDED_SLURM=1 and SLURM_CONF; when it
# cannot (not root, a daemon that does not come up), it says why in one
# line and the Slurm tests skip. slurm_stop stops what it started.
# Facts behind it: ../shared/notes/slurm-on-this-machine.md.

slurm_started=()

slurm_skip() {
    echo "onesided: Slurm tests skipped: $*"
    slurm_stop
    return 0
}

slurm_start() {
    [ "$(id -u)" = 0 ] || { slurm_skip "starting slurmctld, slurmd and munged needs root"; return; }
    local p missing=()
    for p in slurmd slurmctld slurm-client munge; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "onesided: installing ${missing[*]}"
        apt-get update -qq >/dev/null 2>&1
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 ||
            { slurm_skip "apt-get install ${missing[*]} failed"; return; }
    fi
    local dir host
    dir="$(pwd)/target/slurm"
    host=$(hostname -s)
    mkdir -p "$dir/ctld" "$dir/d" /run/munge /var/log/munge
    cat > "$dir/slurm.conf" <<CONF
ClusterName=onesided
SlurmctldHost=$host
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmdSpoolDir=$dir/d
StateSaveLocation=$dir/ctld
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmUser=root
MpiDefault=none
ReturnToService=2
NodeName=$host CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=10 State=UP OverSubscribe=FORCE:8
CONF
    export SLURM_CONF="$dir/slurm.conf"
    if ! pgrep -x munged >/dev/null; then
        chown -R munge:munge /run/munge /var/log/munge /etc/munge
        su -s /bin/sh munge -c munged || { slurm_skip "munged did not start"; return; }
        slurm_started+=(munged)
    fi
    slurmctld -f "$SLURM_CONF" || { slurm_skip "slurmctld did not start (see $dir/slurmctld.log)"; return; }
    slurm_started+=("$dir/slurmctld.pid")
    slurmd -f "$SLURM_CONF" || { slurm_skip "slurmd did not start (see $dir/slurmd.log)"; return; }
    slurm_started+=("$dir/slurmd.pid")
    local i
    for i in $(seq 60); do
        if sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then
            export ONESIDED_SLURM=1
            echo "onesided: Slurm is up (one node, $host; srun --mpi=pmi2)"
            return 0
        fi
        sleep 0.5
    done
    slurm_skip "the node did not turn idle within 30 s (see $dir/slurmd.log)"
}

slurm_stop() {
    local s pid
    for s in "${slurm_started[@]}"; do
        if [ "$s" = munged ]; then
            pid=$(cat /run/munge/munged.pid 2>/dev/null)
        else
            pid=$(cat "$s" 2>/dev/null)
        fi
        [ -n "$pid" ] && kill "$pid" 2>/dev/null
    done
    slurm_started=()
    unset ONESIDED_SLURM
}

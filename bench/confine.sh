#!/usr/bin/env bash
# bench/confine.sh: the cost of confinement per job (issue 37): submit to
# start p50/p99 and trivial jobs per second on a private 4-node cluster,
# with and without cgroups, rounds alternating so that the machine's load
# falls on every mode alike.
#
#   bench/confine.sh                    # release build, 3 rounds, prints one line per phase and a summary
#   ROUNDS=5 bench/confine.sh
#   MUSTER=... MUSTER_BENCH=... bench/confine.sh   # prebuilt binaries; nothing is built
#
# Modes (root only: without root there is nothing to compare):
#   none      cgroup.conf with CgroupPlugin=disabled: jobs are not confined
#   v1        what `muster up` writes as root on a v1 host (CgroupPlugin=autodetect,
#             IgnoreSystemd=yes): freezer, cpuacct and memory cgroups per job, step and task
#   v2        CgroupPlugin=cgroup/v2 on the unified mount (a hybrid host's
#             /sys/fs/cgroup/unified), where there is one
# Each phase runs on a fresh cluster (empty journal) of its mode: 200 jobs
# submitted one at a time, each writing its start time (`muster-bench
# latency --method file`, as bench/run.sh (b)), then 2,000 trivial jobs to
# completion with 8 submitting threads (bench/run.sh (c)). Stops only what it
# started, by the PIDs `muster up` recorded. Measured, never asserted.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BASE=${BENCH_STATE_DIR:-/tmp/muster-bench-confine}
ROUNDS=${ROUNDS:-3}
N_LAT=${N_LAT:-200}
N_RUN=${N_RUN:-2000}

if [ "$(id -u)" != 0 ]; then
    echo "bench/confine.sh: needs root (cgroups)" >&2
    exit 1
fi
if [ -z "${MUSTER:-}" ] || [ -z "${MUSTER_BENCH:-}" ]; then
    (cd "$ROOT" && cargo build --release -p muster -p bench) || exit 1
    MUSTER=$TARGET/release/muster
    MUSTER_BENCH=$TARGET/release/muster-bench
fi
UNIFIED=
for d in /sys/fs/cgroup/unified /sys/fs/cgroup; do
    if [ -f "$d/cgroup.controllers" ]; then UNIFIED=$d; break; fi
done
MODES="none v1"
[ -n "$UNIFIED" ] && MODES="$MODES v2"
[ -f /sys/fs/cgroup/cgroup.controllers ] && MODES="none v2"   # a v2-only host

log() { printf '[confine %s] %s\n' "$(date +%T)" "$*" >&2; }
kv() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p" | head -1; }

STATE=
down() {
    if [ -n "$STATE" ] && [ -f "$STATE/pids" ]; then
        "$MUSTER" down --state-dir "$STATE" >/dev/null 2>&1 || true
    fi
}
trap down EXIT

# The cgroup.conf of a mode.
cgroup_conf() {
    case $1 in
    none) printf 'CgroupPlugin=disabled\n' ;;
    v1) printf 'CgroupPlugin=autodetect\nIgnoreSystemd=yes\n' ;;
    v2) printf 'CgroupPlugin=cgroup/v2\nCgroupMountpoint=%s\nIgnoreSystemd=yes\n' "$UNIFIED" ;;
    esac
}

# A fresh cluster of mode $1 in its own state directory.
fresh() {
    down
    STATE=$BASE-$1
    export SLURM_CONF=$STATE/slurm.conf
    if [ ! -f "$SLURM_CONF" ]; then
        rm -rf "$STATE"
        mkdir -p "$STATE"
        # `muster up` writes its slurm.conf (ProctrackType=proctrack/cgroup as root).
        "$MUSTER" up --detach --state-dir "$STATE" --nodes 4 >/dev/null 2>&1 || return 1
        down
    fi
    cgroup_conf "$1" >"$STATE/cgroup.conf"
    rm -rf "$STATE/ctld" "$STATE/spool" "$STATE/log" "$STATE/work"
    mkdir -p "$STATE/work"
    "$MUSTER" up --detach --state-dir "$STATE" --nodes 4 >/dev/null 2>"$STATE/up.err" || {
        log "muster up ($1) failed: $(cat "$STATE/up.err")"
        return 1
    }
    # Where the jobs run: a cgroup of the node daemon's, or the shell's own.
    local cg
    cg=$(PATH="$STATE/bin:$PATH" srun -N1 sh -c 'grep -E ":freezer:|^0::" /proc/self/cgroup' 2>&1 | tr '\n' ' ')
    log "$1: a task's cgroups: $cg"
}

declare -A R
for ((round = 1; round <= ROUNDS; round++)); do
    for mode in $MODES; do
        fresh "$mode" || exit 1
        load=$(cut -d' ' -f1 /proc/loadavg)
        line=$("$MUSTER_BENCH" latency -f "$SLURM_CONF" --count "$N_LAT" --method file --dir "$STATE/work/lat") || line=failed
        echo "round=$round mode=$mode phase=latency load=$load $line"
        R[$mode.lat]+="$(kv "$line" p50_ms)/$(kv "$line" p99_ms) "
        fresh "$mode" || exit 1
        load=$(cut -d' ' -f1 /proc/loadavg)
        line=$("$MUSTER_BENCH" run -f "$SLURM_CONF" --count "$N_RUN" --threads 8 --workdir "$STATE/work" --timeout 600) || line=failed
        echo "round=$round mode=$mode phase=trivial load=$load $line"
        R[$mode.run]+="$(kv "$line" jobs_per_s) "
    done
done
down
STATE=
echo
echo "summary ($ROUNDS rounds; $(nproc) CPUs; load average now $(cut -d' ' -f1-3 /proc/loadavg))"
for mode in $MODES; do
    echo "$mode: submit->start p50/p99 ms: ${R[$mode.lat]}| trivial jobs/s: ${R[$mode.run]}"
done

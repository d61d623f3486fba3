#!/usr/bin/env bash
# bench/trivial.sh: item 8(c) alone, for comparing builds: 2,000 trivial jobs
# on a fresh private 4-node cluster, with the CPU each daemon used.
#
#   bench/trivial.sh LABEL MUSTER MUSTER_BENCH [COUNT]
#
# Prints one line: label, jobs/s, wall seconds, controller CPU (utime+stime
# of the ctld process, /proc/PID/stat) in total and per job, the node
# daemons' CPU including their reaped children (noded_cpu_s: job scripts,
# and supervisors executed by the daemon; supervisors forked by the zygote
# are not the daemon's to reap, so builds with the zygote leave them out),
# and the load average before the run. Where the cgroup v1 cpuacct
# controller can be written (root), the cluster is started in a cgroup of
# its own and the CPU of every process in it is given as well
# (cluster_cpu_s), with the node side per job (node_ms_per_job: the
# cluster less the controller): that figure compares any two builds.
# Stops only what it started.
set -uo pipefail
LABEL=$1 MUSTER=$2 MB=$3 COUNT=${4:-2000}
STATE=${BENCH_STATE_DIR:-/tmp/muster-trivial-$LABEL}
export SLURM_CONF=$STATE/slurm.conf
CG=/sys/fs/cgroup/cpuacct/muster-trivial-$LABEL
down() {
    [ -f "$STATE/pids" ] && "$MUSTER" down --state-dir "$STATE" >/dev/null 2>&1
    [ -d "$CG" ] && rmdir "$CG" 2>/dev/null
}
trap down EXIT
down
rm -rf "$STATE"
mkdir -p "$STATE/work"
mkdir "$CG" 2>/dev/null || CG=
# The daemons inherit the cgroup of the shell that starts them.
(
    [ -n "$CG" ] && echo "$BASHPID" >"$CG/cgroup.procs"
    "$MUSTER" up --detach --state-dir "$STATE" --nodes 4 >/dev/null
) || { echo "$LABEL up failed"; exit 1; }
cg_ns() { if [ -n "$CG" ]; then cat "$CG/cpuacct.usage"; else echo 0; fi; }
ticks() { # utime+stime (+cutime+cstime with 2nd arg) of a pid, in clock ticks
    awk -v c="${2:-0}" '{ s = $14 + $15; if (c) s += $16 + $17; print s }' "/proc/$1/stat"
}
ctld=$(awk '$2 == "ctld" {print $1}' "$STATE/pids")
nodeds=$(awk '$2 != "ctld" {print $1}' "$STATE/pids")
sleep 1
c0=$(ticks "$ctld"); n0=0; g0=$(cg_ns)
for p in $nodeds; do n0=$((n0 + $(ticks "$p" 1))); done
load=$(cut -d' ' -f1 /proc/loadavg)
line=$("$MB" run -f "$SLURM_CONF" --count "$COUNT" --threads 8 --workdir "$STATE/work" --timeout 600)
c1=$(ticks "$ctld"); n1=0; g1=$(cg_ns)
for p in $nodeds; do n1=$((n1 + $(ticks "$p" 1))); done
hz=$(getconf CLK_TCK)
kv() { tr ' ' '\n' <<<"$line" | sed -n "s/^$1=//p" | head -1; }
echo "$LABEL jobs_per_s=$(kv jobs_per_s) secs=$(kv total_secs) completed=$(kv completed)" \
    "ctld_cpu_s=$(echo "scale=2; ($c1 - $c0) / $hz" | bc)" \
    "ctld_ms_per_job=$(echo "scale=3; ($c1 - $c0) * 1000 / $hz / $COUNT" | bc)" \
    "noded_cpu_s=$(echo "scale=2; ($n1 - $n0) / $hz" | bc)" \
    "cluster_cpu_s=$(echo "scale=2; ($g1 - $g0) / 1000000000" | bc)" \
    "node_ms_per_job=$(echo "scale=3; (($g1 - $g0) / 1000000 - ($c1 - $c0) * 1000 / $hz) / $COUNT" | bc)" \
    "load_before=$load"

#!/usr/bin/env bash
# bench/cancel.sh: issue 44 items 1 and 2 alone, for comparing builds, on a
# fresh private 4-node cluster (`muster up`, 2 CPUs each) driven through
# the Slurm commands that `muster up` links into $STATE/bin.
#
#   bench/cancel.sh LABEL MUSTER MUSTER_BENCH [COUNT...]
#
# For each COUNT (default 10000):
# - cancel: COUNT held jobs (`muster-bench submit --hold`, name "wrap"),
#   then `scancel -u $USER -n wrap`; the time from its start until
#   `squeue -h` shows no job (polled every 10 ms), and scancel's own time.
# - kill9: COUNT held jobs, ctld VmRSS 1.5 s after the last submission
#   (once the controller's trim has run), then kill -9, `muster ctld`
#   again, VmRSS 1.5 s after it answers a ping.
# With HOLD=0 the jobs are not held but run `sleep 600`: 8 run, the rest
# wait for resources (and the name in scancel's filter is still "wrap").
# Prints one line per measurement. ONLY=cancel or ONLY=kill9 runs one of
# them. With STATS=1 the controller's glibc malloc_stats (live heap per
# arena) go to its log, by gdb, before the kill and after the restart.
# Stops only what it started.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/restart.sh"
LABEL=$1 MUSTER=$2 MB=$3
shift 3
COUNTS=("${@:-10000}")
STATE=${BENCH_STATE_DIR:-/tmp/muster-cancel-$LABEL}
CONF=$STATE/slurm.conf
export SLURM_CONF=$CONF
export PATH="$STATE/bin:$PATH"
stats() { [ -n "${STATS:-}" ] && gdb -p "$1" -batch -ex 'call (void)malloc_stats()' >/dev/null 2>&1; }
ctld_pid() { awk '$2 == "ctld" {print $1}' "$STATE/pids" 2>/dev/null; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null; }
now() { date +%s.%N; }
since() { echo "scale=3; ($(now) - $1) / 1" | bc; }
down() { [ -f "$STATE/pids" ] && "$MUSTER" down --state-dir "$STATE" >/dev/null 2>&1; }
fresh() {
    down
    rm -rf "$STATE/ctld" "$STATE/spool" "$STATE/log"
    "$MUSTER" up --detach --state-dir "$STATE" --nodes 4 >/dev/null || { echo "$LABEL up failed"; exit 1; }
    sleep 1
}
trap down EXIT
mkdir -p "$STATE"
down
if ! grep -q '^MaxJobCount' "$CONF" 2>/dev/null; then
    rm -rf "${STATE:?}"/*
    fresh
    down
    echo "MaxJobCount=200000" >>"$CONF"
fi
me=$(id -un)
if [ "${HOLD:-1}" = 0 ]; then JOBS=(--wrap "sleep 600"); else JOBS=(--hold); fi
for n in "${COUNTS[@]}"; do
  if [ "${ONLY:-cancel}" = cancel ]; then
    fresh
    "$MB" submit -f "$CONF" --threads 8 --count "$n" "${JOBS[@]}" >/dev/null 2>&1
    left=$(squeue -h | wc -l)
    sleep 1.5
    t0=$(now)
    scancel -u "$me" -n wrap
    rc=$?
    t_scancel=$(since "$t0")
    while [ -n "$(squeue -h | head -1)" ]; do sleep 0.01; done
    t_empty=$(since "$t0")
    echo "$LABEL cancel n=$n queued=$left scancel_rc=$rc scancel_s=$t_scancel until_squeue_empty_s=$t_empty"
  fi
  if [ "${ONLY:-kill9}" = kill9 ]; then
    fresh
    pid=$(ctld_pid)
    rss0=$(rss_kb "$pid")
    "$MB" submit -f "$CONF" --threads 8 --count "$n" "${JOBS[@]}" >/dev/null 2>&1
    sleep 1.5
    rss=$(rss_kb "$pid")
    stats "$pid"
    kill -KILL "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.01; done
    t0=$(date +%s.%N)
    "$MUSTER" ctld -f "$CONF" >>"$STATE/log/ctld.log" 2>&1 &
    newpid=$!
    sed -i "s/^$pid ctld\$/$newpid ctld/" "$STATE/pids"
    "$MB" ping -f "$CONF" --timeout 120 >/dev/null
    sleep 1.5
    rss_r=$(rss_kb "$newpid")
    stats "$newpid"
    echo "$LABEL kill9 n=$n hold=${HOLD:-1} rss_empty_kb=$rss0 rss_before_kb=$rss rss_after_restart_kb=$rss_r"
    grep 'recovered' "$STATE/log/ctld.log" | tail -1 | sed 's/.*INFO ctld::durable: /  /'
  fi
done

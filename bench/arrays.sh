#!/usr/bin/env bash
# bench/arrays.sh: a 100,000-task job array against 100,000 single jobs
# (issue 7 item 6): controller memory for the pending queue, submission
# time, and tasks (jobs) run to completion per second.
#
#   bench/arrays.sh              # N=100000 (RUN_N=N)
#   N=10000 RUN_N=2000 bench/arrays.sh
#   PHASES="run-jobs" bench/arrays.sh   # some of: mem-array mem-jobs run-array run-jobs
#
# Environment: BENCH_STATE_DIR (default /tmp/muster-bench-arrays),
# MUSTER / MUSTER_BENCH (prebuilt binaries), CARGO_TARGET_DIR.
# It starts its own 4-node cluster (`muster up`, 2 CPUs a node), fresh for
# each phase, and stops only what it started. Measured, never asserted.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
STATE=${BENCH_STATE_DIR:-/tmp/muster-bench-arrays}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
N=${N:-100000}
RUN_N=${RUN_N:-$N}
PHASES=" ${PHASES:-mem-array mem-jobs run-array run-jobs} "
phase() { [[ $PHASES == *" $1 "* ]]; }
NODES=4
if [ -z "${MUSTER:-}" ] || [ -z "${MUSTER_BENCH:-}" ]; then
    (cd "$ROOT" && cargo build --release -p muster -p bench) || exit 1
    MUSTER=$TARGET/release/muster
    MUSTER_BENCH=$TARGET/release/muster-bench
fi
CONF=$STATE/slurm.conf
export SLURM_CONF=$CONF
log() { printf '[arrays %s] %s\n' "$(date +%T)" "$*" >&2; }
now_ns() { date +%s%N; }
ms_since() { echo $((($(now_ns) - $1) / 1000000)); }
ctld_pid() { awk '$2 == "ctld" {print $1}' "$STATE/pids" 2>/dev/null; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null; }
down() { [ -f "$STATE/pids" ] && "$MUSTER" down --state-dir "$STATE" >/dev/null 2>&1; true; }
trap down EXIT
fresh() {
    down
    rm -rf "$STATE/ctld" "$STATE/spool" "$STATE/log"
    find "$STATE/work" -mindepth 1 -delete 2>/dev/null
    "$MUSTER" up --detach --state-dir "$STATE" --nodes $NODES >/dev/null || { log "muster up failed"; exit 1; }
    sleep 1
}
mkdir -p "$STATE"
down
if ! grep -q '^MaxArraySize' "$CONF" 2>/dev/null; then
    rm -rf "${STATE:?}"/*
    "$MUSTER" up --detach --state-dir "$STATE" --nodes $NODES >/dev/null || exit 1
    down
    printf 'MaxJobCount=%d\nMaxArraySize=%d\n' $((N * 3)) $((N + 1)) >>"$CONF"
fi
mkdir -p "$STATE/work"
cd "$STATE/work" || exit 1
sbatch() { "$MUSTER" sbatch "$@"; }

if phase mem-array; then
    log "memory: one held array of $N tasks"
    fresh
    pid=$(ctld_pid); before=$(rss_kb "$pid")
    t=$(now_ns)
    sbatch -H --array=0-$((N - 1)) --wrap true >/dev/null
    array_submit_ms=$(ms_since "$t")
    sleep 1
    array_rss=$(($(rss_kb "$pid") - before))
    echo "array: submit_ms=$array_submit_ms rss_growth_kb=$array_rss"
fi

if phase mem-jobs; then
    log "memory: $N held single jobs (8 client threads)"
    fresh
    pid=$(ctld_pid); before=$(rss_kb "$pid")
    line=$("$MUSTER_BENCH" submit -f "$CONF" --threads 8 --count "$N" --hold)
    sleep 1
    jobs_rss=$(($(rss_kb "$pid") - before))
    echo "jobs: $line rss_growth_kb=$jobs_rss"
fi

if phase run-array; then
    log "run: one array of $RUN_N trivial tasks"
    fresh
    "$MUSTER_BENCH" run -f "$CONF" --array --count "$RUN_N" --timeout 7200 --workdir "$STATE/work"
    echo "ctld_rss_kb_after=$(rss_kb "$(ctld_pid)")"
fi
if phase run-jobs; then
    log "run: $RUN_N trivial single jobs (8 client threads)"
    fresh
    "$MUSTER_BENCH" run -f "$CONF" --threads 8 --count "$RUN_N" --timeout 7200 --workdir "$STATE/work"
    echo "ctld_rss_kb_after=$(rss_kb "$(ctld_pid)")"
fi

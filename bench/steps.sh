#!/usr/bin/env bash
# bench/steps.sh: job step launch and the PMI fence (issue 8 item 8).
#
#   bench/steps.sh                      # release build, R=5 runs per size
#   MUSTER=target/debug/muster R=3 bench/steps.sh
#
# A private 4-node cluster (`muster up --nodes 4`: four node daemons on
# loopback, 2 CPUs each) in BENCH_STATE_DIR (default /tmp/muster-bench-steps);
# every step runs inside one `salloc -N4 -O` allocation. For 1, 64 and 256
# tasks (1 node for 1 task, 4 nodes otherwise, -O: more tasks than CPUs):
#   running: srun start to the last task's first instruction (each task is
#            `sh -c 'date +%s%N'`; the latest printed time, less srun's start)
#   done:    srun start to srun's exit (every task reaped, the step's end
#            recorded by the controller)
# and the PMI fence: bench/pmi_fence.c (a bare PMI-1 client, no MPI library)
# run with --mpi=pmi2 on 4 nodes does 20 barriers; rank 0's median barrier.
# Prints medians (and min-max) over R runs. Measured, never asserted.
set -uo pipefail

SELF=$(realpath "$0")
ROOT=$(cd "$(dirname "$SELF")/.." && pwd)
STATE=${BENCH_STATE_DIR:-/tmp/muster-bench-steps}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
R=${R:-5}
if [ "${1:-}" = --inner ]; then
    # Inside the allocation.
    cd "$STATE/work" || exit 1
    now_ns() { date +%s%N; }
    med() { sort -n | awk '{v[NR]=$1} END {printf "%d ms (%d-%d)", v[int((NR+1)/2)], v[1], v[NR]}'; }
    srun() { "$MUSTER" srun "$@"; }
    printf '| tasks | nodes | srun start to all running | srun start to all done |\n|---|---|---|---|\n'
    for n in 1 64 256; do
        nodes=4
        [ "$n" = 1 ] && nodes=1
        : >run.ms
        : >done.ms
        for _ in $(seq "$R"); do
            t0=$(now_ns)
            srun -N$nodes -n$n -O sh -c 'date +%s%N' >stamps || exit 1
            t1=$(now_ns)
            last=$(sort -n stamps | tail -n 1)
            [ "$(wc -l <stamps)" = "$n" ] || { echo "expected $n lines" >&2; exit 1; }
            echo $(((last - t0) / 1000000)) >>run.ms
            echo $(((t1 - t0) / 1000000)) >>done.ms
        done
        printf '| %d | %d | %s | %s |\n' "$n" "$nodes" "$(med <run.ms)" "$(med <done.ms)"
    done
    printf '\n| ranks | nodes | PMI fence (barrier), median of 20 per run |\n|---|---|---|\n'
    for n in 4 64 256; do
        : >fence.us
        for _ in $(seq "$R"); do
            srun -N4 -n$n -O --mpi=pmi2 ./pmi_fence 20 >fence.out || exit 1
            awk '/^fence_us/ {print $3}' fence.out >>fence.us
        done
        printf '| %d | 4 | %s |\n' "$n" "$(sort -n fence.us | awk '{v[NR]=$1} END {printf "%d us (%d-%d)", v[int((NR+1)/2)], v[1], v[NR]}')"
    done
    exit 0
fi

if [ -z "${MUSTER:-}" ]; then
    (cd "$ROOT" && cargo build --release -p muster) || exit 1
    MUSTER=$TARGET/release/muster
fi
MUSTER=$(realpath "$MUSTER")
export MUSTER STATE R
export SLURM_CONF=$STATE/slurm.conf
log() { printf '[steps %s] %s\n' "$(date +%T)" "$*" >&2; }
down() { [ -f "$STATE/pids" ] && "$MUSTER" down --state-dir "$STATE" >/dev/null 2>&1; true; }
trap down EXIT
mkdir -p "$STATE"
down
rm -rf "${STATE:?}"/*
"$MUSTER" up --detach --state-dir "$STATE" --nodes 4 >/dev/null || { log "muster up failed"; exit 1; }
mkdir -p "$STATE/work"
cc -O2 -o "$STATE/work/pmi_fence" "$ROOT/bench/pmi_fence.c" || exit 1
sleep 1
log "muster $("$MUSTER" --version 2>/dev/null | head -n 1), $(nproc) CPUs, R=$R"
cd "$STATE/work" || exit 1
"$MUSTER" salloc -N4 -O -Q "$SELF" --inner

#!/usr/bin/env bash
# bench/hostile.sh: squeue and sbatch latency under a storm of connections
# without a credential (issue 34 item 4), against the 100 ms target.
#
#   bench/hostile.sh                       # release build, 30 rounds
#   R=50 HELD=4700 CYCLING=300 bench/hostile.sh
#   MUSTER=target/debug/muster MUSTER_BENCH=target/debug/muster-bench bench/hostile.sh
#   STORM_CPU=1 CPUS=0 NICE=-10 bench/hostile.sh
#
# Starts its own 1-node cluster (`muster up`, fresh state), then
# `muster-bench hostile` times R rounds of a real `squeue` and a real
# `sbatch --wrap true` (processes, as a user runs them), first on the quiet
# cluster, then while `e2e::storm` holds HELD connections without a
# credential open (idle, two bytes of a length prefix, half a frame) and
# keeps CYCLING more reopened as fast as the daemons close them, nine tenths
# against the controller, the rest against the node daemon. The rounds
# start with the storm. Prints p50/p90/max per command and phase, and how
# many calls took over 100 ms. Measured, never asserted. Stops only the
# processes `muster up` started.
#
# STORM_CPU=N runs the storm's threads on CPU N alone and CPUS=LIST the
# daemons and the measured commands on the others (taskset), as where the
# hostile connections come from other hosts; NICE=-N raises the whole
# benchmark over other work on a shared machine (root only).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
R=${R:-30}
HELD=${HELD:-4700}
CYCLING=${CYCLING:-300}
DIR=${BENCH_STATE_DIR:-/tmp/muster-hostile}
if [ -z "${MUSTER:-}" ] || [ -z "${MUSTER_BENCH:-}" ]; then
    (cd "$ROOT" && cargo build --release -p muster -p bench) || exit 1
    MUSTER=${MUSTER:-$TARGET/release/muster}
    MUSTER_BENCH=${MUSTER_BENCH:-$TARGET/release/muster-bench}
fi
PIN=()
[ -n "${CPUS:-}" ] && PIN+=(taskset -c "$CPUS")
[ -n "${NICE:-}" ] && PIN=(nice -n "$NICE" "${PIN[@]}")
STORM=()
[ -n "${STORM_CPU:-}" ] && STORM=(--storm-cpu "$STORM_CPU")
log() { printf '[hostile %s] %s\n' "$(date +%T)" "$*" >&2; }
down() { [ -f "$DIR/pids" ] && "$MUSTER" down --state-dir "$DIR" >/dev/null 2>&1; true; }
trap down EXIT

down
rm -rf "$DIR"
mkdir -p "$DIR"
"${PIN[@]}" "$MUSTER" up --detach --state-dir "$DIR" --nodes 1 >/dev/null || { log "muster up failed"; exit 1; }
sleep 1
log "$(basename "$MUSTER"): $R rounds, $HELD held + $CYCLING cycling connections${STORM_CPU:+, storm on CPU $STORM_CPU}${CPUS:+, the rest on CPUs $CPUS}${NICE:+, nice $NICE}"
# The storm holds thousands of sockets: raise this shell's limit too.
ulimit -n "$(ulimit -Hn)" 2>/dev/null
"${PIN[@]}" "$MUSTER_BENCH" hostile -f "$DIR/slurm.conf" --muster "$MUSTER" --count "$R" \
    --held "$HELD" --cycling "$CYCLING" "${STORM[@]}"
# The controller's and node daemon's peak memory over the run (the storm's
# connections each cost a task and a read buffer until they are closed).
# (`pids` names the controller `ctld` and each node daemon by its node.)
# And the CPU time each used over the whole run (user + system, from
# /proc/PID/stat; the quiet rounds' share is small).
tck=$(getconf CLK_TCK)
while read -r pid name; do
    cpu=$(awk -v t="$tck" '{sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / t}' "/proc/$pid/stat" 2>/dev/null)
    echo "hostile $name peak_rss_kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2>/dev/null) cpu_s=$cpu"
done <"$DIR/pids"

#!/usr/bin/env bash
# bench/query.sh: squeue and sinfo over many pending jobs, two builds side
# by side (issue 3 item 8 (d), (e)): wall time, the command's CPU time and
# the controller's CPU time per call, and the controller's memory per job.
#
#   MUSTER_A=/tmp/old/muster MUSTER_B=target/release/muster bench/query.sh
#   N=100000 R=8 bench/query.sh            # (defaults: N=10000, R=30)
#   CMDS="squeue|squeue -l|sinfo" bench/query.sh
#
# Each build gets its own private 4-node cluster (`muster up`, fresh state,
# MaxJobCount raised) holding N held jobs submitted by `muster-bench submit
# --threads 8 --hold`; then every command runs R times, alternating A and
# B, so both see the same load. Medians, minimums and maximums of the
# wall time; the controller's CPU is the sum of its threads'
# /proc/PID/task/*/schedstat across the call, the command's from wait4's
# rusage. Memory: the controller's VmRSS growth
# over the submissions divided by N, read 1 s after the last one.
# Only B is run when MUSTER_A is unset. Measured, never asserted.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
N=${N:-10000}
R=${R:-30}
CMDS=${CMDS:-squeue|squeue -l|sinfo}
BASE=${BENCH_STATE_DIR:-/tmp/muster-query}
if [ -z "${MUSTER_B:-}" ]; then
    (cd "$ROOT" && cargo build --release -p muster -p bench) || exit 1
    MUSTER_B=$TARGET/release/muster
fi
MUSTER_BENCH=${MUSTER_BENCH:-$TARGET/release/muster-bench}
SIDES="B"
[ -n "${MUSTER_A:-}" ] && SIDES="A B"
log() { printf '[query %s] %s\n' "$(date +%T)" "$*" >&2; }
bin() { if [ "$1" = A ]; then echo "$MUSTER_A"; else echo "$MUSTER_B"; fi; }
state() { echo "$BASE-$1"; }
ctld_pid() { awk '$2 == "ctld" {print $1}' "$(state "$1")/pids" 2>/dev/null; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null; }
down_all() {
    for s in $SIDES; do
        [ -f "$(state "$s")/pids" ] && "$(bin "$s")" down --state-dir "$(state "$s")" >/dev/null 2>&1
    done
    true
}
trap down_all EXIT

for s in $SIDES; do
    dir=$(state "$s")
    "$(bin "$s")" down --state-dir "$dir" >/dev/null 2>&1
    rm -rf "$dir"
    mkdir -p "$dir"
    "$(bin "$s")" up --detach --state-dir "$dir" --nodes 4 >/dev/null || { log "muster up ($s) failed"; exit 1; }
    "$(bin "$s")" down --state-dir "$dir" >/dev/null 2>&1
    printf 'MaxJobCount=%d\n' $((N * 3)) >>"$dir/slurm.conf"
    "$(bin "$s")" up --detach --state-dir "$dir" --nodes 4 >/dev/null || { log "muster up ($s) failed"; exit 1; }
done
sleep 1
for s in $SIDES; do
    dir=$(state "$s")
    pid=$(ctld_pid "$s")
    before=$(rss_kb "$pid")
    log "$s: submitting $N held jobs"
    line=$(SLURM_CONF=$dir/slurm.conf "$MUSTER_BENCH" submit -f "$dir/slurm.conf" --threads 8 --count "$N" --hold)
    sleep 1
    after=$(rss_kb "$pid")
    echo "$s: $line; controller RSS growth $((after - before)) KiB, $(((after - before) * 1024 / N)) B per job"
done

# One timed call: prints "wall_ms command_cpu_ms controller_cpu_ms".
measure() {
    python3 - "$@" <<'EOF'
import os, sys, time, glob
pid, argv = sys.argv[1], sys.argv[2:]
def ctld_ns():
    total = 0
    for f in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            total += int(open(f).read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total
c0 = ctld_ns()
t0 = time.perf_counter()
child = os.fork()
if child == 0:
    fd = os.open("/dev/null", os.O_WRONLY)
    os.dup2(fd, 1)
    os.execvp(argv[0], argv)
_, status, ru = os.wait4(child, 0)
wall = (time.perf_counter() - t0) * 1000
c1 = ctld_ns()
if status != 0:
    sys.exit(f"{argv} failed: {status}")
print(f"{wall:.2f} {(ru.ru_utime + ru.ru_stime) * 1000:.2f} {(c1 - c0) / 1e6:.2f}")
EOF
}

OUT=$(mktemp -d)
IFS='|' read -ra cmds <<<"$CMDS"
for ((r = 0; r < R; r++)); do
    for c in "${!cmds[@]}"; do
        for s in $SIDES; do
            read -ra words <<<"${cmds[$c]}"
            # Through the command's link, as a user runs it (`muster up`
            # made them: to muster-cli where the build has one).
            words[0]=$(state "$s")/bin/${words[0]}
            SLURM_CONF=$(state "$s")/slurm.conf measure "$(ctld_pid "$s")" \
                "${words[@]}" >>"$OUT/$s.$c" || exit 1
        done
    done
done
for c in "${!cmds[@]}"; do
    for s in $SIDES; do
        python3 - "$s" "${cmds[$c]}" "$N" "$OUT/$s.$c" <<'EOF'
import sys, statistics as st
side, cmd, n, path = sys.argv[1:]
rows = [list(map(float, l.split())) for l in open(path)]
col = lambda i: [r[i] for r in rows]
print(f"{side}: {cmd!r} over {int(n):,} jobs, {len(rows)} runs: wall median {st.median(col(0)):.1f} ms"
      f" (min {min(col(0)):.1f}, max {max(col(0)):.1f}), command CPU median {st.median(col(1)):.1f} ms,"
      f" controller CPU median {st.median(col(2)):.1f} ms")
EOF
    done
done
rm -rf "$OUT"

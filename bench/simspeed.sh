#!/usr/bin/env bash
# bench/simspeed.sh: `muster sim` against the textbook simulator
# (bench/textbook_easy.py) in CPU seconds, issue 44 item 3.
#
#   bench/simspeed.sh [MUSTER]          # default: target/release/muster
#
# For every trace in $TRACES (default /work/shared/data/traces) and two
# synthetic ones (bench/synth_swf.py; sizes the Python loop finishes in
# reasonable time, SYNTH="JOBS:NODES ..."), the least user + system seconds
# (getrusage) of RUNS runs (default 3; PYRUNS for Python's) of: the Python simulator
# (--policy easy and fcfs) and `muster sim --json --quiet` (--policy easy,
# fcfs and the default), and the ratios Python / muster (the default's
# against Python's EASY, the textbook policy nearest to it). `muster sim` on a
# synthetic trace of BIG jobs (default 1,000,000; 0 skips it) is timed once
# per policy. Measured, not asserted: the targets are in docs/simulator.md.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MUSTER=${1:-$ROOT/target/release/muster}
T=${TRACES:-/work/shared/data/traces}
RUNS=${RUNS:-3}
SYNTH=${SYNTH:-"2000:200 10000:1000"}
BIG=${BIG:-1000000}
WORK=$(mktemp -d /tmp/simspeed.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# The least user+sys seconds of RUNS runs of the command (getrusage of the
# child, to the microsecond: /usr/bin/time prints hundredths).
cpu() {
    local runs=$RUNS
    [ "$1" = python3 ] && runs=${PYRUNS:-$RUNS}
    python3 - "$runs" "$@" <<'PY'
import resource, subprocess, sys
runs, cmd = int(sys.argv[1]), sys.argv[2:]
best = None
for _ in range(runs):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        print("failed")
        sys.exit()
    s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    best = s if best is None else min(best, s)
print(f"{best:.3f}")
PY
}
ratio() { awk "BEGIN { if ($2 > 0) printf \"%.1f\", $1 / $2; else print \"-\" }"; }

traces=()
for f in "$T"/*.swf "$T"/*.swf.gz; do [ -e "$f" ] && traces+=("$f"); done
for s in $SYNTH; do
    jobs=${s%%:*} nodes=${s##*:}
    f=$WORK/synth-$jobs-$nodes.swf
    python3 "$ROOT/bench/synth_swf.py" --jobs "$jobs" --nodes "$nodes" >"$f"
    traces+=("$f")
done
printf '%-36s %8s %8s %6s %8s %8s %6s %10s %6s\n' trace py-easy mu-easy x py-fcfs mu-fcfs x mu-default x-easy
for f in "${traces[@]}"; do
    pe=$(cpu python3 "$ROOT/bench/textbook_easy.py" "$f" --policy easy)
    me=$(cpu "$MUSTER" sim --trace "$f" --policy easy --json --quiet)
    pf=$(cpu python3 "$ROOT/bench/textbook_easy.py" "$f" --policy fcfs)
    mf=$(cpu "$MUSTER" sim --trace "$f" --policy fcfs --json --quiet)
    md=$(cpu "$MUSTER" sim --trace "$f" --json --quiet)
    printf '%-36s %8s %8s %6s %8s %8s %6s %10s %6s\n' "$(basename "$f")" \
        "$pe" "$me" "$(ratio "$pe" "$me")" "$pf" "$mf" "$(ratio "$pf" "$mf")" "$md" \
        "$(ratio "$pe" "$md")"
done
if [ "$BIG" -gt 0 ]; then
    f=$WORK/synth-big.swf
    python3 "$ROOT/bench/synth_swf.py" --jobs "$BIG" >"$f"
    for p in easy fcfs default; do
        args=(--policy "$p"); [ "$p" = default ] && args=()
        /usr/bin/time -f "%U %S %e" -o "$WORK/t" "$MUSTER" sim --trace "$f" "${args[@]}" --json --quiet >/dev/null
        read -r u s w <"$WORK/t"
        echo "synthetic $BIG jobs, $p: cpu $(awk "BEGIN { print $u + $s }") s, wall $w s"
    done
fi
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"

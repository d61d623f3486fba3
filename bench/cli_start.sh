#!/usr/bin/env bash
# bench/cli_start.sh: issue 44 item 4 alone, for comparing builds of the
# commands: a loop of `sbatch -H --wrap true` against a loop of
# `/bin/true` (and of `sbatch --version`, process start without a
# request), on one fresh private 4-node cluster.
#
#   bench/cli_start.sh MUSTER [LABEL=CLI ...]
#
# MUSTER runs the cluster (`muster up`). Each LABEL=CLI is a commands
# binary (`muster-cli`, or a `muster`) that `sbatch` is linked to in turn;
# without one, the commands are what `muster up` links (its
# `install-links`). ROUNDS rounds (default 5) of N calls per loop
# (default 500); each round runs every build's loops one after the other,
# so builds compare within a round (same load). A static `muster-cli`
# hands itself over to the `muster` beside it in some cases
# (src/bin/muster-cli.rs): each CLI should lie beside its own `muster`.
#
# Prints one line per round and build (ms per loop, the ratio
# sbatch / true), then per build the min and median of each column.
# Stops only what it started (the PIDs `muster up` recorded).
set -uo pipefail
# Absolute: the loops run in another folder, and `down` at exit too.
MUSTER=$(readlink -f "$1")
shift
ROUNDS=${ROUNDS:-5}
N=${N:-500}
STATE=${BENCH_STATE_DIR:-/tmp/muster-cli-start}
export SLURM_CONF=$STATE/slurm.conf
down() { [ -f "$STATE/pids" ] && "$MUSTER" down --state-dir "$STATE" >/dev/null 2>&1; }
trap down EXIT
down
rm -rf "$STATE"
mkdir -p "$STATE/work"
"$MUSTER" up --detach --state-dir "$STATE" --nodes 4 >/dev/null || {
    echo "muster up failed; see $STATE/log"
    exit 1
}
builds=("$@")
[ ${#builds[@]} = 0 ] && builds=("links=$(readlink -f "$STATE/bin/sbatch")")
for b in "${builds[@]}"; do
    mkdir -p "$STATE/cli-${b%%=*}"
    ln -sf "$(readlink -f "${b#*=}")" "$STATE/cli-${b%%=*}/sbatch"
done
cd "$STATE/work" || exit 1
now_ns() { date +%s%N; }
ms_since() { echo $((($(now_ns) - $1) / 1000000)); }
out=$STATE/rounds.txt
: >"$out"
printf '%-10s %5s %8s %10s %8s %7s %5s\n' build round true_ms version_ms sbatch_ms ratio load
for ((r = 1; r <= ROUNDS; r++)); do
    for b in "${builds[@]}"; do
        label=${b%%=*}
        sb=$STATE/cli-$label/sbatch
        load=$(cut -d' ' -f1 /proc/loadavg)
        t=$(now_ns); for ((i = 0; i < N; i++)); do /bin/true; done; tr=$(ms_since "$t")
        t=$(now_ns); for ((i = 0; i < N; i++)); do "$sb" --version >/dev/null; done; ve=$(ms_since "$t")
        fails=0
        t=$(now_ns)
        for ((i = 0; i < N; i++)); do "$sb" -H --wrap true >/dev/null || fails=$((fails + 1)); done
        sbm=$(ms_since "$t")
        [ $fails = 0 ] || echo "$label: $fails submissions failed" >&2
        ratio=$(echo "scale=2; $sbm / $tr" | bc)
        printf '%-10s %5s %8s %10s %8s %7s %5s\n' "$label" "$r" "$tr" "$ve" "$sbm" "$ratio" "$load" | tee -a "$out"
    done
done
# min and median of a column (3: true, 4: version, 5: sbatch, 6: ratio)
stat() {
    awk -v b="$1" -v c="$2" '$1 == b {print $c}' "$out" | sort -g |
        awk '{v[NR] = $1} END {m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%s / %s", v[1], m}'
}
echo "min / median over $ROUNDS rounds of $N calls:"
for b in "${builds[@]}"; do
    label=${b%%=*}
    echo "$label: /bin/true $(stat "$label" 3) ms, sbatch --version $(stat "$label" 4) ms, sbatch -H --wrap true $(stat "$label" 5) ms, ratio $(stat "$label" 6)"
done

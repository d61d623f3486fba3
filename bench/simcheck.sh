#!/usr/bin/env bash
# bench/simcheck.sh: are two builds' simulations the same schedule?
#
#   bench/simcheck.sh OLD_MUSTER NEW_MUSTER [OUT_DIR]
#
# Runs `muster sim --json --quiet` of both builds on KTH-SP2 (default,
# --policy easy, --policy fcfs), NASA-iPSC (default) and the first 20,000
# (default, easy) and 50,000 (default) jobs of RICC-2010-2, and compares
# every field of the summaries except the timing ones (sim_seconds,
# jobs_per_s); KTH-SP2's per-job CSV (`--csv`) is compared with cmp.
# Prints one line per run with each build's CPU (user+sys, /usr/bin/time)
# and wall seconds, and SAME or DIFFERENT; exits 1 on any difference.
set -uo pipefail
OLD=$1 NEW=$2 OUT=${3:-$(mktemp -d /tmp/simcheck.XXXXXX)}
T=${TRACES:-/work/shared/data/traces}
KTH=$T/KTH-SP2-1996-2.1-cln.swf.gz
NASA=$T/NASA-iPSC-1993-3.1-cln.swf.gz
RICC=$T/RICC-2010-2.swf.gz
mkdir -p "$OUT/old" "$OUT/new"
status=0
strip() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [d.pop(k,None) for k in ("sim_seconds","jobs_per_s")]; print(json.dumps(d,sort_keys=True))' "$1"; }
one() {
    local name=$1; shift
    local b line
    line="$name"
    for b in old new; do
        local bin=$OLD; [ $b = new ] && bin=$NEW
        local extra=()
        [ "$name" = kth-default ] && extra=(--csv "$OUT/$b/$name.csv")
        /usr/bin/time -f "%U %S %e" -o "$OUT/$b/$name.time" \
            "$bin" sim "$@" "${extra[@]}" --json --quiet >"$OUT/$b/$name.json"
        read -r u s w <"$OUT/$b/$name.time"
        line="$line $b: cpu $(echo "$u + $s" | bc) s wall $w s;"
    done
    if [ "$(strip "$OUT/old/$name.json")" = "$(strip "$OUT/new/$name.json")" ]; then
        line="$line SAME"
    else
        line="$line DIFFERENT"; status=1
    fi
    if [ "$name" = kth-default ]; then
        if cmp -s "$OUT/old/$name.csv" "$OUT/new/$name.csv"; then
            line="$line (csv same)"
        else
            line="$line (csv DIFFERENT)"; status=1
        fi
    fi
    echo "$line load $(cut -d' ' -f1-3 /proc/loadavg)"
}
one kth-default --trace "$KTH"
one kth-easy --trace "$KTH" --policy easy
one kth-fcfs --trace "$KTH" --policy fcfs
one nasa-default --trace "$NASA"
one ricc20k-default --trace "$RICC" --limit 20000
one ricc20k-easy --trace "$RICC" --limit 20000 --policy easy
one ricc50k-default --trace "$RICC" --limit 50000
exit $status

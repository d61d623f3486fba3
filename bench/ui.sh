#!/usr/bin/env bash
# bench/ui.sh: how long the dashboard's pages take with many jobs queued
# (issue 41 item 5: a page in under 200 ms with 10,000 jobs queued).
#
#   bench/ui.sh                      # N=10000 held jobs, R=20 fetches per page
#   MUSTER=/tmp/rel/muster MUSTER_BENCH=/tmp/rel/muster-bench N=100000 bench/ui.sh
#
# A private 4-node cluster (`muster up`, fresh state, MaxJobCount raised)
# gets N held jobs from `muster-bench submit --threads 8 --hold`; then each
# page is fetched R times with curl as a logged-in user (the token cookie),
# and the median, minimum and maximum of the whole answer's time are
# printed. Measured, never asserted.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
N=${N:-10000}
R=${R:-20}
DIR=${BENCH_STATE_DIR:-/tmp/muster-ui-bench}
if [ -z "${MUSTER:-}" ]; then
    (cd "$ROOT" && cargo build --release -p muster -p bench) || exit 1
    MUSTER=$TARGET/release/muster
fi
MUSTER_BENCH=${MUSTER_BENCH:-$(dirname "$MUSTER")/muster-bench}
log() { printf '[ui %s] %s\n' "$(date +%T)" "$*" >&2; }
trap '"$MUSTER" down --state-dir "$DIR" >/dev/null 2>&1' EXIT

"$MUSTER" down --state-dir "$DIR" >/dev/null 2>&1
rm -rf "$DIR"
mkdir -p "$DIR"
"$MUSTER" up --detach --state-dir "$DIR" --nodes 4 >/dev/null || { log "muster up failed"; exit 1; }
"$MUSTER" down --state-dir "$DIR" >/dev/null 2>&1
printf 'MaxJobCount=%d\n' $((N * 3)) >>"$DIR/slurm.conf"
out=$("$MUSTER" up --detach --state-dir "$DIR" --nodes 4) || { log "muster up failed"; exit 1; }
url=$(printf '%s\n' "$out" | sed -n 's|^Dashboard: \(http://[^ ]*/\) .*|\1|p')
url=${url%/}
[ -n "$url" ] || { log "no dashboard URL in: $out"; exit 1; }
export SLURM_CONF=$DIR/slurm.conf
log "submitting $N held jobs"
"$MUSTER_BENCH" submit -f "$SLURM_CONF" --threads 8 --count "$N" --hold >&2
token=$("$DIR/bin/scontrol" token | sed 's/^SLURM_JWT=//')
sleep 1

page() {
    local path=$1 times=()
    for _ in $(seq "$R"); do
        times+=("$(curl -s -o /dev/null -w '%{time_total}' -b "muster_token=$token" "$url$path")")
    done
    printf '%s\n' "${times[@]}" | sort -n | awk -v p="$path" -v n="$N" '
        { t[NR] = $1 * 1000 }
        END { printf "%-14s %6d jobs: median %7.1f ms  min %7.1f  max %7.1f\n", p, n, t[int((NR + 1) / 2)], t[1], t[NR] }'
}
bytes=$(curl -s -b "muster_token=$token" "$url/jobs" | wc -c)
log "/jobs is $bytes bytes"
for p in / /jobs "/jobs?user=nobody" /jobs/1 /nodes/node1 /reservations; do
    page "$p"
done

#!/usr/bin/env bash
# bench/ui.sh: how long the dashboard's pages take with many jobs queued
# (issue 41 item 5: a page in under 200 ms with 10,000 jobs queued).
#
#   bench/ui.sh                      # builds muster + muster-bench (release), N=10000, R=50
#   MUSTER=/tmp/rel/muster MUSTER_BENCH=/tmp/rel/muster-bench N=100000 bench/ui.sh
#
# A private 4-node cluster (`muster up`, fresh state, MaxJobCount raised)
# gets 8 running jobs and N held ones (`muster-bench submit --hold`, 8
# threads, pipelined, without the caller's environment); then each page
# is fetched R times with curl as a logged-in user (the token cookie).
# Printed per page: the answer's size and the p50 and p99 (nearest rank)
# of the time to its first byte (restd renders a page whole before it
# sends it, so on loopback that is the server's time) and of the whole
# answer. Measured, never asserted.
#
# muster and muster-bench must come from the same build: a muster-bench
# built from another tree may encode submissions in an older layout, which
# the controller closes as malformed; each submission then waits out the
# client's retries (a minute), and 10,000 of them look like a hang. So
# without MUSTER both are built here together, MUSTER_BENCH defaults to
# the one beside MUSTER, and one job is submitted first with a time limit:
# if that fails the script stops and says why.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
N=${N:-10000}
R=${R:-50}
DIR=${BENCH_STATE_DIR:-/tmp/muster-ui-bench}
if [ -z "${MUSTER:-}" ]; then
    (cd "$ROOT" && cargo build --release -p muster -p bench) || exit 1
    MUSTER=$TARGET/release/muster
fi
MUSTER_BENCH=${MUSTER_BENCH:-$(dirname "$MUSTER")/muster-bench}
log() { printf '[ui %s] %s\n' "$(date +%T)" "$*" >&2; }
[ -x "$MUSTER_BENCH" ] || {
    log "no $MUSTER_BENCH: build it with muster (cargo build --release -p muster -p bench) or set MUSTER_BENCH"
    exit 1
}
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
bin=$DIR/bin

# Some running jobs, so the overview, a node's page and a running job's
# page have something to show.
for _ in $(seq 8); do
    "$bin/sbatch" -o /dev/null -t 60 --wrap 'sleep 3600' >/dev/null || { log "sbatch failed"; exit 1; }
done
running=$("$bin/squeue" -h -t R -o %i | head -1)

# One submission first: a muster-bench that cannot talk to this
# controller fails here in seconds instead of seeming to hang.
if ! timeout 30 "$MUSTER_BENCH" submit -f "$SLURM_CONF" --count 1 --hold --no-env >&2; then
    log "muster-bench could not submit one job: are $MUSTER_BENCH and $MUSTER from the same build?"
    exit 1
fi
log "submitting $((N - 1)) more held jobs"
"$MUSTER_BENCH" submit -f "$SLURM_CONF" --threads 8 --pipeline 32 --count $((N - 1)) --hold --no-env >&2
queued=$("$bin/squeue" -h -t PD -o %i | wc -l)
held=$("$bin/squeue" -h -t PD -o %i | sort -n | head -1)
log "$queued jobs pending, running: $("$bin/squeue" -h -t R -o %i | wc -l)"
token=$("$bin/scontrol" token | sed 's/^SLURM_JWT=//')
sleep 1

page() {
    local path=$1
    # One fetch first: its size, and a warm connection pool in restd.
    local bytes
    bytes=$(curl -s -b "muster_token=$token" "$url$path" | wc -c)
    for _ in $(seq "$R"); do
        curl -s -o /dev/null -w '%{time_starttransfer} %{time_total}\n' -b "muster_token=$token" "$url$path"
    done | awk -v p="$path" -v q="$queued" -v b="$bytes" '
        { f[NR] = $1 * 1000; t[NR] = $2 * 1000 }
        function pct(a, n, x,   i, j, k, tmp) {
            for (i = 1; i <= n; i++) s[i] = a[i]
            for (i = 2; i <= n; i++) { tmp = s[i]; for (j = i - 1; j >= 1 && s[j] > tmp; j--) s[j + 1] = s[j]; s[j + 1] = tmp }
            k = int(x * n + 0.999999); if (k < 1) k = 1; if (k > n) k = n
            return s[k]
        }
        END {
            printf "%-28s %6d pending %8d bytes: server p50 %7.1f ms p99 %7.1f | whole p50 %7.1f p99 %7.1f\n",
                p, q, b, pct(f, NR, 0.5), pct(f, NR, 0.99), pct(t, NR, 0.5), pct(t, NR, 0.99)
        }'
}
for p in / /jobs "/jobs?state=PENDING&sort=priority" "/jobs?user=nobody" "/jobs?page=20" \
    "/jobs/$held" "/jobs/$running" /nodes/node1 /history /fairshare /reservations /sim; do
    page "$p"
done

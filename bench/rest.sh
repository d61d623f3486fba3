#!/usr/bin/env bash
# bench/rest.sh: the REST API's numbers (issue 40 item 6), on a private
# 4-node cluster (`muster up`: controller, node daemons and `muster restd`
# on loopback, fresh state):
#
#   1. watch latency: `muster-bench rest-watch` opens /muster/v1/watch and
#      times each job's `started` event on the idle cluster (W jobs);
#   2. submissions per second over REST with 8 concurrent clients
#      (`muster-bench rest-submit --threads 8`, S held jobs);
#   3. `GET /slurm/v0.0.38/jobs` with about 10,000 and then 100,000 jobs
#      (topped up with held jobs through the client library, which is
#      faster than REST), R calls each (`muster-bench rest-get`).
#
#   bench/rest.sh                         # release build of this tree
#   MUSTER=target/debug/muster MUSTER_BENCH=target/debug/muster-bench bench/rest.sh
#   W=500 S=20000 SIZES="10000 100000" R=10 bench/rest.sh
#
# Measured, never asserted: the lines muster-bench prints are the result.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
W=${W:-200}
S=${S:-10000}
SIZES=${SIZES:-10000 100000}
R=${R:-10}
DIR=${BENCH_STATE_DIR:-/tmp/muster-rest-bench}
if [ -z "${MUSTER:-}" ]; then
    (cd "$ROOT" && cargo build --release -p muster -p bench) || exit 1
    MUSTER=$TARGET/release/muster
fi
MUSTER_BENCH=${MUSTER_BENCH:-$(dirname "$MUSTER")/muster-bench}
# Absolute, so that the calls made from other folders (and `down`) find them.
MUSTER=$(readlink -f "$MUSTER")
MUSTER_BENCH=$(readlink -f "$MUSTER_BENCH")
log() { printf '[rest %s] %s\n' "$(date +%T)" "$*" >&2; }
down() { "$MUSTER" down --state-dir "$DIR" >/dev/null 2>&1; true; }
trap down EXIT

down
rm -rf "$DIR"
mkdir -p "$DIR"
"$MUSTER" up --detach --state-dir "$DIR" --nodes 4 >/dev/null || { log "muster up failed"; exit 1; }
down
last=${SIZES##* }
printf 'MaxJobCount=%d\n' $((last * 2 + S + W)) >>"$DIR/slurm.conf"
out=$("$MUSTER" up --detach --state-dir "$DIR" --nodes 4) || { log "muster up failed"; exit 1; }
URL=$(printf '%s\n' "$out" | grep -o 'http://127\.0\.0\.1:[0-9]*' | head -n1)
[ -n "$URL" ] || { log "no REST URL in: $out"; exit 1; }
CONF=$DIR/slurm.conf
export SLURM_CONF=$CONF
cd "$DIR" || exit 1
log "cluster up, REST at $URL"

log "watch stream: $W jobs, one at a time"
"$MUSTER_BENCH" rest-watch -f "$CONF" --url "$URL" --count "$W" --gap-ms 20

log "REST submissions: $S held jobs, 8 clients"
"$MUSTER_BENCH" rest-submit -f "$CONF" --url "$URL" --threads 8 --count "$S" --hold

for n in $SIZES; do
    have=$("$MUSTER_BENCH" count -f "$CONF" | sed -n 's/.*jobs=\([0-9]*\).*/\1/p')
    if [ "${have:-0}" -lt "$n" ]; then
        log "topping up to $n jobs (have $have)"
        "$MUSTER_BENCH" submit -f "$CONF" --threads 8 --count $((n - have)) --hold --no-env >/dev/null
    fi
    have=$("$MUSTER_BENCH" count -f "$CONF" | sed -n 's/.*jobs=\([0-9]*\).*/\1/p')
    log "GET /slurm/v0.0.38/jobs with $have jobs, $R calls"
    "$MUSTER_BENCH" rest-get -f "$CONF" --url "$URL" --path /slurm/v0.0.38/jobs --count "$R"
done

#!/usr/bin/env bash
# bench/memrestart.sh: items 8(e) and 8(f) alone (and 8(a) at 32 threads),
# for comparing builds: memory per held job and restart time with COUNT
# held jobs on a fresh private one-node cluster.
#
#   bench/memrestart.sh LABEL MUSTER MUSTER_BENCH [COUNT]
#
# Prints one line: ctld VmRSS empty and with COUNT held jobs (read 1.5 s
# after the last submission, once the controller's trim has run) and the
# difference per job; the restart (SIGTERM, start `muster ctld` again) to
# the first answer and to a full ListJobs; VmRSS 1.5 s after the restart;
# the newest snapshot's size; library submissions at 32 threads (20,000,
# on a cluster of their own). Then the controller's own account of its
# recovery (read, decode, restore, replay). With STATS=1 the controller's
# glibc malloc_stats (live heap per arena) go to its log, by gdb, after the
# fill and after the restart. Stops only what it started.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/restart.sh"
LABEL=$1 MUSTER=$2 MB=$3 N=${4:-100000}
STATE=${BENCH_STATE_DIR:-/tmp/muster-memrestart-$LABEL}
CONF=$STATE/slurm.conf
export SLURM_CONF=$CONF
ctld_pid() { awk '$2 == "ctld" {print $1}' "$STATE/pids" 2>/dev/null; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null; }
kv() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p" | head -1; }
stats() { [ -n "${STATS:-}" ] && gdb -p "$1" -batch -ex 'call (void)malloc_stats()' >/dev/null 2>&1; }
down() { [ -f "$STATE/pids" ] && "$MUSTER" down --state-dir "$STATE" >/dev/null 2>&1; }
fresh() {
    down
    rm -rf "$STATE/ctld" "$STATE/spool" "$STATE/log"
    "$MUSTER" up --detach --state-dir "$STATE" --nodes 1 >/dev/null || { echo "$LABEL up failed"; exit 1; }
    sleep 1
}
trap down EXIT
mkdir -p "$STATE"
down
if ! grep -q '^MaxJobCount' "$CONF" 2>/dev/null; then
    rm -rf "${STATE:?}"/*
    fresh
    down
    echo "MaxJobCount=$((N * 2))" >>"$CONF"
fi
fresh
lib=$("$MB" submit -f "$CONF" --threads 32 --count 20000 --hold 2>/dev/null | tail -1)
fresh
pid=$(ctld_pid)
rss0=$(rss_kb "$pid")
"$MB" submit -f "$CONF" --threads 8 --count "$N" --hold >/dev/null 2>&1
sleep 1.5
rss=$(rss_kb "$pid")
stats "$pid"
restart_ctld "$pid"
sleep 1.5
rss_r=$(rss_kb "$newpid")
stats "$newpid"
snap=$(find "$STATE/ctld" -name '*.snap' -printf '%T@ %s\n' | sort -n | tail -1 | cut -d' ' -f2)
echo "$LABEL rss0=$rss0 rss=$rss per_job=$(((rss - rss0) * 1024 / N)) restart_ping=$(since_t0 "$(kv "$line" answered_at)") restart_list=$(since_t0 "$(kv "$line" listed_at)") jobs=$(kv "$line" jobs) rss_restarted=$rss_r snapshot=$snap lib32_per_s=$(kv "$lib" jobs_per_s)"
grep 'recovered' "$STATE/log/ctld.log" | tail -1 | sed 's/.*INFO ctld::durable: /  /'

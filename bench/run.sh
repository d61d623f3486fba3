#!/usr/bin/env bash
# bench/run.sh: muster's end-to-end performance measurements (issue item 8).
#
#   bench/run.sh                 # build (release), measure, print the table
#   bench/run.sh --record        # ... and write bench/results/<date>-<machine>.md
#   QUICK=1 bench/run.sh         # counts divided by 10, for a smoke run
#
# Environment: BENCH_STATE_DIR (default /tmp/muster-bench), CARGO_TARGET_DIR,
# MUSTER / MUSTER_BENCH (prebuilt binaries; then nothing is built),
# BENCH_MACHINE (the <machine> part of the results file name).
#
# It starts its own 4-node cluster in its own state directory, restarts it
# fresh (empty journal) between phases so one phase's jobs do not weigh on the
# next, and stops only the processes it started, by the PIDs `muster up`
# recorded (and the one controller it restarts itself). Measured, never
# asserted: a failed step shows as "failed" in the table and the run goes on.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/restart.sh"

ROOT=$(cd "$(dirname "$0")/.." && pwd)
STATE=${BENCH_STATE_DIR:-/tmp/muster-bench}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
RECORD=0
[ "${1:-}" = "--record" ] && RECORD=1

SCALE=1
[ "${QUICK:-0}" != 0 ] && SCALE=10
N_CLI=$((500 / SCALE))       # (a) sbatch loop length
N_LIB=$((20000 / SCALE))     # (a) library submissions per thread setting
N_LAT=$((200 / SCALE))       # (b) jobs for submit-to-start latency
N_RUN=$((2000 / SCALE))      # (c) trivial jobs run to completion
N_SMALL=$((10000 / SCALE))   # (d) pending jobs, small queue
N_BIG=$((100000 / SCALE))    # (d)(e)(f) pending jobs, big queue
NODES=4

if [ -n "${MUSTER:-}" ] && [ -n "${MUSTER_BENCH:-}" ]; then
    :
else
    (cd "$ROOT" && cargo build --release -p muster -p bench) || exit 1
    MUSTER=$TARGET/release/muster
    MUSTER_BENCH=$TARGET/release/muster-bench
fi
MB=$MUSTER_BENCH
CONF=$STATE/slurm.conf
WORK=$STATE/work
export SLURM_CONF=$CONF
export PATH="$STATE/bin:$PATH"

declare -A R   # results: key -> value
log() { printf '[bench %s] %s\n' "$(date +%T)" "$*" >&2; }
now_ns() { date +%s%N; }
ms_since() { echo $((($(now_ns) - $1) / 1000000)); }
kv() { # kv LINE KEY -> value of KEY=... in LINE
    tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p" | head -1
}
ctld_pid() { awk '$2 == "ctld" {print $1}' "$STATE/pids" 2>/dev/null; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null; }

down() {
    if [ -f "$STATE/pids" ]; then
        "$MUSTER" down --state-dir "$STATE" >/dev/null 2>&1 || true
    fi
}
trap down EXIT

# A fresh cluster: the same slurm.conf (ports, MaxJobCount), an empty journal.
fresh() {
    down
    rm -rf "$STATE/ctld" "$STATE/spool" "$STATE/log" "$WORK"
    mkdir -p "$WORK"
    "$MUSTER" up --detach --state-dir "$STATE" --nodes $NODES >/dev/null || {
        log "muster up failed; see $STATE/log"
        return 1
    }
}

mkdir -p "$STATE"
down
if ! grep -q '^MaxJobCount' "$CONF" 2>/dev/null; then
    # Let `muster up` write its slurm.conf for this host, then allow the big queue.
    rm -rf "$STATE"/*
    "$MUSTER" up --detach --state-dir "$STATE" --nodes $NODES >/dev/null || exit 1
    down
    echo "MaxJobCount=$((N_BIG * 3))" >>"$CONF"
fi

# ---------------------------------------------------------------- machine
R[date]=$(date -u +%FT%TZ)
R[nproc]=$(nproc)
R[cpu]=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
R[kernel]=$(uname -r)
R[mem]=$(awk '/^MemTotal:/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)
dev=$(findmnt -n -o SOURCE -T "$STATE" 2>/dev/null)
fs=$(findmnt -n -o FSTYPE -T "$STATE" 2>/dev/null)
blk=$(basename "${dev:-none}")
blk=${blk%%[0-9]*}
rota=$(cat "/sys/block/$blk/queue/rotational" 2>/dev/null || echo '?')
R[disk]="$dev ($fs, rotational=$rota)"
R[commit]=$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null)$(cd "$ROOT" && git diff --quiet HEAD 2>/dev/null || echo '+dirty')
log "machine: ${R[nproc]} x ${R[cpu]}, kernel ${R[kernel]}, ${R[disk]}"

# ---------------------------------------------------------------- (a) CLI
fresh || exit 1
cd "$WORK" || exit 1
log "(a) CLI: $N_CLI x /bin/true, sbatch --version, sbatch -H --wrap true; then 8 loops"
t=$(now_ns); for ((i = 0; i < N_CLI; i++)); do /bin/true; done; R[true_ms]=$(ms_since "$t")
t=$(now_ns); for ((i = 0; i < N_CLI; i++)); do sbatch --version >/dev/null; done; R[version_ms]=$(ms_since "$t")
fails=0
t=$(now_ns)
for ((i = 0; i < N_CLI; i++)); do sbatch -H --wrap true >/dev/null || fails=$((fails + 1)); done
R[cli1_ms]=$(ms_since "$t")
R[cli1_fail]=$fails
loop() { local f=0; for ((i = 0; i < N_CLI; i++)); do sbatch -H --wrap true >/dev/null || f=$((f + 1)); done; echo $f >"$WORK/fail.$1"; }
t=$(now_ns)
for k in 1 2 3 4 5 6 7 8; do loop $k & done
wait
R[cli8_ms]=$(ms_since "$t")
R[cli8_fail]=$(cat "$WORK"/fail.* | paste -sd+ | bc)
R[cli1_rate]=$(echo "scale=0; $N_CLI * 1000 / ${R[cli1_ms]}" | bc)
R[cli8_rate]=$(echo "scale=0; 8 * $N_CLI * 1000 / ${R[cli8_ms]}" | bc)
R[cli_vs_true]=$(echo "scale=1; ${R[cli1_ms]} / ${R[true_ms]}" | bc)
cd "$ROOT" || exit 1

# ------------------------------------------------------- (a) client library
# Kept connection (one Client per thread, its connection kept from call to
# call: a credential on the first, then its session), the default of muster-bench submit.
for th in 1 8 32; do
    fresh || exit 1
    log "(a) library: $N_LIB held submissions, $th threads, kept connections"
    line=$("$MB" submit -f "$CONF" --threads $th --count $N_LIB --hold) || line="failed"
    log "$line"
    R[lib${th}_rate]=$(kv "$line" jobs_per_s)
    R[lib${th}_p50]=$(kv "$line" call_p50_ms)
    R[lib${th}_p99]=$(kv "$line" call_p99_ms)
    R[lib${th}_err]=$(kv "$line" errors)
    if [ $th = 8 ]; then
        R[journal_bytes_per_job]=$(($(du -sb "$STATE/ctld" | cut -f1) / N_LIB))
    fi
done
# A fresh Client and TCP connection per call, as the commands do.
fresh || exit 1
log "(a) library: $N_LIB held submissions, 32 threads, a fresh connection per call"
line=$("$MB" submit -f "$CONF" --threads 32 --count $N_LIB --hold --fresh) || line="failed"
log "$line"
R[libfresh_rate]=$(kv "$line" jobs_per_s)
R[libfresh_p50]=$(kv "$line" call_p50_ms)
R[libfresh_p99]=$(kv "$line" call_p99_ms)
# Pipelined: 32 submissions in flight per kept connection.
for th in 2 8; do
    fresh || exit 1
    log "(a) library: $N_LIB held submissions, $th threads, 32 in flight per connection"
    line=$("$MB" submit -f "$CONF" --threads $th --count $N_LIB --hold --pipeline 32) || line="failed"
    log "$line"
    R[libpipe${th}_rate]=$(kv "$line" jobs_per_s)
    R[libpipe${th}_p50]=$(kv "$line" call_p50_ms)
    R[libpipe${th}_p99]=$(kv "$line" call_p99_ms)
done

# ------------------------------------------------- (b) latency, (c) throughput
fresh || exit 1
log "(b) submit-to-start latency, $N_LAT jobs one at a time (job writes its start time)"
line=$("$MB" latency -f "$CONF" --count $N_LAT --method file --dir "$WORK/lat") || line=failed
log "$line"
R[lat_file_p50]=$(kv "$line" p50_ms); R[lat_file_p99]=$(kv "$line" p99_ms); R[lat_file_max]=$(kv "$line" max_ms)
R[lat_ack_p50]=$(kv "$line" submit_ack_p50_ms); R[lat_ack_p99]=$(kv "$line" submit_ack_p99_ms)
log "(b) submit-to-RUNNING latency, $N_LAT jobs (ListJobs polled every ms)"
line=$("$MB" latency -f "$CONF" --count $N_LAT --method poll) || line=failed
log "$line"
R[lat_poll_p50]=$(kv "$line" p50_ms); R[lat_poll_p99]=$(kv "$line" p99_ms); R[lat_poll_max]=$(kv "$line" max_ms)

fresh || exit 1
log "(c) $N_RUN trivial jobs to completion on $NODES nodes"
line=$("$MB" run -f "$CONF" --count $N_RUN --threads 8 --workdir "$WORK" --timeout 600) || line=failed
log "$line"
R[run_secs]=$(kv "$line" total_secs); R[run_rate]=$(kv "$line" jobs_per_s)
R[run_submit_secs]=$(kv "$line" submit_secs)
R[run_done]=$(kv "$line" completed); R[run_bad]=$(kv "$line" not_completed); R[run_left]=$(kv "$line" unfinished)

# ------------------------------------- (d) squeue/sinfo, (e) memory, (f) restart
time_cmds() { # time_cmds TAG: squeue and sinfo wall time, median in ms
    local tag=$1 out
    if squeue >/dev/null 2>"$WORK/squeue.err"; then R[${tag}_squeue_ok]=yes; else
        R[${tag}_squeue_ok]="fails: $(head -c 160 "$WORK/squeue.err" | tr '\n' ' ')"
    fi
    if command -v hyperfine >/dev/null; then
        out=$WORK/hf-$tag.json
        hyperfine -N -i --warmup 1 --runs "${RUNS:-10}" --export-json "$out" squeue sinfo >/dev/null 2>&1
        read -r sq si < <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"]; print(" ".join("%.1f" % (x["median"]*1000) for x in r))' "$out")
    else
        local t
        t=$(now_ns); for i in 1 2 3 4 5; do squeue >/dev/null 2>&1; done; sq=$(($(ms_since "$t") / 5))
        t=$(now_ns); for i in 1 2 3 4 5; do sinfo >/dev/null 2>&1; done; si=$(($(ms_since "$t") / 5))
    fi
    R[${tag}_squeue]=$sq; R[${tag}_sinfo]=$si
}

fresh || exit 1
pid=$(ctld_pid)
sleep 1
R[rss0]=$(rss_kb "$pid")
log "(d)(e) filling the queue to $N_SMALL held jobs (ctld pid $pid, VmRSS ${R[rss0]} kB)"
"$MB" submit -f "$CONF" --threads 8 --count $N_SMALL --hold >&2
# The controller gives freed memory back (malloc_trim) once requests
# have stopped for 250 ms: read its RSS after that, so the figure is what
# it keeps, not what glibc happened to hold on to.
sleep 1
R[rss_small]=$(rss_kb "$pid")
time_cmds small
log "squeue ${R[small_squeue]} ms, sinfo ${R[small_sinfo]} ms with $N_SMALL pending"
log "(d)(e) filling the queue to $N_BIG held jobs"
"$MB" submit -f "$CONF" --threads 8 --count $((N_BIG - N_SMALL)) --hold >&2
sleep 1
R[rss_big]=$(rss_kb "$pid")
R[bytes_per_job]=$(((R[rss_big] - R[rss0]) * 1024 / N_BIG))
R[bytes_per_job_marginal]=$(((R[rss_big] - R[rss_small]) * 1024 / (N_BIG - N_SMALL)))
R[state_bytes]=$(du -sb "$STATE/ctld" | cut -f1)
RUNS=5 time_cmds big
log "squeue ${R[big_squeue]} ms, sinfo ${R[big_sinfo]} ms with $N_BIG pending"

log "(f) restart: SIGTERM the controller, start it again, time until it answers"
restart_ctld "$pid"
log "$line"
R[restart_ping]=$(since_t0 "$(kv "$line" answered_at)")
R[restart_list]=$(since_t0 "$(kv "$line" listed_at)")
R[restart_jobs]=$(kv "$line" jobs)
sleep 1
R[rss_restarted]=$(rss_kb "$newpid")
down

# ---------------------------------------------------------------- report
v() { echo "${R[$1]:-failed}"; }
kib() { echo "scale=2; $1 / 1024" | bc; }
table=$(cat <<EOF
| measurement | muster | target | Slurm 22.05 |
|---|---|---|---|
| sbatch loop, 1 client ($N_CLI) | $(v cli1_rate)/s ($(v cli1_ms) ms, $(v cli1_fail) failed) | ≥ 5× Slurm (≥ 725/s) | 145/s |
| sbatch loops, 8 clients (8×$N_CLI) | $(v cli8_rate)/s ($(v cli8_ms) ms, $(v cli8_fail) failed) | ≥ 5× Slurm | 240–330/s |
| loop of /bin/true ($N_CLI) | $(v true_ms) ms | | |
| loop of \`sbatch --version\` ($N_CLI, no RPC) | $(v version_ms) ms | | |
| sbatch loop / /bin/true loop | $(v cli_vs_true)× | ≤ 3× | |
| library submit, 1 thread, kept connection ($N_LIB) | $(v lib1_rate)/s (call p50 $(v lib1_p50) ms, p99 $(v lib1_p99) ms) | ≥ 20,000/s | |
| library submit, 8 threads, kept connections ($N_LIB) | $(v lib8_rate)/s (call p50 $(v lib8_p50) ms, p99 $(v lib8_p99) ms) | ≥ 20,000/s | |
| library submit, 32 threads, kept connections ($N_LIB) | $(v lib32_rate)/s (call p50 $(v lib32_p50) ms, p99 $(v lib32_p99) ms) | ≥ 20,000/s | |
| library submit, 32 threads, fresh connection per call ($N_LIB) | $(v libfresh_rate)/s (call p50 $(v libfresh_p50) ms, p99 $(v libfresh_p99) ms) | | |
| library submit, 2 threads × 32 in flight ($N_LIB) | $(v libpipe2_rate)/s (batch p50 $(v libpipe2_p50) ms, p99 $(v libpipe2_p99) ms) | ≥ 20,000/s | |
| library submit, 8 threads × 32 in flight ($N_LIB) | $(v libpipe8_rate)/s (batch p50 $(v libpipe8_p50) ms, p99 $(v libpipe8_p99) ms) | ≥ 20,000/s | |
| state on disk per submitted job (journal + snapshots, 8 threads) | $(v journal_bytes_per_job) B | | |
| submit → job script running, p50 / p99 / max ($N_LAT) | $(v lat_file_p50) / $(v lat_file_p99) / $(v lat_file_max) ms | p99 < 10 ms | 0.05–2.5 s |
| submit → RUNNING in ListJobs, p50 / p99 / max ($N_LAT) | $(v lat_poll_p50) / $(v lat_poll_p99) / $(v lat_poll_max) ms | p99 < 10 ms | |
| submit acknowledged (idle), p50 / p99 | $(v lat_ack_p50) / $(v lat_ack_p99) ms | | |
| $N_RUN trivial jobs to completion, $NODES nodes | $(v run_rate) jobs/s ($(v run_secs) s; submit $(v run_submit_secs) s; $(v run_done) completed, $(v run_bad) other, $(v run_left) unfinished) | ≥ 500/s | 4–11/s |
| squeue, $N_SMALL pending | $(v small_squeue) ms ($(v small_squeue_ok)) | < 20 ms | 110 ms |
| sinfo, $N_SMALL pending | $(v small_sinfo) ms | | |
| squeue, $N_BIG pending | $(v big_squeue) ms ($(v big_squeue_ok)) | < 100 ms | |
| sinfo, $N_BIG pending | $(v big_sinfo) ms | | |
| ctld VmRSS: empty / $N_SMALL / $N_BIG held | $(v rss0) / $(v rss_small) / $(v rss_big) kB | | |
| ctld memory per pending job | $(v bytes_per_job) B (marginal $(v bytes_per_job_marginal) B) | ≤ 1024 B | ≈ 4.6 KB |
| controller state on disk, $N_BIG jobs | $(v state_bytes) B | | |
| restart with $N_BIG jobs: to first answer / to full ListJobs | $(v restart_ping) s / $(v restart_list) s ($(v restart_jobs) jobs) | < 2 s | 3.7–4.2 s (10,000 jobs) |
| ctld VmRSS after restart | $(v rss_restarted) kB | | |
EOF
)
header="muster $(v commit), $(v date); $(v nproc) CPUs ($(v cpu)), $(v mem), kernel $(v kernel); state on $(v disk)"
echo
echo "$header"
echo
echo "$table"
if [ $RECORD = 1 ]; then
    machine=${BENCH_MACHINE:-$(nproc)cpu-$(hostname -s)}
    out=$ROOT/bench/results/$(date -u +%F)-$machine.md
    mkdir -p "$(dirname "$out")"
    { echo "# bench/run.sh, $(date -u +%F), $machine"; echo; echo "$header"; echo; echo "$table"; } >"$out"
    log "wrote $out"
fi

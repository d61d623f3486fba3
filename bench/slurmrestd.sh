#!/usr/bin/env bash
# bench/slurmrestd.sh: slurmrestd 22.05 beside muster's REST numbers (issue 40
# item 6): REST submissions per second with 8 clients and
# `GET /slurm/v0.0.38/jobs` with N held jobs, with the same client
# (`muster-bench rest-submit|rest-get`, token from SLURM_JWT).
#
# As root. Slurm is not installed: Debian's packages are unpacked into
# SR (default /tmp/slurm-root) by
#   apt-get download slurmrestd slurmctld slurm-wlm-basic-plugins slurm-client \
#     slurm-wlm-jwt-plugin libhttp-parser2.9 libjwt0 liblua5.1-0 libb64-0d
#   for d in *.deb; do dpkg -x "$d" /tmp/slurm-root; done
#   ln -s slurmctld-wlm /tmp/slurm-root/usr/sbin/slurmctld   # AuthAltTypes loads only in a program named slurmctld
# and everything runs inside a network namespace of its own (`unshare -n`,
# loopback plus a veth pair: Slurm resolves with AI_ADDRCONFIG), with a
# private munged, slurm.conf and state under R (default /tmp/slurm-run).
# Only what this script started is stopped, by PID.
#
#   N=10000 R_CALLS=5 MUSTER_BENCH=target/release/muster-bench unshare -n bench/slurmrestd.sh
set -u
R=${R:-/tmp/slurm-run}; SR=${SR:-/tmp/slurm-root}
mkdir -p "$R"
cat >"$R/slurm.conf" <<CONF
ClusterName=cmp
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=26817
SlurmdPort=26818
AuthType=auth/munge
AuthInfo=socket=$R/munge.sock
CredType=cred/munge
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$R/jwt.key
StateSaveLocation=$R/state
SlurmdSpoolDir=$R/spool
SlurmctldPidFile=$R/slurmctld.pid
SlurmdPidFile=$R/slurmd.pid
SlurmctldLogFile=$R/slurmctld.log
SlurmctldDebug=info
PluginDir=$SR/usr/lib/x86_64-linux-gnu/slurm-wlm
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
MaxJobCount=300000
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName=sn[1-4] NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=sn[1-4] Default=YES MaxTime=INFINITE State=UP
CONF
export LD_LIBRARY_PATH=$SR/usr/lib/x86_64-linux-gnu:$SR/usr/lib/x86_64-linux-gnu/slurm-wlm
export SLURM_CONF=$R/slurm.conf
B=${MUSTER_BENCH:-$(cd "$(dirname "$0")/.." && pwd)/target/release/muster-bench}
N=${N:-10000}
ip link set lo up
# Slurm resolves with AI_ADDRCONFIG: it needs one non-loopback address (a veth pair inside this namespace, reachable from nowhere).
ip link add msa type veth peer name msb && ip addr add 10.254.0.1/24 dev msa && ip link set msa up && ip link set msb up
rm -rf $R/state $R/spool; mkdir -p $R/state $R/spool
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; sleep 1; for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; }
trap cleanup EXIT
[ -f $R/munge.key ] || { dd if=/dev/urandom of=$R/munge.key bs=1024 count=1 2>/dev/null; chmod 400 $R/munge.key; }
[ -f $R/jwt.key ] || { dd if=/dev/urandom of=$R/jwt.key bs=32 count=1 2>/dev/null; chmod 600 $R/jwt.key; }
munged --force --foreground --socket=$R/munge.sock --key-file=$R/munge.key --pid-file=$R/munged.pid --log-file=$R/munged.log --seed-file=$R/munge.seed &
pids+=($!); sleep 1
$SR/usr/sbin/slurmctld -D -i -f $R/slurm.conf > $R/slurmctld.out 2>&1 &
pids+=($!)
for i in $(seq 1 30); do $SR/usr/bin/scontrol ping 2>/dev/null | grep -q UP && break; sleep 1; done
$SR/usr/bin/scontrol ping
tok=$($SR/usr/bin/scontrol token lifespan=7200) || { $SR/usr/bin/scontrol -vvv token 2>&1 | tail -n 15; grep -i -e jwt -e auth $R/slurmctld.log | tail -n 5; exit 1; }; eval "$tok"; export SLURM_JWT; echo "token: ${SLURM_JWT:0:12}..."
chown nobody $R 2>/dev/null
$SR/usr/sbin/slurmrestd -f $R/slurm.conf -a rest_auth/jwt -s openapi/v0.0.38 -u nobody -g nogroup 127.0.0.1:26820 > $R/slurmrestd.out 2>&1 &
pids+=($!); sleep 2
export USER=root
curl -s -m 10 -H "X-SLURM-USER-NAME: root" -H "X-SLURM-USER-TOKEN: $SLURM_JWT" http://127.0.0.1:26820/slurm/v0.0.38/ping | head -c 600; echo
curl -s -m 10 -H "X-SLURM-USER-NAME: root" -H "X-SLURM-USER-TOKEN: $SLURM_JWT" -H 'Content-Type: application/json' -d '{"job":{"name":"t","tasks":1,"hold":true,"current_working_directory":"/tmp","environment":{"PATH":"/bin"}},"script":"#!/bin/sh\ntrue\n"}' http://127.0.0.1:26820/slurm/v0.0.38/job/submit | head -c 800; echo
[ "${PROBE:-0}" = 1 ] && exit 0
cd /tmp
echo "== slurmrestd REST submissions: $N held jobs, 8 clients"
$B rest-submit --url 127.0.0.1:26820 --threads 8 --count $N --hold
$SR/usr/bin/squeue -h | wc -l
echo "== slurmrestd GET /slurm/v0.0.38/jobs, ${R_CALLS:-10} calls"
$B rest-get --url 127.0.0.1:26820 --path /slurm/v0.0.38/jobs --count ${R_CALLS:-10}

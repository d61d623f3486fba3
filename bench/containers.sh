#!/usr/bin/env bash
# bench/containers.sh: step start-up in a pyxis container (issue 42) against a
# plain step, on a private one-node cluster: wall time of `srun true` from the
# command's start to its exit, for
#   plain         no container
#   busybox       a 2 MiB squashfs file (busybox-static)
#   1g-sqsh-cold  a 1 GiB squashfs file whose pages were dropped from the page
#                 cache first (posix_fadvise DONTNEED on that file only)
#   1g-sqsh-warm  the same file, cached
#   1g-oci-first  a 1 GiB OCI layout (one uncompressed layer) not yet in the
#                 node's image cache: import (digest check, unpack, mksquashfs)
#   1g-oci-cached the same layout, imported before (the cache hit)
#
#   bench/containers.sh                         # release build, 10 runs per warm mode
#   RUNS=5 MUSTER=target/debug/muster bench/containers.sh   # a prebuilt binary; nothing is built
#   SIZE_MB=256 bench/containers.sh             # another image size
#   AS_USER=alice bench/containers.sh           # the steps are that user's, not root's
#
# Root's steps mount the image with the kernel (a loop device); another
# user's are built the rootless way, as that user (squashfuse in a user
# namespace). With AS_USER every srun, plain ones too, goes through
# runuser, so the rows stay comparable with each other (not with root's).
#
# Needs root (mount namespaces, loop devices), mksquashfs, /bin/busybox and
# python3. Images live under $BENCH_STATE_DIR (default /tmp/muster-bench-ctr),
# built once and kept between runs. Stops only what it started, by the PIDs
# `muster up` recorded. Measured, never asserted.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BASE=${BENCH_STATE_DIR:-/tmp/muster-bench-ctr}
RUNS=${RUNS:-10}
COLD_RUNS=${COLD_RUNS:-3}
SIZE_MB=${SIZE_MB:-1024}

if [ "$(id -u)" != 0 ]; then
    echo "bench/containers.sh: needs root (mount namespaces)" >&2
    exit 1
fi
if [ -z "${MUSTER:-}" ]; then
    (cd "$ROOT" && cargo build --release -p muster) || exit 1
    MUSTER=$TARGET/release/muster
fi
MUSTER=$(realpath "$MUSTER")
log() { printf '[containers %s] %s\n' "$(date +%T)" "$*" >&2; }

STATE=$BASE/state
down() {
    if [ -f "$STATE/pids" ]; then
        "$MUSTER" down --state-dir "$STATE" >/dev/null 2>&1 || true
    fi
}
trap down EXIT

# The images: a busybox root file system, and the same with SIZE_MB of
# random (incompressible) data, as squashfs and as an OCI layout.
mkdir -p "$BASE"
IMG=$BASE/img
if [ ! -f "$IMG/done-$SIZE_MB" ]; then
    log "building the images ($SIZE_MB MiB)"
    rm -rf "$IMG"
    mkdir -p "$IMG/rootfs"/{bin,etc,proc,sys,dev,tmp,root,data,usr/bin}
    cp /bin/busybox "$IMG/rootfs/bin/busybox"
    chroot "$IMG/rootfs" /bin/busybox --install -s /bin
    printf 'PRETTY_NAME="bench image"\n' >"$IMG/rootfs/etc/os-release"
    mksquashfs "$IMG/rootfs" "$IMG/busybox.sqsh" -noappend -quiet -no-progress
    head -c "$((SIZE_MB << 20))" /dev/urandom >"$IMG/rootfs/data/blob"
    mksquashfs "$IMG/rootfs" "$IMG/big.sqsh" -noappend -quiet -no-progress
    python3 - "$IMG/rootfs" "$IMG/oci" <<'EOF'
import hashlib, io, json, os, sys, tarfile
rootfs, out = sys.argv[1], sys.argv[2]
blobs = os.path.join(out, "blobs", "sha256")
os.makedirs(blobs)
def put(data):
    d = hashlib.sha256(data).hexdigest()
    open(os.path.join(blobs, d), "wb").write(data)
    return d, len(data)
layer = os.path.join(out, "layer.tar")
with tarfile.open(layer, "w", format=tarfile.PAX_FORMAT) as t:
    t.add(rootfs, arcname=".")
h = hashlib.sha256()
with open(layer, "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
        h.update(chunk)
ld = h.hexdigest()
size = os.path.getsize(layer)
os.rename(layer, os.path.join(blobs, ld))
config = json.dumps({"architecture": "amd64", "os": "linux",
    "config": {"Env": ["PATH=/bin"]},
    "rootfs": {"type": "layers", "diff_ids": ["sha256:" + ld]}}).encode()
cd, cs = put(config)
manifest = json.dumps({"schemaVersion": 2,
    "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": "sha256:" + cd, "size": cs},
    "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": "sha256:" + ld, "size": size}]}).encode()
md, ms = put(manifest)
json.dump({"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
    "digest": "sha256:" + md, "size": ms, "annotations": {"org.opencontainers.image.ref.name": "latest"}}]},
    open(os.path.join(out, "index.json"), "w"))
json.dump({"imageLayoutVersion": "1.0.0"}, open(os.path.join(out, "oci-layout"), "w"))
EOF
    rm -rf "$IMG/rootfs/data/blob"
    touch "$IMG/done-$SIZE_MB"
fi
log "images: $(du -sh "$IMG/big.sqsh" | cut -f1) squashfs, $(du -sh "$IMG/oci" | cut -f1) OCI layout"

# A fresh one-node cluster with the image cache in $BASE/cache.
down
rm -rf "$STATE" "$BASE/cache"
mkdir -p "$STATE"
"$MUSTER" up --detach --state-dir "$STATE" --nodes 1 >/dev/null 2>&1 || {
    echo "muster up failed" >&2
    exit 1
}
export SLURM_CONF=$STATE/slurm.conf
printf 'cache_dir=%s\n' "$BASE/cache" >"$STATE/pyxis.conf"
for _ in $(seq 100); do
    "$MUSTER" srun true >/dev/null 2>&1 && break
    sleep 0.1
done

# `srun ARGS...`, as AS_USER where set.
srun_as() {
    if [ -n "${AS_USER:-}" ]; then
        runuser -u "$AS_USER" -- env SLURM_CONF="$SLURM_CONF" "$MUSTER" srun "$@"
    else
        "$MUSTER" srun "$@"
    fi
}
# Milliseconds of one `srun [args] true`.
one() {
    local t0 t1
    t0=$(date +%s%N)
    (cd / && srun_as "$@" true) >/dev/null || log "srun $* failed"
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000))
}
# min / median / max of the numbers on stdin.
summary() {
    sort -n | awk '{a[NR]=$1} END {printf "%d / %d / %d ms (n=%d)", a[1], a[int((NR+1)/2)], a[NR], NR}'
}
drop_pages() {
    python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$1"
}
row() { printf '%-14s %s\n' "$1" "$2"; }

echo "mode           min / median / max of srun true (wall)"
row plain "$(for _ in $(seq "$RUNS"); do one; done | summary)"
row busybox "$(for _ in $(seq "$RUNS"); do one --container-image="$IMG/busybox.sqsh"; done | summary)"
row 1g-sqsh-cold "$(for _ in $(seq "$COLD_RUNS"); do drop_pages "$IMG/big.sqsh"; one --container-image="$IMG/big.sqsh"; done | summary)"
row 1g-sqsh-warm "$(for _ in $(seq "$RUNS"); do one --container-image="$IMG/big.sqsh"; done | summary)"
row 1g-oci-first "$(for _ in $(seq "$COLD_RUNS"); do rm -rf "$BASE/cache/images"; one --container-image="$IMG/oci"; done | summary)"
row 1g-oci-cached "$(for _ in $(seq "$RUNS"); do one --container-image="$IMG/oci"; done | summary)"
row plain "$(for _ in $(seq "$RUNS"); do one; done | summary)"

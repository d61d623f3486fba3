#!/bin/sh
# Installs and starts what the test suite needs, as root, idempotently:
# munged, PostgreSQL and real MPI (Debian packages). `cargo xtask verify`
# runs it before the tests; it writes the variables the tests read
# (KEY=VALUE lines) to the file named by its one argument.
set -eu
out="$1"
: >"$out"
cd "$(dirname "$0")/.."

# AuthType=auth/munge is tested against a real munged (Debian package
# munge): install it, make a key and start the daemon when running as root.
# The test that needs it fails rather than skips where CI requires it.
start_munged() {
    if ! command -v munged >/dev/null 2>&1 && [ ! -x /usr/sbin/munged ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq munge >/dev/null
    fi
    PATH="$PATH:/usr/sbin:/sbin"
    if [ ! -s /etc/munge/munge.key ]; then
        mkdir -p /etc/munge
        if command -v mungekey >/dev/null 2>&1; then
            mungekey --create --keyfile=/etc/munge/munge.key
        else
            dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null
        fi
    fi
    # munged runs as the munge user and insists on owner-only key and dirs.
    owner=root
    if id munge >/dev/null 2>&1; then owner=munge; fi
    mkdir -p /run/munge /var/lib/munge /var/log/munge
    chown "$owner:" /etc/munge /etc/munge/munge.key /run/munge /var/lib/munge /var/log/munge
    chmod 0700 /etc/munge /var/lib/munge /var/log/munge
    chmod 0600 /etc/munge/munge.key
    chmod 0755 /run/munge
    if munge -n >/dev/null 2>&1; then
        return 0
    fi
    rm -f /run/munge/munge.socket.2 /run/munge/munged.pid
    if [ "$owner" = munge ]; then
        runuser -u munge -- munged
    else
        munged --force
    fi
    i=0
    until munge -n >/dev/null 2>&1; do
        i=$((i + 1))
        if [ "$i" -ge 50 ]; then
            echo "xtask/setup.sh: munged does not answer" >&2
            exit 1
        fi
        sleep 0.1
    done
}

# The accounting store's PostgreSQL backend is tested against a real server
# (Debian package postgresql): install it, start a cluster, create the
# muster_test role (allowed to create databases) and database, and hand the tests their connection string
# in MUSTER_TEST_PG (they fail rather than skip under CI without it). The
# role logs in with a password over TCP on localhost, so the tests need not
# run as the postgres user (Debian's Unix socket uses peer authentication).
start_postgres() {
    PATH="$PATH:/usr/sbin:/sbin"
    if ! command -v pg_ctlcluster >/dev/null 2>&1 ||
        ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    fi
    if [ -z "$(pg_lsclusters -h 2>/dev/null)" ]; then
        pg_createcluster "$(ls /usr/lib/postgresql | sort -V | tail -n 1)" main >/dev/null
    fi
    # The first cluster: version, name, port, status, ...
    read -r pg_ver pg_name pg_port _rest <<EOF
$(pg_lsclusters -h | head -n 1)
EOF
    mkdir -p /var/run/postgresql
    chown postgres: /var/run/postgresql
    if ! pg_isready -q -h /var/run/postgresql -p "$pg_port"; then
        pg_ctlcluster "$pg_ver" "$pg_name" start
    fi
    i=0
    until pg_isready -q -h /var/run/postgresql -p "$pg_port"; do
        i=$((i + 1))
        if [ "$i" -ge 100 ]; then
            echo "xtask/setup.sh: PostgreSQL $pg_ver/$pg_name does not answer on port $pg_port" >&2
            exit 1
        fi
        sleep 0.1
    done
    if [ "$(pg_sql "SELECT 1 FROM pg_roles WHERE rolname = 'muster_test'")" != 1 ]; then
        pg_sql "CREATE ROLE muster_test LOGIN PASSWORD 'muster_test'"
    fi
    # The end-to-end tests give each controller a database of its own
    # (CREATE DATABASE, dropped at the end): the role needs CREATEDB.
    if [ "$(pg_sql "SELECT rolcreatedb FROM pg_roles WHERE rolname = 'muster_test'")" != t ]; then
        pg_sql "ALTER ROLE muster_test CREATEDB"
    fi
    if [ "$(pg_sql "SELECT 1 FROM pg_database WHERE datname = 'muster_test'")" != 1 ]; then
        pg_sql "CREATE DATABASE muster_test OWNER muster_test"
    fi
    MUSTER_TEST_PG="host=127.0.0.1 port=$pg_port user=muster_test password=muster_test dbname=muster_test"
    export MUSTER_TEST_PG
}

# One SQL statement as the postgres superuser; prints the result unaligned.
pg_sql() {
    (cd / && runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 \
        -h /var/run/postgresql -p "$pg_port" -d postgres -tA -c "$1")
}

# Real MPI (issue 8): MPICH (Debian's mpich, PMI-1 over PMI_FD), Open MPI
# (mpirun launching its daemons through our srun, and direct launch through
# srun --mpi=pmix, which links the OpenPMIx of libpmix-dev: cargo xtask verify
# builds with --features muster/pmix) and mpi4py built against
# MPICH in a venv under target/ (Debian's python3-mpi4py is built for Open
# MPI). MUSTER_REQUIRE_MPI=1 makes the MPI tests fail, not skip, when any
# of these is missing; MUSTER_TEST_MPI4PY names the venv's python.
install_mpi() {
    if [ ! -x /usr/bin/mpicc.mpich ] || [ ! -x /usr/bin/mpiexec.hydra ] ||
        [ ! -x /usr/bin/mpicc.openmpi ] || [ ! -x /usr/bin/mpirun.openmpi ] ||
        ! pkg-config --exists pmix 2>/dev/null ||
        ! ls /usr/include/python3*/Python.h >/dev/null 2>&1 ||
        ! /usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mpich libmpich-dev \
            openmpi-bin libopenmpi-dev libpmix-dev pkg-config python3-venv python3-dev >/dev/null
    fi
    venv="$PWD/target/mpi4py-mpich"
    if ! "$venv/bin/python" -c 'from mpi4py import MPI; assert "MPICH" in MPI.Get_library_version()' \
        >/dev/null 2>&1; then
        rm -rf "$venv"
        /usr/bin/python3 -m venv "$venv"
        # Unoptimised: the tests need it to work, not to be fast, and -O2
        # makes its one large C file take minutes to compile.
        CFLAGS="-O0 -g0" MPICC=/usr/bin/mpicc.mpich "$venv/bin/pip" install -q --no-cache-dir \
            --no-binary=mpi4py mpi4py
    fi
    MUSTER_TEST_MPI4PY="$venv/bin/python"
    MUSTER_REQUIRE_MPI=1
    export MUSTER_TEST_MPI4PY MUSTER_REQUIRE_MPI
}

# The dashboard is tested in a real browser: Debian's chromium, driven
# headless by Playwright for Python (PyPI; its own browser downloads are not
# used: the tests launch /usr/bin/chromium).
install_browser() {
    if [ ! -x /usr/bin/chromium ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium python3-venv >/dev/null
    fi
    venv="$PWD/target/ui-venv"
    if ! "$venv/bin/python" -c 'import playwright.sync_api' >/dev/null 2>&1; then
        rm -rf "$venv"
        /usr/bin/python3 -m venv "$venv"
        "$venv/bin/pip" install -q --no-cache-dir playwright
    fi
    MUSTER_TEST_UI_PYTHON="$venv/bin/python"
    MUSTER_TEST_CHROMIUM=/usr/bin/chromium
    export MUSTER_TEST_UI_PYTHON MUSTER_TEST_CHROMIUM
}

# Containers (issue 42): squashfs images are built with mksquashfs
# (squashfs-tools) from Debian's busybox-static; squashfuse and
# fuse-overlayfs serve nodes that do not mount squashfs in the kernel;
# registry pulls are tested against Debian's docker-registry (distribution
# 2.8), with certificates and tokens made by openssl and Basic auth's
# password file by htpasswd (apache2-utils).
install_container_tools() {
    if ! command -v mksquashfs >/dev/null 2>&1 || [ ! -x /bin/busybox ] ||
        ! command -v squashfuse >/dev/null 2>&1 ||
        ! command -v docker-registry >/dev/null 2>&1 ||
        ! command -v openssl >/dev/null 2>&1 ||
        ! command -v htpasswd >/dev/null 2>&1; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq squashfs-tools busybox-static \
            squashfuse fuse-overlayfs docker-registry openssl apache2-utils >/dev/null
        # The tests start their own registries on loopback: the package's
        # service (port 5000 on every address) is not wanted.
        if command -v systemctl >/dev/null 2>&1; then
            systemctl disable --now docker-registry >/dev/null 2>&1 || true
        fi
    fi
}

# The user commands built against musl (`cargo xtask cli-musl`, which
# verify runs before the tests): Debian's musl-tools for the C code of
# their dependencies, and rustup's target for the Rust side. Where rustup
# cannot fetch the target, the test of that build says so and does not run;
# where it can, MUSTER_REQUIRE_MUSL=1 makes the test fail rather than skip.
install_musl() {
    MUSTER_REQUIRE_MUSL=0
    if ! command -v musl-gcc >/dev/null 2>&1; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq musl-tools >/dev/null
    fi
    if command -v rustup >/dev/null 2>&1; then
        if ! rustup target list --installed | grep -qx x86_64-unknown-linux-musl; then
            rustup target add x86_64-unknown-linux-musl >/dev/null 2>&1 ||
                echo "xtask/setup.sh: rustup could not add x86_64-unknown-linux-musl" >&2
        fi
        if rustup target list --installed | grep -qx x86_64-unknown-linux-musl; then
            MUSTER_REQUIRE_MUSL=1
        fi
    fi
    export MUSTER_REQUIRE_MUSL
}

install_mpi
install_container_tools
install_musl
start_munged
start_postgres
install_browser
{
    echo "MUSTER_TEST_UI_PYTHON=$MUSTER_TEST_UI_PYTHON"
    echo "MUSTER_TEST_CHROMIUM=$MUSTER_TEST_CHROMIUM"
    echo "MUSTER_TEST_MPI4PY=$MUSTER_TEST_MPI4PY"
    echo "MUSTER_REQUIRE_MPI=$MUSTER_REQUIRE_MPI"
    echo "MUSTER_TEST_PG=$MUSTER_TEST_PG"
    echo "MUSTER_REQUIRE_MUSL=$MUSTER_REQUIRE_MUSL"
} >"$out"

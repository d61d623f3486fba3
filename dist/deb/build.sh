#!/bin/sh
# Builds the Debian package: target/debian/muster_<version>-1_<arch>.deb.
# With PMIx (needs libpmix-dev) unless NO_PMIX=1. Installs cargo-deb from
# crates.io where it is missing.
#
# The user commands (/usr/bin/muster-cli, what sbatch, squeue ... link to)
# are built against musl (`cargo xtask cli-musl`: they start in half the
# time) where the musl target and musl-gcc are installed (xtask/setup.sh
# installs both), unless NO_MUSL=1; else against glibc, statically.
set -eu
cd "$(dirname "$0")/../.."
if ! cargo deb --version >/dev/null 2>&1; then
    cargo install --locked cargo-deb
fi
features="--features pmix"
if [ "${NO_PMIX:-0}" = 1 ]; then
    features=""
fi
musl=0
if [ "$#" = 0 ] && [ "${NO_MUSL:-0}" != 1 ] && command -v musl-gcc >/dev/null 2>&1 &&
    rustup target list --installed 2>/dev/null | grep -qx x86_64-unknown-linux-musl; then
    musl=1
fi
# A quick look at the package from an existing debug build (no release
# build): dist/deb/build.sh --no-build --profile dev -o target/debian-dev/
# then: dpkg -c target/debian-dev/*.deb; dpkg -x target/debian-dev/*.deb /tmp/x
if [ "$musl" = 1 ]; then
    # shellcheck disable=SC2086
    cargo build --release --locked -p muster $features
    cargo xtask cli-musl
    cargo deb -p muster --no-build
else
    # shellcheck disable=SC2086
    cargo deb -p muster $features "$@"
fi

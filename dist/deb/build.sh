#!/bin/sh
# Builds the Debian package: target/debian/muster_<version>-1_<arch>.deb.
# With PMIx (needs libpmix-dev) unless NO_PMIX=1. Installs cargo-deb from
# crates.io where it is missing.
set -eu
cd "$(dirname "$0")/../.."
if ! cargo deb --version >/dev/null 2>&1; then
    cargo install --locked cargo-deb
fi
features="--features pmix"
if [ "${NO_PMIX:-0}" = 1 ]; then
    features=""
fi
# A quick look at the package from an existing debug build (no release
# build): dist/deb/build.sh --no-build --profile dev -o target/debian-dev/
# then: dpkg -c target/debian-dev/*.deb; dpkg -x target/debian-dev/*.deb /tmp/x
# shellcheck disable=SC2086
cargo deb -p muster $features "$@"

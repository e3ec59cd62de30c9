#!/usr/bin/env bash
# Installs PithDB's C library under PREFIX (default /usr/local):
#   PREFIX/lib/libpith.so, PREFIX/lib/libpith.a
#   PREFIX/lib/libleveldb.so -> libpith.so  (for programs linked with -lleveldb)
#   PREFIX/include/pith/c.h, PREFIX/include/leveldb/c.h
#   PREFIX/lib/pkgconfig/pith.pc
# Builds the library first (cargo build --release -p pith-c) unless
# PITH_LIB_DIR names a directory holding libpith.so and libpith.a already.
# Usage: scripts/install-c.sh [PREFIX]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=${1:-/usr/local}
crate="$root/crates/pith-c"

if [ -n "${PITH_LIB_DIR:-}" ]; then
  built=$PITH_LIB_DIR
else
  (cd "$root" && cargo build --release -p pith-c)
  built=${CARGO_TARGET_DIR:-$root/target}/release
fi
for f in libpith.so libpith.a; do
  [ -f "$built/$f" ] || { echo "install-c.sh: no $f in $built" >&2; exit 1; }
done
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -1)

install -d "$prefix/lib/pkgconfig" "$prefix/include/pith" "$prefix/include/leveldb"
install -m 755 "$built/libpith.so" "$prefix/lib/libpith.so"
install -m 644 "$built/libpith.a" "$prefix/lib/libpith.a"
ln -sf libpith.so "$prefix/lib/libleveldb.so"
install -m 644 "$crate/include/pith/c.h" "$prefix/include/pith/c.h"
install -m 644 "$crate/include/leveldb/c.h" "$prefix/include/leveldb/c.h"
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" "$crate/pith.pc.in" >"$prefix/lib/pkgconfig/pith.pc"
echo "installed libpith $version under $prefix (libleveldb.so -> libpith.so; pkg-config: pith)"

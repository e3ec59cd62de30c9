#!/usr/bin/env bash
# Builds `pith` with the benchmark peers (`--features peers`) linked against
# the system's RocksDB instead of compiling RocksDB from source (about 24
# minutes on a 2-core machine; this takes about 2).
#
# Debian 12 ships RocksDB 7.8.3 (`apt-get install librocksdb-dev
# libclang-dev`); the `rocksdb` crate this project uses is written for
# RocksDB 9, and its C binding refers to one function 7.8 lacks,
# `rocksdb_write_buffer_manager_destroy` (used only when a write buffer
# manager is made, which the benchmark never does). This script links a
# stand-in for it that aborts if it is ever called, so a figure can never
# silently come from a stub. Say "RocksDB 7.8.3 (Debian)" beside figures
# measured with this build: they are not those of the crate's own RocksDB.
#
# Usage: scripts/build-peers-system-rocksdb.sh [TARGET_DIR]
# The binary lands in TARGET_DIR/release/pith (default target-peers/).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
target=${1:-$root/target-peers}
libdir=${ROCKSDB_LIB_DIR:-/usr/lib/x86_64-linux-gnu}

if [ ! -e "$libdir/librocksdb.so" ]; then
    echo "no librocksdb.so in $libdir (Debian: apt-get install librocksdb-dev libclang-dev)" >&2
    exit 1
fi

mkdir -p "$target"
stub_c="$target/rocksdb-7.8-stub.c"
stub_o="$target/rocksdb-7.8-stub.o"
cat > "$stub_c" <<'EOF'
/* RocksDB 7.8 has no rocksdb_write_buffer_manager_destroy; the rocksdb
 * crate links it for a type the benchmark never creates. */
#include <stdio.h>
#include <stdlib.h>
void rocksdb_write_buffer_manager_destroy(void *manager) {
    (void)manager;
    fputs("rocksdb_write_buffer_manager_destroy called: not in RocksDB 7.8\n", stderr);
    abort();
}
EOF
cc -c -fPIC -O2 "$stub_c" -o "$stub_o"

cd "$root"
ROCKSDB_LIB_DIR="$libdir" SNAPPY_LIB_DIR="$libdir" CARGO_TARGET_DIR="$target" \
    RUSTFLAGS="${RUSTFLAGS:-} -C link-arg=$stub_o" \
    cargo build --release -p pith-cli --features peers
echo "built $target/release/pith (peers: RocksDB from $libdir, LMDB)"

#!/usr/bin/env bash
# Runs every cargo-fuzz target briefly (default 20 s each), seeded with real
# serialized tries so the fuzzer starts past the checksums.
# Needs a nightly toolchain and cargo-fuzz; full fuzzing runs are separate:
#   cargo +nightly fuzz run trie_open
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
if ! rustup toolchain list | grep -q nightly; then
  echo "fuzz-smoke: no nightly toolchain; skipped" >&2
  exit 0
fi
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
mkdir -p fuzz/corpus/trie_open fuzz/corpus/trie_structure
cargo run -q --release -p pith-cli -- trie build --keys data/debian-sample.jsonl.zst --out fuzz/corpus/trie_open/debian-sample.trie
printf 'a\nab\nabc\nb\n' > /tmp/pith-fuzz-keys.txt
cargo run -q --release -p pith-cli -- trie build --keys /tmp/pith-fuzz-keys.txt --out fuzz/corpus/trie_open/tiny.trie
cp fuzz/corpus/trie_open/*.trie fuzz/corpus/trie_structure/
mkdir -p fuzz/corpus/zip_open
for codec in zstd-dict global; do
  cargo run -q --release -p pith-cli -- zip build --records data/debian-sample.jsonl.zst --limit 200 --codec "$codec" --out "fuzz/corpus/zip_open/debian-200-$codec.zip"
done
cd fuzz
for target in $(cargo +nightly fuzz list); do
  echo "fuzz-smoke: $target for ${seconds}s"
  cargo +nightly fuzz run "$target" -- -max_total_time="$seconds" -rss_limit_mb=2048
done

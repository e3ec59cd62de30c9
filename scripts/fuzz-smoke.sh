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
cargo run -q --release -p pith-cli -- trie build --format keys --keys /tmp/pith-fuzz-keys.txt --out fuzz/corpus/trie_open/tiny.trie
# Keys repeating whole labels, so the trie shares its labels.
for d in $(seq 0 299); do
  for n in __init__.py setup.py README.md LICENSE.txt x; do echo "lib/pkg$((d % 97))/$d/$n"; done
done > /tmp/pith-fuzz-shared-keys.txt
cargo run -q --release -p pith-cli -- trie build --format keys --keys /tmp/pith-fuzz-shared-keys.txt --out fuzz/corpus/trie_open/shared-labels.trie
# Dense integer keys (format version 4): one-byte keys, all of a span and
# every other one of it.
printf '%s\n' a b c d e f g h i j k l m n o p q r s t u v w x y z > /tmp/pith-fuzz-dense.txt
cargo run -q --release -p pith-cli -- trie build --format keys --keys /tmp/pith-fuzz-dense.txt --out fuzz/corpus/trie_open/dense-all.trie
printf '%s\n' a c e g i k m o q s u w y > /tmp/pith-fuzz-dense.txt
cargo run -q --release -p pith-cli -- trie build --format keys --keys /tmp/pith-fuzz-dense.txt --out fuzz/corpus/trie_open/dense-some.trie
# Keys whose versions repeat among neighbours, so tails are copies
# (format version 6) coded by a trained symbol table.
python3 - > /tmp/pith-fuzz-versioned.txt <<'PY'
for i in range(3000):
    v = (i // 5 * 0x9E3779B97F4A7C15 % 2**64) >> 24
    part = ["", "-dev", "-doc", "-common-data", "-utils"][i % 5]
    print(f"lib{v % 997}{['x', 'gtk', 'perl'][v % 3]}{part}/{v % 89}.{v // 89 % 1000}-{i // 5 % 4}")
PY
sort -u -o /tmp/pith-fuzz-versioned.txt /tmp/pith-fuzz-versioned.txt
cargo run -q --release -p pith-cli -- trie build --format keys --keys /tmp/pith-fuzz-versioned.txt --out fuzz/corpus/trie_open/copied-tails.trie
python3 - <<'PY'
import struct, sys
version = struct.unpack_from("<I", open("fuzz/corpus/trie_open/copied-tails.trie", "rb").read(), 8)[0]
if version != 6:
    sys.exit(f"copied-tails.trie is trie version {version}, not 6: the seed lost its copies")
PY
# Tries as written before format version 3 (the permutation), which
# readers still open, a dense one, version 5 (label blocks, as the
# Debian sample's trie) and version 6's dump (copies in a trie of three
# keys, every byte escaped): the golden dumps of docs/format.md.
for v in 1 2 4 5 6; do
  python3 - "$v" > "fuzz/corpus/trie_open/golden-v$v.trie" <<'PY'
import re, sys
doc = open("docs/format.md").read()
block = doc.split("```text golden-trie-v" + sys.argv[1] + "\n", 1)[1].split("```", 1)[0]
out = bytearray()
for line in block.splitlines():
    hexes = line.split(": ", 1)[-1].split()
    if hexes[:1] == ["zeros"]:
        out += bytes(int(hexes[1]))
    else:
        out += bytes(int(h, 16) for h in hexes)
sys.stdout.buffer.write(out)
PY
done
cp fuzz/corpus/trie_open/*.trie fuzz/corpus/trie_structure/
mkdir -p fuzz/corpus/zip_open
for codec in zstd-dict global; do
  cargo run -q --release -p pith-cli -- zip build --records data/debian-sample.jsonl.zst --limit 200 --codec "$codec" --out "fuzz/corpus/zip_open/debian-200-$codec.zip"
done
# Engine files: a loaded database (segment), an unflushed put (log), the manifest.
db=$(mktemp -d)
cargo run -q --release -p pith-cli -- load --db "$db/db" --limit 300 data/debian-sample.jsonl.zst
cargo run -q --release -p pith-cli -- put --db "$db/db" fuzz-seed "a value in the log"
mkdir -p fuzz/corpus/segment_open fuzz/corpus/segment_structure fuzz/corpus/wal_replay fuzz/corpus/manifest_decode fuzz/corpus/model_open
# A segment with a codec of its own too: one encoded with a shared model
# cannot open without its model, so the fuzzer would stop at its store.
cargo run -q --release -p pith-cli -- load --db "$db/own" --limit 300 --no-shared-model data/debian-sample.jsonl.zst
for f in "$db"/db/*.seg "$db"/own/*.seg; do cp "$f" fuzz/corpus/segment_open/; cp "$f" fuzz/corpus/segment_structure/; done
for f in "$db"/db/*.wal; do cp "$f" fuzz/corpus/wal_replay/; done
for f in "$db"/db/*.model; do cp "$f" fuzz/corpus/model_open/; done
cp "$db/db/MANIFEST" fuzz/corpus/manifest_decode/
rm -rf "$db"
mkdir -p fuzz/corpus/resp_parse
printf '*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\nGET "a b"\r\n' > fuzz/corpus/resp_parse/pipeline
cd fuzz
# Thread-local destructor registrations are not leaks (see lsan.supp).
export LSAN_OPTIONS="suppressions=$PWD/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
for target in $(cargo +nightly fuzz list); do
  echo "fuzz-smoke: $target for ${seconds}s"
  cargo +nightly fuzz run "$target" -- -max_total_time="$seconds" -rss_limit_mb=2048
done

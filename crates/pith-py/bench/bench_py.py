#!/usr/bin/env python3
"""Random gets and a full scan through Python: pith against plyvel
(LevelDB) and rocksdict (RocksDB), on the same records, one run each,
ratios printed.

    python bench_py.py [DATASET.jsonl.zst] [--gets N] [--threads 1,2] [--engines pith,plyvel,rocksdict]

The dataset is JSON lines {"key": ..., "value": ...}, zstd-compressed
(default: ../shared/datasets/debian-packages.jsonl.zst from the repository
root, or the bundled data/debian-sample.jsonl.zst). Each engine loads every
record through its own bulk path (pith: bulk_load; plyvel and rocksdict: a
write batch), compacts, and is closed and reopened; then each does the same
random gets (one key order, every key present), from one thread and then
split among more (`--threads`: a binding that holds the GIL during a get
gains nothing from a second thread), the same keys 100 at a time through a
multi-get (pith's get_many, rocksdict's get(list); plyvel has none), and
one full scan of keys and values. Missing engines (not installed) are skipped with a message.
Needs `zstd` on PATH or the `zstandard` module.
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def default_dataset():
    shared = os.path.join(ROOT, "..", "shared", "datasets", "debian-packages.jsonl.zst")
    return shared if os.path.exists(shared) else os.path.join(ROOT, "data", "debian-sample.jsonl.zst")


def read_records(path):
    if shutil.which("zstd"):
        raw = subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout
    else:
        import zstandard

        with open(path, "rb") as f:
            raw = zstandard.ZstdDecompressor().stream_reader(f).read()
    records = {}
    for line in raw.splitlines():
        if line.strip():
            r = json.loads(line)
            records[r["key"].encode()] = r["value"].encode()
    return sorted(records.items())


class Pith:
    name = "pith"

    def __init__(self):
        import pith

        self.mod = pith

    def load(self, path, records):
        with self.mod.DB(path) as db:
            db.bulk_load(records)
            db.compact()

    def open(self, path):
        self.db = self.mod.DB(path)
        self.multi_get = self.db.get_many
        return self.db.get, lambda: self.db.items()

    def close(self):
        self.db.close()


class Plyvel:
    name = "plyvel"

    def __init__(self):
        import plyvel

        self.mod = plyvel

    def load(self, path, records):
        db = self.mod.DB(path, create_if_missing=True)
        with db.write_batch() as b:
            for k, v in records:
                b.put(k, v)
        db.compact_range()
        db.close()

    def open(self, path):
        self.db = self.mod.DB(path)
        return self.db.get, lambda: self.db.iterator()

    def close(self):
        self.db.close()


class RocksDict:
    name = "rocksdict"

    def __init__(self):
        import rocksdict

        self.mod = rocksdict

    def options(self):
        o = self.mod.Options(raw_mode=True)
        o.create_if_missing(True)
        return o

    def load(self, path, records):
        db = self.mod.Rdict(path, self.options())
        wb = self.mod.WriteBatch(raw_mode=True)
        for k, v in records:
            wb.put(k, v)
        db.write(wb)
        db.compact_range(None, None)
        db.close()

    def open(self, path):
        self.db = self.mod.Rdict(path, self.options())
        self.multi_get = self.db.get  # a list of keys: RocksDB's MultiGet
        return self.db.get, lambda: self.db.items()

    def close(self):
        self.db.close()


ENGINES = {"pith": Pith, "plyvel": Plyvel, "rocksdict": RocksDict}


def timed_gets(get, order, threads):
    """Gets every key of order, split among threads; returns the seconds."""
    chunks = [order[i::threads] for i in range(threads)]
    missing = []
    barrier = threading.Barrier(threads + 1)

    def run(keys):
        barrier.wait()
        for k in keys:
            if get(k) is None:
                missing.append(k)

    workers = [threading.Thread(target=run, args=(c,)) for c in chunks]
    for w in workers:
        w.start()
    barrier.wait()
    t = time.perf_counter()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - t
    if missing:
        raise AssertionError(f"{len(missing)} keys missing, e.g. {missing[0]!r}")
    return elapsed


def bench(engine, records, order, workdir, threads):
    path = os.path.join(workdir, engine.name)
    t = time.perf_counter()
    engine.load(path, records)
    load_s = time.perf_counter() - t
    get, scan = engine.open(path)
    for k in order[:1000]:  # warm up
        get(k)
    get_qps = {t: len(order) / timed_gets(get, order, t) for t in threads}
    multi_qps = None
    multi_get = getattr(engine, "multi_get", None)
    if multi_get is not None:
        batches = [order[i : i + 100] for i in range(0, len(order), 100)]
        t = time.perf_counter()
        for b in batches:
            if None in multi_get(b):
                raise AssertionError(f"{engine.name}: a key is missing")
        multi_qps = len(order) / (time.perf_counter() - t)
    t = time.perf_counter()
    n = 0
    for _k, _v in scan():
        n += 1
    scan_s = time.perf_counter() - t
    engine.close()
    if n != len(records):
        raise AssertionError(f"{engine.name}: scanned {n} of {len(records)}")
    disk = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
    return {"load_s": load_s, "get_qps": get_qps, "multi_qps": multi_qps, "scan_rps": n / scan_s, "disk": disk}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset", nargs="?", default=default_dataset())
    ap.add_argument("--gets", type=int, default=300_000)
    ap.add_argument("--threads", default="1,2", help="get threads, comma-separated")
    ap.add_argument("--engines", default="pith,plyvel,rocksdict")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    records = read_records(args.dataset)
    raw = sum(len(k) + len(v) for k, v in records)
    print(f"dataset {args.dataset}: {len(records)} records, {raw / 1e6:.1f} MB raw")
    rng = random.Random(args.seed)
    keys = [k for k, _ in records]
    order = [rng.choice(keys) for _ in range(args.gets)]
    threads = [int(t) for t in args.threads.split(",")]

    results = {}
    workdir = tempfile.mkdtemp(prefix="pith-pybench-")
    try:
        for name in args.engines.split(","):
            try:
                engine = ENGINES[name]()
            except ImportError as e:
                print(f"{name}: skipped ({e})")
                continue
            results[name] = r = bench(engine, records, order, workdir, threads)
            gets = "   ".join(f"get x{t} {q:9,.0f}/s" for t, q in r["get_qps"].items())
            multi = r["multi_qps"]
            gets += f"   multi-get {multi:9,.0f}/s" if multi else "   multi-get         -  "
            print(
                f"{name:10} load {r['load_s']:5.2f} s   {gets}   "
                f"scan {r['scan_rps']:9,.0f} rec/s   disk {r['disk'] / 1e6:5.1f} MB"
            )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if "pith" in results:
        p = results["pith"]
        for other in ("plyvel", "rocksdict"):
            if other in results:
                o = results[other]
                gets = ", ".join(f"get x{t} {p['get_qps'][t] / o['get_qps'][t]:.2f}x" for t in threads)
                print(
                    f"pith / {other}: {gets}, "
                    f"scan {p['scan_rps'] / o['scan_rps']:.2f}x, disk {p['disk'] / o['disk']:.2f}x"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())

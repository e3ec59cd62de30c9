#!/usr/bin/env python3
"""`pith serve` against `redis-server`, in one run, with redis-benchmark.

Both servers get the same keyspace (preloaded with SET over --keys random
keys of --size bytes; memory is measured once PithDB has flushed (SAVE) and
Redis's append-only-file rewrite, if one started, has ended), then SET,
GET, INCR and MGET (10 keys) run at -c 50 with -P 1 and -P 16, --rounds
times, the two servers taking turns test by test (a VM's speed drifts by
tens of percent within minutes; taking turns lets both see the same
drift). Prints, per test and pipeline depth, each server's median
requests/s and p50/p99 latency, PithDB's ratio to Redis and the range of
rates over the rounds, then each server's memory for the same data (Redis
used_memory and RSS, PithDB RSS), and as the last line one JSON object of
all figures.

Durability is comparable: Redis with appendonly yes, appendfsync everysec;
PithDB with its log fsynced once a second. redis-benchmark's values are
one repeated byte, so they compress far better than real data; say so
when quoting the memory figures.

With --data FILE (JSON Lines of {"key", "value"}, zstd-compressed or not),
it measures memory on real data instead: the records are SET into both
servers (pipelined), PithDB flushes (SAVE), and each server's memory is
reported as above. Add --memory-limit SIZE and --copies N for the run
larger than memory: N copies of the records (keys prefixed with the copy
number) go into each server inside a memory cgroup of SIZE (page cache
included, as `pith bench db` does), then random GETs of loaded keys are
timed; Redis, which keeps everything in memory, is expected to be killed.

Usage: scripts/bench-serve.py [--keys 1000000] [--size 1000] [--requests 200000]
                              [--rounds 3] [--io-threads N] [--tests set,get,incr,mget]
                              [--pipelines 1,16]
       scripts/bench-serve.py --data FILE [--memory-limit 64M --copies 8]
Needs redis-server and redis-benchmark (Debian: redis-server), zstd for a
compressed --data file, and a release build of pith (built here if
missing). The memory limit needs a writable memory cgroup (v1 or v2).
"""

import argparse
import csv
import io
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PITH = os.path.join(ROOT, "target", "release", "pith")
MALLOC_ARENAS = 0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port, proc, what):
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{what} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"{what} did not start")


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def bench(port, args):
    """Runs redis-benchmark --csv; returns {test: (rps, p50_ms, p99_ms)}."""
    out = subprocess.run(
        ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "--csv"] + args,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    rows = {}
    for row in csv.reader(io.StringIO(out)):
        if not row or row[0] == "test":
            continue
        # test, rps, avg, min, p50, p95, p99, max
        rows[row[0]] = (float(row[1]), float(row[4]), float(row[6]))
    return rows


def records(path):
    """(key, value) byte pairs of a JSON Lines file, zstd-compressed or not."""
    if path.endswith(".zst"):
        text = subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout
    else:
        with open(path, "rb") as f:
            text = f.read()
    out = []
    for line in text.splitlines():
        if line.strip():
            r = json.loads(line)
            out.append((r["key"].encode(), r["value"].encode()))
    return out


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Conn:
    """A minimal pipelining RESP client (replies are counted, and errors
    raised, not parsed further: enough for loading and timing)."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("server closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("server closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            return [self.reply() for _ in range(int(rest))]
        return rest

    def pipeline(self, commands):
        self.sock.sendall(b"".join(resp(*c) for c in commands))
        return [self.reply() for _ in commands]


def load(port, recs, copies):
    """SETs every record (`copies` times, keys prefixed with the copy
    number when more than one), 1,000 commands per round trip."""
    c = Conn(port)
    batch = []
    for copy in range(copies):
        prefix = b"%d/" % copy if copies > 1 else b""
        for k, v in recs:
            batch.append((b"SET", prefix + k, v))
            if len(batch) == 1000:
                c.pipeline(batch)
                batch = []
    if batch:
        c.pipeline(batch)
    return c


def timed_gets(port, keys, n, depth):
    """n random GETs of `keys`, `depth` per round trip: (gets/s, p50 ms,
    p99 ms of a round trip), and how many found nothing."""
    import random

    rng = random.Random(7)
    c = Conn(port)
    lat, missing = [], 0
    start = time.perf_counter()
    for _ in range(n // depth):
        cmds = [(b"GET", keys[rng.randrange(len(keys))]) for _ in range(depth)]
        t = time.perf_counter()
        replies = c.pipeline(cmds)
        lat.append((time.perf_counter() - t) * 1000)
        missing += sum(r is None for r in replies)
    total = time.perf_counter() - start
    lat.sort()
    return n / total, lat[len(lat) // 2], lat[int(len(lat) * 0.99)], missing


def own_memory_cgroup():
    """(this process's memory cgroup directory, version) or None."""
    with open("/proc/self/cgroup") as f:
        lines = f.read().splitlines()
    for l in lines:
        parts = l.split(":", 2)
        if len(parts) == 3 and "memory" in parts[1].split(","):
            root = "/sys/fs/cgroup/memory"
            own = os.path.join(root, parts[2].lstrip("/"))
            return (own if os.path.isdir(own) else root), 1
    for l in lines:
        if l.startswith("0::"):
            return os.path.join("/sys/fs/cgroup", l[3:].lstrip("/")), 2
    return None


class Limited:
    """A child memory cgroup of `limit` bytes for the processes started
    with its `preexec`; removed on close."""

    def __init__(self, limit, name):
        found = own_memory_cgroup()
        if not found:
            sys.exit("no memory cgroup for this process: --memory-limit cannot be applied")
        own, self.version = found
        self.limit = limit
        self.group = os.path.join(own, name)
        os.makedirs(self.group, exist_ok=True)
        files = ["memory.limit_in_bytes", "memory.memsw.limit_in_bytes"] if self.version == 1 else ["memory.max"]
        for i, f in enumerate(files):
            try:
                with open(os.path.join(self.group, f), "w") as out:
                    out.write(str(limit))
            except OSError as e:
                if i == 0:
                    sys.exit(f"cannot limit memory in {self.group}: {e}")

    def preexec(self):
        with open(os.path.join(self.group, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    def close(self):
        try:
            os.rmdir(self.group)
        except OSError:
            pass


def parse_size(s):
    s = s.strip().upper().removesuffix("IB").removesuffix("B")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:], 1)
    return int(float(s.rstrip("KMG")) * mult)


def start(name, work, port, limited=None):
    os.makedirs(work, exist_ok=True)
    if name == "redis":
        cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", work,
               "--save", "", "--appendonly", "yes", "--appendfsync", "everysec"]
    else:
        cmd = [PITH, "serve", "--db",
               os.path.join(work, "pith"), "--port", str(port), "--appendfsync", "everysec"]
        if limited:
            # Recent writes and builds within an eighth of the limit each,
            # and as many malloc arenas as asked (default: the server's).
            cmd += ["--pith-memtable-size", str(limited.limit // 8),
                    "--pith-build-memory", str(limited.limit // 8),
                    "--pith-malloc-arenas", str(MALLOC_ARENAS)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=limited.preexec if limited else None)
    wait_for(port, proc, name)
    return proc


def stop(proc, port):
    subprocess.run(["redis-cli", "-p", str(port), "shutdown", "nosave"], capture_output=True)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()


def data_run(a):
    """Memory for the same real records in both servers; with a memory
    limit, the run larger than memory."""
    recs = records(a.data)
    raw = sum(len(k) + len(v) for k, v in recs) * a.copies
    limit = parse_size(a.memory_limit) if a.memory_limit else None
    work = tempfile.mkdtemp(prefix="pith-bench-serve-")
    report = {"bench": "serve-data", "data": os.path.basename(a.data), "records": len(recs) * a.copies,
              "raw_bytes": raw, "memory_limit": limit, "servers": {}}
    try:
        for name in ["pith", "redis"]:
            port = free_port()
            limited = Limited(limit, f"pith-bench-serve-{name}-{os.getpid()}") if limit else None
            proc = start(name, os.path.join(work, name), port, limited)
            figures = {}
            try:
                t = time.perf_counter()
                c = load(port, recs, a.copies)
                figures["load_s"] = round(time.perf_counter() - t, 2)
                if name == "pith":
                    c.pipeline([(b"SAVE",)])
                time.sleep(2)
                figures["rss_bytes"] = rss_bytes(proc.pid)
                if name == "redis":
                    figures["used_memory"] = int(info(port, "memory")["used_memory"])
                figures["keys"] = int(c.pipeline([(b"DBSIZE",)])[0])
                if limit:
                    keys = [(b"%d/" % i if a.copies > 1 else b"") + k
                            for i in range(a.copies) for k, _ in recs]
                    for depth in [1, 16]:
                        rps, p50, p99, missing = timed_gets(port, keys, a.requests, depth)
                        figures[f"get_P{depth}"] = {"rps": round(rps), "p50_ms": round(p50, 3),
                                                   "p99_ms": round(p99, 3), "missing": missing}
                figures["status"] = "ok"
            except (ConnectionError, RuntimeError, OSError) as e:
                code = proc.poll()
                figures["status"] = f"failed: {e}" + (f" (exit {code}, killed)" if code and code < 0 else "")
            finally:
                if proc.poll() is None:
                    stop(proc, port)
                if limited:
                    limited.close()
            report["servers"][name] = figures
        where = f", inside a {limit / 2**20:.0f} MiB memory cgroup" if limit else ""
        print(f"{report['records']:,} records of {os.path.basename(a.data)} ({raw / 1e6:.1f} MB of keys and values)"
              f" SET into each server{where}; PithDB flushed (SAVE) before measuring")
        for name, f in report["servers"].items():
            line = f"  {name:<6} {f['status']}"
            if "rss_bytes" in f:
                line += f"; load {f['load_s']} s; RSS {f['rss_bytes'] / 1e6:.1f} MB"
            if "used_memory" in f:
                line += f"; used_memory {f['used_memory'] / 1e6:.1f} MB"
            for depth in [1, 16]:
                g = f.get(f"get_P{depth}")
                if g:
                    line += (f"; GET -P {depth}: {g['rps']:,} /s, round trip p50 {g['p50_ms']} ms p99 {g['p99_ms']} ms"
                             f", {g['missing']} missing")
            print(line)
        p, r = report["servers"].get("pith", {}), report["servers"].get("redis", {})
        if "rss_bytes" in p and "used_memory" in r:
            report["pith_rss_over_redis_used_memory"] = round(p["rss_bytes"] / r["used_memory"], 3)
            print(f"  pith RSS / redis used_memory: {report['pith_rss_over_redis_used_memory']:.3f}")
        print(json.dumps(report))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def info(port, section):
    out = subprocess.run(
        ["redis-cli", "-p", str(port), "info", section], check=True, capture_output=True, text=True
    ).stdout
    return dict(
        line.strip().split(":", 1) for line in out.splitlines() if ":" in line and not line.startswith("#")
    )


def quiesce(name, port, limit_s=300):
    """Waits for the background work a load started: PithDB's flush of its
    memtables (SAVE), Redis's append-only-file rewrite (the load grows the
    file past auto-aof-rewrite-percentage; a rewrite forks and copies the
    whole dataset, and measuring during it halved Redis's SET rate in one
    run). Returns the seconds waited."""
    t = time.perf_counter()
    if name == "pith":
        subprocess.run(["redis-cli", "-p", str(port), "save"], check=True, capture_output=True)
        return time.perf_counter() - t
    while time.perf_counter() - t < limit_s:
        p = info(port, "persistence")
        busy = [k for k in ("aof_rewrite_in_progress", "aof_rewrite_scheduled", "rdb_bgsave_in_progress")
                if p.get(k, "0") != "0"]
        if not busy:
            break
        time.sleep(0.2)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--data", help="JSON Lines records to measure memory on")
    ap.add_argument("--copies", type=int, default=1)
    ap.add_argument("--memory-limit", help="memory cgroup limit for each server, e.g. 64M")
    ap.add_argument("--malloc-arenas", type=int, default=0,
                    help="pith-malloc-arenas of the server under --memory-limit (0: glibc's default)")
    ap.add_argument("--pith", help="the pith binary to run (default: build target/release/pith); "
                    "for comparing two builds")
    ap.add_argument("--rounds", type=int, default=3,
                    help="runs of each test per server, the two servers taking turns test by test "
                         "(so both see the machine in the same state); medians are reported")
    ap.add_argument("--io-threads", type=int, help="pith serve's io-threads (default: its own)")
    ap.add_argument("--tests", default="set,get,incr,mget",
                    help="comma-separated tests to run, of set, get, incr, mget (default: all)")
    ap.add_argument("--pipelines", default="1,16", help="comma-separated pipeline depths (default: 1,16)")
    a = ap.parse_args()
    for tool in ["redis-server", "redis-benchmark", "redis-cli"]:
        if not shutil.which(tool):
            sys.exit(f"{tool} not found (Debian: apt-get install redis-server)")
    global PITH, MALLOC_ARENAS
    MALLOC_ARENAS = a.malloc_arenas
    if a.pith:
        PITH = os.path.abspath(a.pith)
    else:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "pith-cli"], cwd=ROOT, check=True)
    pith = PITH
    if a.data:
        data_run(a)
        return
    work = tempfile.mkdtemp(prefix="pith-bench-serve-")
    servers = {}
    try:
        rport, pport = free_port(), free_port()
        servers["redis"] = (
            subprocess.Popen(
                ["redis-server", "--port", str(rport), "--bind", "127.0.0.1", "--dir", work,
                 "--save", "", "--appendonly", "yes", "--appendfsync", "everysec"],
                stdout=subprocess.DEVNULL,
            ),
            rport,
        )
        servers["pith"] = (
            subprocess.Popen(
                [pith, "serve", "--db", os.path.join(work, "pith"), "--port", str(pport),
                 "--appendfsync", "everysec"]
                + (["--io-threads", str(a.io_threads)] if a.io_threads else []),
                stderr=subprocess.DEVNULL,
            ),
            pport,
        )
        for name, (proc, port) in servers.items():
            wait_for(port, proc, name)
        known = {"set": ("SET", ["-t", "set"]), "get": ("GET", ["-t", "get"]), "incr": ("INCR", ["-t", "incr"]),
                 "mget": ("MGET (10 keys)", ["MGET"] + ["key:__rand_int__"] * 10)}
        unknown = [t for t in a.tests.split(",") if t not in known]
        if unknown:
            sys.exit(f"unknown test {unknown[0]!r}: choose from {', '.join(known)}")
        tests = [known[t] for t in a.tests.split(",")]
        pipelines = [int(p) for p in a.pipelines.split(",")]
        runs = {}
        memory = {}
        for name, (proc, port) in servers.items():
            print(f"{name}: loading {a.keys:,} random keys of {a.size} bytes", file=sys.stderr)
            bench(port, ["-t", "set", "-n", str(a.keys), "-r", str(a.keys), "-d", str(a.size), "-c", "50", "-P", "16"])
            waited = quiesce(name, port)
            print(f"{name}: background work after the load took {waited:.1f} s more", file=sys.stderr)
            time.sleep(2)
            mem = {"rss_bytes": rss_bytes(proc.pid)}
            if name == "redis":
                m = info(port, "memory")
                mem["used_memory"] = int(m["used_memory"])
            mem["keys"] = int(subprocess.run(["redis-cli", "-p", str(port), "dbsize"], capture_output=True,
                                             text=True, check=True).stdout.strip())
            memory[name] = mem
        for r in range(a.rounds):
            for pipeline in pipelines:
                for test, targs in tests:
                    n = a.requests if pipeline == 1 else a.requests * 4
                    order = list(servers.items())
                    if r % 2:
                        order.reverse()
                    for name, (proc, port) in order:
                        print(f"round {r + 1}/{a.rounds}: {name}: {test} -P {pipeline}", file=sys.stderr)
                        row = bench(port, ["-n", str(n), "-r", str(a.keys), "-d", str(a.size), "-c", "50",
                                           "-P", str(pipeline)] + targs)
                        runs.setdefault(f"{test} -P {pipeline}", {}).setdefault(name, []).append(
                            list(row.values())[0])
        # Medians of each figure over the rounds, and the spread of the rates.
        results = {t: {n: [statistics.median(x[i] for x in rows) for i in range(3)] for n, rows in by.items()}
                   for t, by in runs.items()}
        spread = {t: {n: [min(x[0] for x in rows), max(x[0] for x in rows)] for n, rows in by.items()}
                  for t, by in runs.items()}
        print(f"pith serve against redis-server {subprocess.run(['redis-server', '--version'], capture_output=True, text=True).stdout.split()[2]}, "
              f"{a.keys:,} random keys of {a.size} B, -c 50, redis-benchmark; Redis appendonly everysec, PithDB everysec; "
              f"measured once PithDB flushed (SAVE) and Redis's AOF rewrite ended; "
              f"medians of {a.rounds} rounds, the servers taking turns test by test"
              + (f"; pith io-threads {a.io_threads}" if a.io_threads else ""))
        print(f"{'test':<22}{'pith rps':>12}{'redis rps':>12}{'ratio':>8}{'pith p50/p99 ms':>20}{'redis p50/p99 ms':>20}"
              f"{'pith rps range':>22}{'redis rps range':>22}")
        ratios = {}
        for test, by in results.items():
            p, r = by["pith"], by["redis"]
            ratios[test] = p[0] / r[0]
            ps, rs = spread[test]["pith"], spread[test]["redis"]
            print(f"{test:<22}{p[0]:>12,.0f}{r[0]:>12,.0f}{ratios[test]:>7.2f}x"
                  f"{p[1]:>11.3f} /{p[2]:>7.3f}{r[1]:>11.3f} /{r[2]:>7.3f}"
                  f"{ps[0]:>11,.0f}-{ps[1]:<10,.0f}{rs[0]:>11,.0f}-{rs[1]:<10,.0f}")
        pm, rm = memory["pith"], memory["redis"]
        print(f"memory after loading ({pm['keys']:,} keys in pith, {rm['keys']:,} in redis): "
              f"pith RSS {pm['rss_bytes'] / 1e6:.1f} MB; redis used_memory {rm['used_memory'] / 1e6:.1f} MB, "
              f"RSS {rm['rss_bytes'] / 1e6:.1f} MB; pith RSS / redis used_memory {pm['rss_bytes'] / rm['used_memory']:.3f}")
        print("legend: rps = requests per second over 50 connections; p50/p99 = latency percentiles per "
              "request; ratio = pith rps / redis rps; -P 16 = 16 requests pipelined per round trip")
        print(json.dumps({"bench": "serve", "keys": a.keys, "size": a.size, "rounds": a.rounds,
                          "io_threads": a.io_threads, "results": results, "rps_range": spread,
                          "ratios": ratios, "memory": memory}))
    finally:
        for proc, port in servers.values():
            subprocess.run(["redis-cli", "-p", str(port), "shutdown", "nosave"], capture_output=True)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

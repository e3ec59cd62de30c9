#!/usr/bin/env python3
"""`pith serve` against `redis-server`, in one run, with redis-benchmark.

Both servers get the same keyspace (preloaded with SET over --keys random
keys of --size bytes), then SET, GET, INCR and MGET (10 keys) run at -c 50
with -P 1 and -P 16. Prints, per test and pipeline depth, each server's
requests/s and p50/p99 latency and PithDB's ratio to Redis, then each
server's memory for the same data (Redis used_memory and RSS, PithDB RSS),
and as the last line one JSON object of all figures.

Durability is comparable: Redis with appendonly yes, appendfsync everysec;
PithDB with its log fsynced once a second. redis-benchmark's values are
one repeated byte, so they compress far better than real data; say so
when quoting the memory figures.

Usage: scripts/bench-serve.py [--keys 1000000] [--size 1000] [--requests 200000]
Needs redis-server and redis-benchmark (Debian: redis-server) and a release
build of pith (built here if missing).
"""

import argparse
import csv
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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


def info(port, section):
    out = subprocess.run(
        ["redis-cli", "-p", str(port), "info", section], check=True, capture_output=True, text=True
    ).stdout
    return dict(
        line.strip().split(":", 1) for line in out.splitlines() if ":" in line and not line.startswith("#")
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--requests", type=int, default=200_000)
    a = ap.parse_args()
    for tool in ["redis-server", "redis-benchmark", "redis-cli"]:
        if not shutil.which(tool):
            sys.exit(f"{tool} not found (Debian: apt-get install redis-server)")
    pith = os.path.join(ROOT, "target", "release", "pith")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "pith-cli"], cwd=ROOT, check=True)
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
                 "--appendfsync", "everysec"],
                stderr=subprocess.DEVNULL,
            ),
            pport,
        )
        for name, (proc, port) in servers.items():
            wait_for(port, proc, name)
        tests = [("SET", ["-t", "set"]), ("GET", ["-t", "get"]), ("INCR", ["-t", "incr"]),
                 ("MGET (10 keys)", ["MGET"] + ["key:__rand_int__"] * 10)]
        results = {}
        memory = {}
        for name, (proc, port) in servers.items():
            print(f"{name}: loading {a.keys:,} random keys of {a.size} bytes", file=sys.stderr)
            bench(port, ["-t", "set", "-n", str(a.keys), "-r", str(a.keys), "-d", str(a.size), "-c", "50", "-P", "16"])
            time.sleep(2)
            mem = {"rss_bytes": rss_bytes(proc.pid)}
            if name == "redis":
                m = info(port, "memory")
                mem["used_memory"] = int(m["used_memory"])
            mem["keys"] = int(subprocess.run(["redis-cli", "-p", str(port), "dbsize"], capture_output=True,
                                             text=True, check=True).stdout.strip())
            memory[name] = mem
            for pipeline in [1, 16]:
                for test, targs in tests:
                    n = a.requests if pipeline == 1 else a.requests * 4
                    print(f"{name}: {test} -P {pipeline}", file=sys.stderr)
                    row = bench(port, ["-n", str(n), "-r", str(a.keys), "-d", str(a.size), "-c", "50",
                                       "-P", str(pipeline)] + targs)
                    results.setdefault(f"{test} -P {pipeline}", {})[name] = list(row.values())[0]
        print(f"pith serve against redis-server {subprocess.run(['redis-server', '--version'], capture_output=True, text=True).stdout.split()[2]}, "
              f"{a.keys:,} random keys of {a.size} B, -c 50, redis-benchmark; Redis appendonly everysec, PithDB everysec")
        print(f"{'test':<22}{'pith rps':>12}{'redis rps':>12}{'ratio':>8}{'pith p50/p99 ms':>20}{'redis p50/p99 ms':>20}")
        ratios = {}
        for test, by in results.items():
            p, r = by["pith"], by["redis"]
            ratios[test] = p[0] / r[0]
            print(f"{test:<22}{p[0]:>12,.0f}{r[0]:>12,.0f}{ratios[test]:>7.2f}x"
                  f"{p[1]:>11.3f} /{p[2]:>7.3f}{r[1]:>11.3f} /{r[2]:>7.3f}")
        pm, rm = memory["pith"], memory["redis"]
        print(f"memory after loading ({pm['keys']:,} keys in pith, {rm['keys']:,} in redis): "
              f"pith RSS {pm['rss_bytes'] / 1e6:.1f} MB; redis used_memory {rm['used_memory'] / 1e6:.1f} MB, "
              f"RSS {rm['rss_bytes'] / 1e6:.1f} MB; pith RSS / redis used_memory {pm['rss_bytes'] / rm['used_memory']:.3f}")
        print("legend: rps = requests per second over 50 connections; p50/p99 = latency percentiles per "
              "request; ratio = pith rps / redis rps; -P 16 = 16 requests pipelined per round trip")
        print(json.dumps({"bench": "serve", "keys": a.keys, "size": a.size, "results": results,
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

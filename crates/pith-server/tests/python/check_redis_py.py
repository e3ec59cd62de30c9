"""redis-py against `pith serve`: plain commands, pipelines, transactions
with WATCH, scan_iter, times to live, RESP3, and PithDB's own commands.

Run by tests/redis_py.rs as `python check_redis_py.py PORT`; exits non-zero
(with a traceback) on the first failure.
"""

import sys

import redis


def main(port: int) -> None:
    r = redis.Redis(host="127.0.0.1", port=port)
    assert r.ping()
    r.flushdb()
    assert r.set("greeting", "hello")
    assert r.get("greeting") == b"hello"
    assert r.set("greeting", "bye", nx=True) is None
    assert r.mset({"a": "1", "b": "2"})
    assert r.mget("a", "b", "missing") == [b"1", b"2", None]
    assert r.incr("counter") == 1
    assert r.incrby("counter", 41) == 42
    assert r.incrbyfloat("f", 1.5) == 1.5
    assert r.append("greeting", "!") == 6
    assert r.getrange("greeting", 0, 1) == b"he"
    assert r.exists("a", "b", "nope") == 2
    assert r.delete("a", "nope") == 1
    assert r.type("b") == b"string"

    # A pipeline without a transaction: 500 writes in one round trip.
    with r.pipeline(transaction=False) as p:
        for i in range(500):
            p.set(f"user:{i:04d}", i)
        assert all(p.execute())
    assert sorted(r.scan_iter(match="user:00*", count=7)) == [f"user:{i:04d}".encode() for i in range(100)]
    assert r.dbsize() == 500 + 4

    # A transaction with WATCH, retried as redis-py does.
    def move(pipe: redis.client.Pipeline) -> None:
        n = int(pipe.get("counter"))
        pipe.multi()
        pipe.set("counter", n + 1)
        pipe.set("moved", n)

    assert r.transaction(move, "counter") == [True, True]
    assert r.get("counter") == b"43" and r.get("moved") == b"42"
    with r.pipeline() as p:
        p.incr("counter").incr("counter")
        assert p.execute() == [44, 45]

    # Times to live, through redis-py's own arguments.
    import datetime
    import time

    assert r.set("session", "s", ex=100)
    assert 99 <= r.ttl("session") <= 100
    assert r.psetex("short", datetime.timedelta(milliseconds=50), "x")
    assert r.pexpire("counter", 100_000)
    assert r.incr("counter") == 46 and r.pttl("counter") > 90_000
    assert r.persist("counter") and r.ttl("counter") == -1
    assert r.getex("session", persist=True) == b"s" and r.ttl("session") == -1
    assert r.expireat("greeting", 4102444800) and r.expiretime("greeting") == 4102444800
    time.sleep(0.1)
    assert r.get("short") is None and r.ttl("short") == -2
    assert r.info("keyspace")["db0"]["expires"] == 1
    assert r.get("counter") == b"46"

    # RESP3.
    r3 = redis.Redis(host="127.0.0.1", port=port, protocol=3)
    assert r3.get("counter") == b"46"
    assert r3.get("nothing") is None

    # PithDB's own commands.
    found = r.execute_command("PITH.SEARCH", "user:001[0-2]", "LIMIT", "2")
    assert found == [b"user:0010", b"user:0011"], found
    assert "pith_segments" in r.info("pith")
    print("redis-py ok:", redis.__version__)


if __name__ == "__main__":
    main(int(sys.argv[1]))

"""Threads: the GIL is released during engine calls, one handle is shared
safely, and close() waits for calls in flight."""

import threading
import time

import pith
from conftest import fill


def heartbeat_during(call):
    """Runs call() on this thread while another thread records timestamps
    in a Python loop. Returns (t0, t1, beats): when call ran and the
    heartbeats. While call holds the GIL, the other thread cannot run a
    single bytecode; so heartbeats inside (t0, t1), away from its edges,
    mean call released the GIL."""
    beats = []
    stop = threading.Event()
    started = threading.Event()

    def spin():
        started.set()
        while not stop.is_set():
            beats.append(time.monotonic())
            for _ in range(200):
                pass

    t = threading.Thread(target=spin)
    t.start()
    started.wait()
    t0 = time.monotonic()
    call()
    t1 = time.monotonic()
    stop.set()
    t.join()
    return t0, t1, beats


def assert_ran_in_parallel(t0, t1, beats):
    # The middle half of the call: far from its start and end (more than
    # a switch interval, 5 ms, as the call takes 80 ms or more).
    lo, hi = t0 + (t1 - t0) / 4, t1 - (t1 - t0) / 4
    inside = [b for b in beats if lo < b < hi]
    assert inside, f"no Python progress during the {1000 * (t1 - t0):.0f} ms call: the GIL was held"


def check_releases_gil(prepare, min_seconds=0.08, tries=6):
    """prepare(scale) returns a call; runs it under heartbeat_during,
    doubling scale until the call takes min_seconds (a release build is
    fast), then checks that another thread ran Python during it."""
    scale = 1
    for _ in range(tries):
        call = prepare(scale)
        t0, t1, beats = heartbeat_during(call)
        if t1 - t0 >= min_seconds:
            assert_ran_in_parallel(t0, t1, beats)
            return
        scale *= 2
    raise AssertionError(f"the call never took {min_seconds} s (last {t1 - t0:.3f} s at scale {scale // 2})")


def big_db(path, rounds=4, n=20000):
    db = pith.DB(path, merge_trigger=16)  # leave the merging to compact()
    for r in range(rounds):
        fill(db, n, value=b"round %d value with some text to compress " % r)
        db.flush()
    return db


def test_compact_releases_the_gil(tmp_path):
    dbs = []

    def prepare(scale):
        db = big_db(str(tmp_path / f"db{scale}"), n=10000 * scale)
        dbs.append(db)
        return db.compact

    try:
        check_releases_gil(prepare)
        assert len(dbs[-1].stats()["segments"]) == 1
    finally:
        for db in dbs:
            db.close()


def test_verify_releases_the_gil(path):
    db = big_db(path, rounds=1, n=0)
    try:

        def prepare(scale):
            fill(db, 20000 * scale, prefix=b"s%d-" % scale)
            db.flush()
            return db.verify

        check_releases_gil(prepare)
    finally:
        db.close()


def test_bulk_load_releases_the_gil(path):
    db = pith.DB(path)
    try:

        def prepare(scale):
            pairs = [(b"bulk%d-%07d" % (scale, i), b"value %d" % i) for i in range(50000 * scale)]
            return lambda: db.bulk_load(pairs)

        check_releases_gil(prepare)
    finally:
        db.close()


def test_threads_share_one_handle(db):
    errors = []

    def worker(tid):
        try:
            for i in range(500):
                k = b"t%d-%04d" % (tid, i)
                db.put(k, k)
                assert db.get(k) == k
                if i % 100 == 0:
                    list(db.keys(prefix=b"t%d-" % tid))
            with db.write_batch() as b:
                for i in range(0, 500, 2):
                    b.delete(b"t%d-%04d" % (tid, i))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert db.count_keys() == 4 * 250
    for tid in range(4):
        assert list(db.keys(prefix=b"t%d-" % tid)) == [b"t%d-%04d" % (tid, i) for i in range(1, 500, 2)]


def test_close_waits_for_calls_in_flight(path):
    db = big_db(path, rounds=3, n=10000)
    result = {}

    def compact():
        try:
            db.compact()
            result["ok"] = True
        except pith.ClosedError:
            result["closed-first"] = True

    t = threading.Thread(target=compact)
    t.start()
    time.sleep(0.01)
    db.close()  # waits for the compaction if it started, or wins the race
    t.join()
    assert result in ({"ok": True}, {"closed-first": True})
    with pith.DB(path) as again:
        assert again.count_keys() == 10000
        again.verify()


def test_iterating_in_one_thread_while_another_closes(path):
    db = pith.DB(path)
    fill(db, 20000)
    db.flush()
    seen, outcome = [], []

    def walk():
        try:
            for k in db.keys():
                seen.append(k)
            outcome.append("finished")
        except pith.ClosedError:
            outcome.append("closed")

    t = threading.Thread(target=walk)
    t.start()
    while not seen:
        time.sleep(0.001)
    db.close()
    t.join()
    assert outcome in (["finished"], ["closed"])
    assert seen == sorted(seen)

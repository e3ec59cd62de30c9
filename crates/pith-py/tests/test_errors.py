"""The exception hierarchy: locks, corruption, closed handles."""

import glob
import os
import subprocess
import sys
import textwrap

import pytest

import pith
from conftest import fill


def test_hierarchy():
    for name in (
        "CorruptionError",
        "LockedError",
        "ReadOnlyError",
        "InvalidArgumentError",
        "IOError",
        "NoSpaceError",
        "NotFoundError",
        "AlreadyExistsError",
        "ClosedError",
    ):
        cls = getattr(pith, name)
        assert issubclass(cls, pith.Error), name
        assert cls.__module__ == "pith"
        assert cls.__doc__
    assert issubclass(pith.Error, Exception)
    assert issubclass(pith.InvalidArgumentError, ValueError)
    assert issubclass(pith.IOError, OSError)
    assert issubclass(pith.NoSpaceError, pith.IOError)
    assert pith.IOError is not OSError


def test_locked_in_the_same_process(path, db):
    with pytest.raises(pith.LockedError, match="locked") as e:
        pith.DB(path)
    assert e.value.path == path
    db.close()
    with pith.DB(path) as again:  # the lock is released by close()
        again[b"k"] = b"v"


CHILD = textwrap.dedent(
    """
    import sys, pith
    db = pith.DB(sys.argv[1])
    print("ready", flush=True)
    sys.stdin.readline()
    db.close()
    """
)


def test_locked_by_another_process(path):
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout.readline().strip() == "ready"
        with pytest.raises(pith.LockedError):
            pith.DB(path)
        # A read-only handle takes no lock.
        with pith.DB(path, read_only=True):
            pass
    finally:
        child.communicate("done\n", timeout=60)
    assert child.returncode == 0
    with pith.DB(path):
        pass


def test_another_process_sees_the_lock(path, db):
    code = "import sys, pith\ntry:\n    pith.DB(sys.argv[1])\nexcept pith.LockedError as e:\n    print(type(e).__name__, e.path)\n"
    out = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == f"LockedError {path}", out.stderr


def damage_segment(path):
    """Flips 64 bytes in the middle of the one segment file; returns its path."""
    (seg,) = glob.glob(os.path.join(path, "*.seg"))
    with open(seg, "r+b") as f:
        data = bytearray(f.read())
        mid = len(data) // 2
        for i in range(mid, mid + 64):
            data[i] ^= 0xFF
        f.seek(0)
        f.write(data)
    return seg


def test_corruption_error_names_the_segment(path):
    with pith.DB(path) as db:
        fill(db, 2000)
        db.flush()
    seg = damage_segment(path)
    with pytest.raises(pith.CorruptionError) as e:
        db = pith.DB(path)
        try:
            db.verify()
        finally:
            db.close()
    assert os.path.basename(seg) in str(e.value)
    assert e.value.path == seg
    assert isinstance(e.value, pith.Error)


def closed_calls(db, snap, batch):
    return {
        "get": lambda: db.get(b"k"),
        "getitem": lambda: db[b"k"],
        "contains": lambda: b"k" in db,
        "put": lambda: db.put(b"k", b"v"),
        "setitem": lambda: db.__setitem__(b"k", b"v"),
        "delete": lambda: db.delete(b"k"),
        "iterator": lambda: db.iterator(),
        "iter": lambda: iter(db),
        "search": lambda: db.search("k"),
        "snapshot": db.snapshot,
        "stats": db.stats,
        "verify": db.verify,
        "flush": db.flush,
        "compact": db.compact,
        "count_keys": db.count_keys,
        "bulk_load": lambda: db.bulk_load([(b"a", b"b")]),
        "get_with_deadline": lambda: db.get_with_deadline(b"k"),
        "snapshot.get": lambda: snap.get(b"k"),
        "snapshot.items": lambda: snap.items(),
        "batch.write": batch.write,
    }


def test_closed_db_raises_closed_error_everywhere(path):
    db = pith.DB(path)
    db[b"k"] = b"v"
    snap = db.snapshot()
    batch = db.write_batch()
    batch.put(b"x", b"y")
    db.close()
    db.close()  # twice is fine
    assert db.closed
    for name, call in closed_calls(db, snap, batch).items():
        with pytest.raises(pith.ClosedError, match="closed"):
            call()
            pytest.fail(name)
    # Collecting into a closed batch is fine; writing it is not.
    batch.put(b"more", b"ops")
    with pytest.raises(pith.ClosedError):
        with db.write_batch() as b:
            b.put(b"a", b"b")


def test_exceptions_pickle_by_class(path, db):
    import pickle

    try:
        pith.DB(path)
    except pith.LockedError as e:
        again = pickle.loads(pickle.dumps(e))
        assert type(again) is pith.LockedError
        assert str(again) == str(e)

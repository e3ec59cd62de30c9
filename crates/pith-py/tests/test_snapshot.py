"""Snapshots: a consistent view, through flushes and compactions."""

import pytest

import pith
from conftest import fill


def test_snapshot_sees_the_past(db):
    db[b"a"] = b"1"
    db[b"b"] = b"1"
    with db.snapshot() as snap:
        db[b"a"] = b"2"
        del db[b"b"]
        db[b"c"] = b"new"
        db.flush()
        db.compact()
        assert snap[b"a"] == b"1"
        assert snap.get(b"b") == b"1"
        assert b"c" not in snap
        assert snap.get(b"c", b"dflt") == b"dflt"
        with pytest.raises(KeyError):
            snap[b"c"]
        assert list(snap.items()) == [(b"a", b"1"), (b"b", b"1")]
        assert list(snap) == [b"a", b"b"]
        assert list(snap.keys(reverse=True)) == [b"b", b"a"]
        assert list(snap.values(prefix=b"a")) == [b"1"]
        assert list(snap.iterator(start=b"b", include_value=False)) == [b"b"]
        assert list(snap.search("[ab]", include_value=False)) == [b"a", b"b"]
        assert isinstance(snap.sequence, int)
        assert repr(snap).startswith("<pith.Snapshot at sequence")
    assert db[b"a"] == b"2"


def test_released_snapshot_raises_closed(db):
    fill(db, 10)
    snap = db.snapshot()
    it = snap.items()
    snap.close()
    snap.close()  # twice is fine
    assert snap.sequence is None
    with pytest.raises(pith.ClosedError, match="snapshot"):
        snap.get(b"key000001")
    with pytest.raises(pith.ClosedError):
        snap.items()
    # An iterator made before the release holds what it reads.
    assert len(list(it)) == 10


def test_snapshot_of_closed_db(path):
    db = pith.DB(path)
    db[b"k"] = b"v"
    snap = db.snapshot()
    db.close()
    with pytest.raises(pith.ClosedError, match="database"):
        snap.get(b"k")

"""Write batches: atomic on a clean exit, discarded on an exception."""

import pytest

import pith


def test_batch_commits_on_clean_exit(db):
    db[b"gone"] = b"x"
    with db.write_batch() as b:
        b.put(b"a", b"1")
        b.put("b", "2")
        b.delete(b"gone")
        assert len(b) == 3
        assert b"a" not in db  # nothing is visible before the exit
    assert db[b"a"] == b"1" and db[b"b"] == b"2"
    assert b"gone" not in db
    assert len(b) == 0


def test_exception_in_block_writes_nothing(db):
    db[b"keep"] = b"old"
    with pytest.raises(ZeroDivisionError):
        with db.write_batch() as b:
            b.put(b"a", b"1")
            b.put(b"keep", b"new")
            b.delete(b"keep")
            1 / 0
    assert b"a" not in db
    assert db[b"keep"] == b"old"
    assert len(b) == 0


def test_explicit_write_clear_and_reuse(db):
    b = db.write_batch(sync=True)
    b.put(b"x", b"1")
    b.clear()
    b.put(b"y", b"2")
    b.write()
    assert b"x" not in db and db[b"y"] == b"2"
    b.put(b"z", b"3")
    b.write()
    assert db[b"z"] == b"3"
    assert repr(b) == "<pith.WriteBatch of 0 operations>"


def test_batch_is_atomic_for_readers(db):
    # A snapshot taken before the write sees none of it; after, all of it.
    keys = [b"k%04d" % i for i in range(1000)]
    before = db.snapshot()
    with db.write_batch() as b:
        for k in keys:
            b.put(k, k)
    after = db.snapshot()
    assert list(before.keys()) == []
    assert list(after.keys()) == keys


def test_batch_survives_reopen(path):
    with pith.DB(path) as db:
        with db.write_batch() as b:
            for i in range(100):
                b.put(b"%d" % i, b"v")
    with pith.DB(path) as db:
        assert db.count_keys() == 100


def test_batch_type_errors(db):
    b = db.write_batch()
    with pytest.raises(TypeError, match="key"):
        b.put(5, b"v")
    with pytest.raises(TypeError, match="value"):
        b.put(b"k", 5)
    with pytest.raises(TypeError, match="key"):
        b.delete(None)

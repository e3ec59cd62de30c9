"""Iterators: both directions, start/stop/prefix bounds, keys/values only,
laziness, and the state they read."""

import pytest

import pith
from conftest import fill

KEYS = [b"a", b"ab", b"abc", b"b", b"ba", b"c", b"c\xff", b"c\xff\xff", b"d"]


@pytest.fixture
def loaded(db):
    # Half in a segment, half in the memtable, so iterators merge both.
    for k in KEYS[::2]:
        db[k] = b"v:" + k
    db.flush()
    for k in KEYS[1::2]:
        db[k] = b"v:" + k
    return db


def keys(it):
    return [k for k, _ in it]


def test_forward_and_reverse(loaded):
    assert keys(loaded.iterator()) == KEYS
    assert keys(loaded.iterator(reverse=True)) == KEYS[::-1]
    assert list(loaded.items()) == [(k, b"v:" + k) for k in KEYS]
    assert list(loaded.keys()) == KEYS
    assert list(loaded.values()) == [b"v:" + k for k in KEYS]
    assert list(loaded.values(reverse=True)) == [b"v:" + k for k in KEYS[::-1]]


@pytest.mark.parametrize(
    "start,stop",
    [
        (None, None),
        (b"ab", None),
        (None, b"c"),
        (b"ab", b"c"),
        (b"aa", b"bb"),  # bounds that are not keys
        (b"b", b"b"),  # empty
        (b"c", b"a"),  # inverted: empty
        (b"", b"\xff"),
        (b"e", None),  # past the end
    ],
)
@pytest.mark.parametrize("reverse", [False, True])
def test_start_inclusive_stop_exclusive(loaded, start, stop, reverse):
    expected = [k for k in KEYS if (start is None or k >= start) and (stop is None or k < stop)]
    if reverse:
        expected.reverse()
    assert list(loaded.keys(start=start, stop=stop, reverse=reverse)) == expected
    assert keys(loaded.items(start=start, stop=stop, reverse=reverse)) == expected


@pytest.mark.parametrize("prefix", [b"a", b"ab", b"c", b"c\xff", b"c\xff\xff", b"", b"z", "b"])
@pytest.mark.parametrize("reverse", [False, True])
def test_prefix(loaded, prefix, reverse):
    p = prefix.encode() if isinstance(prefix, str) else prefix
    expected = [k for k in KEYS if k.startswith(p)]
    if reverse:
        expected.reverse()
    assert list(loaded.keys(prefix=prefix, reverse=reverse)) == expected


def test_prefix_excludes_start_and_stop(loaded):
    with pytest.raises(pith.InvalidArgumentError, match="prefix"):
        loaded.iterator(prefix=b"a", start=b"a")
    with pytest.raises(ValueError):  # InvalidArgumentError is a ValueError
        loaded.keys(prefix=b"a", stop=b"b")


def test_include_flags(loaded):
    assert list(loaded.iterator(include_value=False)) == KEYS
    assert list(loaded.iterator(include_key=False)) == [b"v:" + k for k in KEYS]
    with pytest.raises(pith.InvalidArgumentError):
        loaded.iterator(include_key=False, include_value=False)


def test_iterator_is_lazy_and_reads_its_creation_state(db):
    fill(db, 1000)
    it = db.keys()
    assert next(it) == b"key000000"
    db[b"key000001x"] = b"late"  # written after the iterator was made
    del db[b"key000002"]
    rest = list(it)
    assert b"key000001x" not in rest
    assert b"key000002" in rest
    assert len(rest) == 999
    assert next(it, None) is None  # exhausted stays exhausted
    with pytest.raises(StopIteration):
        next(it)


def test_iterator_close_and_repr(db):
    fill(db, 5)
    it = db.items()
    next(it)
    it.close()
    assert list(it) == []
    assert repr(it).startswith("<pith.Iterator on ")


def test_deleted_and_overwritten_keys_across_segments(db):
    for round_ in range(3):
        for i in range(50):
            db[b"%02d" % i] = b"%d" % round_
        for i in range(round_, 50, 3):
            del db[b"%02d" % i]
        db.flush()
    model = {}
    for round_ in range(3):
        for i in range(50):
            model[b"%02d" % i] = b"%d" % round_
        for i in range(round_, 50, 3):
            model.pop(b"%02d" % i, None)
    assert list(db.items()) == sorted(model.items())
    assert list(db.items(reverse=True)) == sorted(model.items(), reverse=True)


def test_iterator_after_close_raises_closed(path):
    db = pith.DB(path)
    fill(db, 10)
    it = db.items()
    next(it)
    db.close()
    with pytest.raises(pith.ClosedError):
        next(it)
    with pytest.raises(pith.ClosedError):
        db.items()


def test_iterator_outlives_its_db_object(path):
    # The iterator keeps the handle alive: dropping the DB object does not
    # free what the iterator reads.
    db = pith.DB(path)
    fill(db, 100)
    it = db.values()
    del db
    import gc

    gc.collect()
    assert len(list(it)) == 100


def test_raw_iterator(loaded):
    it = loaded.raw_iterator()
    assert not it.valid() and it.key() is None and it.value() is None
    it.seek_to_first()
    walked = []
    while it.valid():
        walked.append(it.key())
        it.next()
    assert walked == KEYS
    it.next()  # past the end: nothing happens
    assert not it.valid()
    it.seek_to_last()
    back = []
    while it.valid():
        back.append((it.key(), it.value()))
        it.prev()
    assert back == [(k, b"v:" + k) for k in reversed(KEYS)]
    it.seek(b"abz")  # not a key: the next one
    assert it.key() == b"b"
    it.prev()  # change of direction
    assert it.key() == b"abc"
    it.next()
    it.next()
    assert it.key() == b"ba"
    it.seek_for_prev(b"c\xff\x00")
    assert it.key() == b"c\xff"
    it.seek_for_prev(b"c")
    assert it.key() == b"c" and it.value() == b"v:c"
    assert it.deadline() is None
    it.status()
    it.seek(b"zzz")
    assert not it.valid()
    assert repr(it).startswith("<pith.RawIterator on ")
    with pytest.raises(TypeError, match="key"):
        it.seek(5)


def test_raw_iterator_deadline_snapshot_and_close(path):
    db = pith.DB(path)
    db.put(b"a", b"1", expire_at_ms=10**13)
    with db.snapshot() as snap:
        db[b"b"] = b"2"
        it = snap.raw_iterator()
        it.seek_to_first()
        assert it.key() == b"a" and it.deadline() == 10**13
        it.next()
        assert not it.valid()  # b was written after the snapshot
    it = db.raw_iterator()
    it.seek_to_first()
    db.close()
    with pytest.raises(pith.ClosedError):
        it.next()
    with pytest.raises(pith.ClosedError):
        it.key()

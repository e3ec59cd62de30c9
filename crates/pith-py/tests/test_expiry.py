"""Keys with a time to live or a deadline."""

import time

import pytest

import pith


def test_ttl_and_deadline(db):
    now = db.now_ms()
    assert abs(now - time.time() * 1000) < 60_000
    db.put(b"forever", b"v")
    db.put(b"day", b"v", ttl_ms=86_400_000)
    db.put(b"at", b"v", expire_at_ms=now + 3_600_000)
    db.put(b"past", b"v", expire_at_ms=1)
    assert db.get_with_deadline(b"forever") == (b"v", None)
    value, deadline = db.get_with_deadline(b"day")
    assert value == b"v" and now + 86_400_000 <= deadline <= db.now_ms() + 86_400_000
    assert db.get_with_deadline(b"at") == (b"v", now + 3_600_000)
    assert db.get_with_deadline(b"past") is None
    assert b"past" not in db
    assert list(db.keys()) == [b"at", b"day", b"forever"]
    db.flush()
    assert db.get_with_deadline(b"at") == (b"v", now + 3_600_000)
    assert db.stats()["segments"][0]["expiring"] >= 1


def test_short_ttl_expires(db):
    db.put(b"k", b"v", ttl_ms=50)
    assert db[b"k"] == b"v"
    time.sleep(0.2)
    assert db.get(b"k") is None
    assert list(db.items()) == []


def test_a_later_put_drops_the_deadline(db):
    db.put(b"k", b"v", ttl_ms=1_000_000)
    db.put(b"k", b"v2")
    assert db.get_with_deadline(b"k") == (b"v2", None)


def test_batch_expiry(db):
    with db.write_batch() as b:
        b.put(b"a", b"1", ttl_ms=1_000_000)
        b.put(b"b", b"2", expire_at_ms=1)
        b.put(b"c", b"3")
    assert db.get_with_deadline(b"a")[1] is not None
    assert b"b" not in db
    assert db.get_with_deadline(b"c") == (b"3", None)


def test_bad_expiry_arguments(db):
    with pytest.raises(pith.InvalidArgumentError, match="not both"):
        db.put(b"k", b"v", ttl_ms=1, expire_at_ms=1)
    with pytest.raises(pith.InvalidArgumentError, match="ttl_ms must be >= 0"):
        db.put(b"k", b"v", ttl_ms=-1)
    with pytest.raises(pith.InvalidArgumentError, match="expire_at_ms"):
        db.write_batch().put(b"k", b"v", expire_at_ms=-5)
    assert b"k" not in db

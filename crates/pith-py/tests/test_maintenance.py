"""stats(), verify(), flush(), compact(), settle(), sync_wal(), bulk_load()."""

import pytest

import pith
from conftest import fill


def test_stats_is_a_dict_of_the_engine_fields(db):
    s = db.stats()
    for field in (
        "segments",
        "memtable_bytes",
        "memtable_entries",
        "frozen_memtables",
        "disk_bytes",
        "wal_bytes",
        "last_sequence",
        "records_copied",
        "records_encoded",
        "value_cache",
        "models",
    ):
        assert field in s, field
    assert s["segments"] == []
    fill(db, 500)
    assert db.stats()["memtable_entries"] == 500
    db.flush()
    s = db.stats()
    assert s["memtable_entries"] == 0
    (seg,) = s["segments"]
    assert seg["keys"] == 500 and seg["records"] == 500
    assert seg["file_bytes"] > 0 and isinstance(seg["codec"], str)
    assert isinstance(seg["seq_range"], tuple)
    # The first segment, no snapshot: no reader needs its sequence numbers.
    assert seg["tag_bits"] == 0
    assert s["disk_bytes"] >= seg["file_bytes"]
    before = s["value_cache"]["hits"]
    for _ in range(2):
        for i in range(0, 500, 7):
            db.get(b"key%06d" % i)
    cache = db.stats()["value_cache"]
    assert cache["hits"] > before and cache["values"] > 0
    assert 0 < cache["charged_bytes"] <= cache["capacity_bytes"]


def test_compact_merges_segments(db):
    for round_ in range(3):
        fill(db, 200, value=b"round%d-" % round_)
        db.flush()
    assert len(db.stats()["segments"]) >= 1
    db.compact()
    s = db.stats()
    assert len(s["segments"]) == 1
    assert s["segments"][0]["keys"] == 200
    assert db[b"key000007"] == b"round2-000007"
    db.settle()
    db.sync_wal()


def test_verify_reports(db):
    fill(db, 300)
    db.flush()
    fill(db, 10, prefix=b"mem")
    r = db.verify()
    assert r["segments"] == 1 and r["records"] == 300
    assert r["wals"] >= 1 and r["wal_records"] >= 1
    assert r["torn_logs"] == []


def test_bulk_load(db):
    def gen():
        for i in range(5000):
            yield (b"bulk%05d" % i, b"v%d" % i)
        yield ("bulk00000", "last wins")

    r = db.bulk_load(gen())
    assert r["records"] == 5001 and r["keys"] == 5000 and r["segments"] >= 1
    assert db[b"bulk00000"] == b"last wins"
    assert db[b"bulk04999"] == b"v4999"
    assert db.count_keys() == 5000
    assert db.bulk_load([]) ["records"] == 0


def test_bulk_load_input_errors(db):
    def bad():
        yield (b"a", b"1")
        raise KeyError("from the generator")

    with pytest.raises(KeyError, match="from the generator"):
        db.bulk_load(bad())
    with pytest.raises(TypeError, match="tuples"):
        db.bulk_load([b"not a pair"])
    with pytest.raises(TypeError, match="value"):
        db.bulk_load([(b"k", 3)])
    with pytest.raises(TypeError):
        db.bulk_load(5)


def test_bulk_load_input_cannot_use_the_db(db):
    def sneaky():
        yield (b"a", b"1")
        db.get(b"a")
        yield (b"b", b"2")

    with pytest.raises(pith.InvalidArgumentError, match="bulk_load"):
        db.bulk_load(sneaky())
    db[b"still"] = b"usable"
    assert db[b"still"] == b"usable"

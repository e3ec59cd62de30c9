"""Point reads and writes, the mapping protocol, str/bytes handling,
options and reopening."""

import os

import pytest

import pith


def test_put_get_delete(db):
    assert db.get(b"missing") is None
    assert db.get(b"missing", b"fallback") == b"fallback"
    assert db.get(b"missing", default=7) == 7
    db.put(b"k", b"v")
    assert db.get(b"k") == b"v"
    db.put(b"k", b"v2", sync=True)
    assert db.get(b"k") == b"v2"
    db.delete(b"k")
    assert db.get(b"k") is None
    db.delete(b"never-there")  # a no-op
    db.delete(b"k", sync=True)


def test_mapping_protocol(db):
    db[b"a"] = b"1"
    assert db[b"a"] == b"1"
    assert b"a" in db
    assert b"b" not in db
    with pytest.raises(KeyError) as e:
        db[b"b"]
    assert e.value.args == (b"b",)
    del db[b"a"]
    assert b"a" not in db
    db[b"x"] = b""
    assert db[b"x"] == b"" and b"x" in db  # an empty value is a value
    db[b""] = b"empty key"
    assert db[b""] == b"empty key"
    assert list(db) == [b"", b"x"]


def test_str_is_utf8_and_reads_are_bytes(db):
    db.put("clé", "valeur ünïcode")
    assert db.get("clé") == "valeur ünïcode".encode()
    assert db.get("clé".encode()) == "valeur ünïcode".encode()
    db[bytearray(b"ba")] = bytearray(b"array")
    assert db[b"ba"] == b"array"
    assert isinstance(db[b"ba"], bytes)
    assert "clé" in db


@pytest.mark.parametrize("bad", [1, 1.5, None, object(), [b"a"], memoryview(b"a")])
def test_other_types_are_type_errors_naming_the_argument(db, bad):
    with pytest.raises(TypeError, match="key must be bytes or str"):
        db.get(bad)
    with pytest.raises(TypeError, match="value must be bytes or str"):
        db.put(b"k", bad)
    with pytest.raises(TypeError, match="key must be bytes or str"):
        db[bad] = b"v"
    with pytest.raises(TypeError, match="start must be bytes or str"):
        db.iterator(start=bad if bad is not None else 3)


def test_binary_keys_and_large_values(db):
    keys = [bytes([i, 0, 255 - i]) for i in range(256)]
    for k in keys:
        db[k] = k * 3
    big = os.urandom(1 << 20)
    db[b"big"] = big
    db.flush()
    for k in keys:
        assert db[k] == k * 3
    assert db[b"big"] == big


def test_reopen_keeps_data(path):
    with pith.DB(path) as db:
        db[b"memtable"] = b"only in the log"
        db[b"flushed"] = b"in a segment"
        db.flush()
        db[b"memtable2"] = b"after the flush"
        db.delete(b"flushed")
    assert db.closed
    with pith.DB(path) as db:
        assert db[b"memtable"] == b"only in the log"
        assert db[b"memtable2"] == b"after the flush"
        assert b"flushed" not in db


def test_context_manager_closes_on_exception(path):
    with pytest.raises(RuntimeError):
        with pith.DB(path) as db:
            db[b"k"] = b"v"
            raise RuntimeError("boom")
    assert db.closed
    with pith.DB(path) as db2:
        assert db2[b"k"] == b"v"


def test_options_and_properties(path):
    with pith.DB(
        path,
        memtable_bytes=1 << 20,
        bloom_bits_per_key=0,
        shared_models=False,
        resident_index=False,
        value_cache_bytes=0,
        value_reads="pread",
        background_threads=1,
        merge_trigger=2,
        max_merge_width=4,
        stall_segments=30,
        max_frozen_memtables=2,
        bulk_chunk_bytes=1 << 20,
        build_memory_bytes=16 << 20,
    ) as db:
        assert db.path == path
        assert not db.read_only
        assert not db.closed
        assert repr(db) == f"<pith.DB {path}>"
        db[b"k"] = b"v"
        db.flush()
        assert db[b"k"] == b"v"  # read from a segment, with pread
    assert repr(db) == f"<pith.DB {path} (closed)>"
    with pytest.raises(pith.InvalidArgumentError, match="merge_trigger"):
        pith.DB(path, merge_trigger=0)
    with pytest.raises(pith.InvalidArgumentError, match="value_reads"):
        pith.DB(path, value_reads="mmap")
    assert isinstance(pith.DB.__init__, object)
    with pytest.raises(TypeError):
        pith.DB(path, True)  # options are keyword-only


def test_path_like(tmp_path):
    with pith.DB(tmp_path / "db") as db:
        db[b"k"] = b"v"
    assert (tmp_path / "db").is_dir()


def test_create_if_missing_and_error_if_exists(tmp_path):
    missing = str(tmp_path / "nothing")
    with pytest.raises(pith.NotFoundError, match="create_if_missing") as e:
        pith.DB(missing, create_if_missing=False)
    assert e.value.path == missing
    with pith.DB(missing):
        pass
    with pytest.raises(pith.AlreadyExistsError):
        pith.DB(missing, error_if_exists=True)
    with pith.DB(missing, create_if_missing=False):
        pass


def test_read_only(path):
    with pith.DB(path) as db:
        db[b"k"] = b"v"
    with pith.DB(path, read_only=True) as ro:
        assert ro.read_only
        assert ro[b"k"] == b"v"
        for write in (
            lambda: ro.put(b"a", b"b"),
            lambda: ro.delete(b"k"),
            ro.flush,
            ro.compact,
        ):
            with pytest.raises(pith.ReadOnlyError) as e:
                write()
            assert e.value.path == path
        with pytest.raises(pith.ReadOnlyError):
            with ro.write_batch() as b:
                b.put(b"a", b"b")
        # A writer can open beside a read-only handle.
        with pith.DB(path) as rw:
            rw[b"new"] = b"x"
        assert b"new" not in ro  # the read-only handle sees the state it opened on


def test_count_keys(db):
    for i in range(100):
        db[b"%03d" % i] = b"v"
    db.flush()
    for i in range(50):
        del db[b"%03d" % i]
    assert db.count_keys() == 50


def test_non_empty_foreign_directory(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(pith.InvalidArgumentError, match="notes.txt"):
        pith.DB(str(tmp_path))


def test_get_many(db):
    for i in range(0, 100, 2):
        db[b"%03d" % i] = b"v%d" % i
    db.flush()
    db[b"mem"] = b"in the memtable"
    keys = [b"%03d" % i for i in range(100)] + [b"mem", "mem"]
    assert db.get_many(keys) == [db.get(k) for k in keys]
    assert db.get_many(iter([b"000", b"001"]), default=b"-") == [b"v0", b"-"]
    assert db.get_many([]) == []
    with db.snapshot() as s:
        db[b"000"] = b"changed"
        assert s.get_many([b"000", b"mem"]) == [b"v0", b"in the memtable"]
    with pytest.raises(TypeError, match="key must be bytes or str"):
        db.get_many([b"a", 1])
    with pytest.raises(TypeError):
        db.get_many(5)


def test_an_unreferenced_handle_closes_itself(path):
    import gc

    db = pith.DB(path)
    db[b"k"] = b"v"
    del db
    gc.collect()
    with pith.DB(path) as again:  # the lock was released
        assert again[b"k"] == b"v"

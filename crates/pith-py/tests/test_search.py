"""Regex search over whole keys."""

import pytest

import pith


@pytest.fixture
def pkgs(db):
    names = ["python3-numpy", "python3-scipy", "python3", "libzstd1", "zlib1g", "zstd", "python-is-python3"]
    for n in names:
        db["pkg/" + n] = "deb:" + n
    db.flush()
    db["pkg/python3-new"] = "deb:python3-new"  # in the memtable
    return db


def test_search_pairs_keys_and_limit(pkgs):
    got = list(pkgs.search(r"pkg/python3-.*"))
    assert got == [
        (b"pkg/python3-new", b"deb:python3-new"),
        (b"pkg/python3-numpy", b"deb:python3-numpy"),
        (b"pkg/python3-scipy", b"deb:python3-scipy"),
    ]
    assert list(pkgs.search(r"pkg/z.*", include_value=False)) == [b"pkg/zlib1g", b"pkg/zstd"]
    assert list(pkgs.search(r"pkg/.*", limit=2, include_value=False)) == [b"pkg/libzstd1", b"pkg/python-is-python3"]
    assert list(pkgs.search(r"pkg/.*", limit=0)) == []
    assert list(pkgs.search("python3")) == []  # whole-key match
    assert list(pkgs.search(b"pkg/zstd")) == [(b"pkg/zstd", b"deb:zstd")]


def test_search_resumes_from_a_start_key(pkgs):
    everything = list(pkgs.search(r"pkg/.*", include_value=False))
    for i, key in enumerate(everything):
        assert list(pkgs.search(r"pkg/.*", include_value=False, start=key)) == everything[i:]
        past = key + b"\x00"
        assert list(pkgs.search(r"pkg/.*", include_value=False, start=past)) == everything[i + 1 :]
    assert list(pkgs.search(r"pkg/python3.*", start="pkg/python3-o")) == [
        (b"pkg/python3-scipy", b"deb:python3-scipy")
    ]
    assert list(pkgs.search(r"pkg/.*", start=b"\xff")) == []
    snap = pkgs.snapshot()
    pkgs["pkg/python3-zz"] = "later"
    assert list(snap.search(r"pkg/python3-.*", include_value=False, start="pkg/python3-s")) == [b"pkg/python3-scipy"]
    with pytest.raises(TypeError, match="start"):
        pkgs.search(r"pkg/.*", start=1)


def test_search_is_lazy_and_skips_deleted(pkgs):
    del pkgs["pkg/zstd"]
    it = pkgs.search(r"pkg/z.*", include_value=False)
    assert repr(it).startswith("<pith.SearchIterator")
    assert next(it) == b"pkg/zlib1g"
    assert next(it, None) is None


def test_bad_regex_is_invalid_argument(pkgs):
    with pytest.raises(pith.InvalidArgumentError, match="regex"):
        pkgs.search("pkg/(z")
    with pytest.raises(pith.InvalidArgumentError, match="UTF-8"):
        pkgs.search(b"\xff")
    with pytest.raises(TypeError, match="pattern"):
        pkgs.search(1)

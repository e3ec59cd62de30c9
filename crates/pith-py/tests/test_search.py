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

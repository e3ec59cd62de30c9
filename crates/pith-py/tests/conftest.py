"""Fixtures for the pith test suite, run against an installed wheel
(see tests/wheel.rs, which builds it and makes the environment)."""

import pytest

import pith


@pytest.fixture
def path(tmp_path):
    """A path for a new database."""
    return str(tmp_path / "db")


@pytest.fixture
def db(path):
    """An open database, closed after the test."""
    d = pith.DB(path)
    yield d
    d.close()


def fill(db, n, prefix=b"key", value=b"value"):
    """Puts n keys prefix%06d -> value%06d; returns them in order."""
    pairs = [(b"%s%06d" % (prefix, i), b"%s%06d" % (value, i)) for i in range(n)]
    with db.write_batch() as b:
        for k, v in pairs:
            b.put(k, v)
    return pairs

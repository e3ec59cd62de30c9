"""Typed use of the pith API, checked by `mypy --strict` (test_package.py);
never run."""

from typing import Optional, Tuple

import pith


def use(path: str) -> None:
    with pith.DB(path, memtable_bytes=1 << 20) as db:
        v: Optional[bytes] = db.get(b"a")
        w: bytes = db.get(b"a", b"")
        db[b"k"] = "v"
        x: bytes = db[b"k"]
        ok: bool = b"k" in db
        with db.write_batch(sync=True) as b:
            b.put(b"a", b"b", ttl_ms=5)
            b.delete("a")
        with db.snapshot() as s:
            y: Optional[bytes] = s.get(b"a")
            for k in s.keys(prefix=b"a"):
                pass
        for kv in db.items(start=b"a", stop=b"z", reverse=True):
            pass
        d: Optional[Tuple[bytes, Optional[int]]] = db.get_with_deadline(b"k")
        st = db.stats()["segments"]
        r = db.bulk_load([(b"a", b"b")])
        try:
            db.search("(")
        except pith.InvalidArgumentError as e:
            print(e.path)
        except pith.Error:
            pass
        p: str = db.path

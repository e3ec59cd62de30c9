"""Type stubs for ``pith``, PithDB's Python bindings (a Rust extension).

Keys and values are ``bytes``; ``str`` (encoded UTF-8) and ``bytearray``
are accepted wherever a key or value is taken. Reads return ``bytes``.
"""

import os
from typing import Any, Dict, Iterable, Iterator as _Iterator, List, Literal, Optional, Tuple, TypeVar, Union, final, overload

__version__: str
__all__ = [
    "Error",
    "CorruptionError",
    "LockedError",
    "ReadOnlyError",
    "InvalidArgumentError",
    "IOError",
    "NoSpaceError",
    "NotFoundError",
    "AlreadyExistsError",
    "ClosedError",
    "DB",
    "WriteBatch",
    "Snapshot",
    "Iterator",
    "SearchIterator",
    "RawIterator",
    "__version__",
]

_Key = Union[bytes, bytearray, str]
_Value = Union[bytes, bytearray, str]
_T = TypeVar("_T")

class Error(Exception):
    """Base class of every error PithDB raises; ``path`` is set when a file is involved."""
    path: str

class CorruptionError(Error):
    """A file's bytes are not what PithDB wrote (the message names the file and offset)."""

class LockedError(Error):
    """Another process, or another open ``pith.DB``, holds the database."""

class ReadOnlyError(Error):
    """A write, flush or compaction on a database opened with ``read_only=True``."""

class InvalidArgumentError(Error, ValueError):
    """An argument PithDB cannot take (also a ``ValueError``)."""

class IOError(Error, OSError):
    """An operating-system I/O call failed (also an ``OSError``)."""

class NoSpaceError(IOError):
    """The disk or quota is full."""

class NotFoundError(Error):
    """No database at the path and ``create_if_missing=False``."""

class AlreadyExistsError(Error):
    """A database exists at the path and ``error_if_exists=True``."""

class ClosedError(Error):
    """The database or snapshot was closed."""

@final
class Iterator(_Iterator[Any]):
    """A lazy iterator over a key range: ``(key, value)`` tuples, keys, or values."""
    def __iter__(self) -> "Iterator": ...
    def __next__(self) -> Any: ...
    def close(self) -> None:
        """Ends the iteration early."""

@final
class SearchIterator(_Iterator[Any]):
    """A lazy iterator over the keys matching a regex: ``(key, value)`` tuples or keys."""
    def __iter__(self) -> "SearchIterator": ...
    def __next__(self) -> Any: ...

@final
class RawIterator:
    """A two-way iterator positioned by hand; values are decoded only by ``value()``."""
    def seek(self, key: _Key) -> None:
        """Moves to the first key ``>= key``."""
    def seek_for_prev(self, key: _Key) -> None:
        """Moves to the last key ``<= key``."""
    def seek_to_first(self) -> None:
        """Moves to the first key."""
    def seek_to_last(self) -> None:
        """Moves to the last key."""
    def next(self) -> None:
        """Steps to the next key."""
    def prev(self) -> None:
        """Steps to the previous key."""
    def valid(self) -> bool:
        """True when positioned on a key."""
    def key(self) -> Optional[bytes]:
        """The current key, or ``None`` when not valid."""
    def value(self) -> Optional[bytes]:
        """The current value (decoded now), or ``None`` when not valid."""
    def deadline(self) -> Optional[int]:
        """When the current key expires (ms since the epoch), or ``None``."""
    def status(self) -> None:
        """Raises the error that stopped the iterator, if any."""

@final
class WriteBatch:
    """Puts and deletes applied atomically by ``write()`` or on a clean ``with`` exit."""
    def put(self, key: _Key, value: _Value, *, ttl_ms: Optional[int] = None, expire_at_ms: Optional[int] = None) -> None:
        """Adds a put of ``key -> value`` (expiring as in ``DB.put``)."""
    def delete(self, key: _Key) -> None:
        """Adds a delete of ``key``."""
    def clear(self) -> None:
        """Drops every operation added so far."""
    def write(self) -> None:
        """Applies the batch atomically, then empties it."""
    def __len__(self) -> int: ...
    def __enter__(self) -> "WriteBatch": ...
    def __exit__(self, exc_type: Any = None, exc_value: Any = None, traceback: Any = None) -> bool: ...

class _Reader:
    # The read API shared by DB and Snapshot (not a runtime class).
    @overload
    def get(self, key: _Key) -> Optional[bytes]: ...
    @overload
    def get(self, key: _Key, default: _T) -> Union[bytes, _T]: ...
    def get_many(self, keys: Iterable[_Key], default: Optional[bytes] = None) -> List[Optional[bytes]]:
        """The values of ``keys`` in order, ``default`` for absent ones; one GIL release."""
    def __getitem__(self, key: _Key, /) -> bytes: ...
    def __contains__(self, key: object, /) -> bool: ...
    def __iter__(self) -> Iterator: ...
    def iterator(
        self,
        start: Optional[_Key] = None,
        stop: Optional[_Key] = None,
        prefix: Optional[_Key] = None,
        reverse: bool = False,
        include_key: bool = True,
        include_value: bool = True,
    ) -> Iterator:
        """Keys in ``[start, stop)`` or beginning with ``prefix``, forwards or reversed."""
    def raw_iterator(self) -> RawIterator:
        """A two-way iterator positioned by hand, unpositioned at first."""
    def items(
        self, start: Optional[_Key] = None, stop: Optional[_Key] = None, prefix: Optional[_Key] = None, reverse: bool = False
    ) -> Iterator:
        """``(key, value)`` tuples (an ``Iterator`` of ``Tuple[bytes, bytes]``)."""
    def keys(
        self, start: Optional[_Key] = None, stop: Optional[_Key] = None, prefix: Optional[_Key] = None, reverse: bool = False
    ) -> Iterator:
        """Keys only; no value is decoded."""
    def values(
        self, start: Optional[_Key] = None, stop: Optional[_Key] = None, prefix: Optional[_Key] = None, reverse: bool = False
    ) -> Iterator:
        """Values only, in key order."""
    def search(
        self,
        pattern: Union[str, bytes],
        limit: Optional[int] = None,
        include_value: bool = True,
        start: Optional[Union[str, bytes, bytearray]] = None,
    ) -> SearchIterator:
        """Keys matching regex ``pattern`` (whole-key match), from ``start`` on, at most ``limit``."""

@final
class Snapshot(_Reader):
    """A consistent read view of the database as it was when taken."""
    @property
    def sequence(self) -> Optional[int]:
        """The sequence number read at (``None`` once released)."""
    def close(self) -> None:
        """Releases the snapshot."""
    def __enter__(self) -> "Snapshot": ...
    def __exit__(self, *exc: Any) -> bool: ...

@final
class DB(_Reader):
    """An open PithDB database; a context manager that closes it on exit."""
    def __new__(
        cls,
        path: Union[str, "os.PathLike[str]"],
        *,
        create_if_missing: bool = True,
        error_if_exists: bool = False,
        read_only: bool = False,
        memtable_bytes: Optional[int] = None,
        max_frozen_memtables: Optional[int] = None,
        merge_trigger: Optional[int] = None,
        max_merge_width: Optional[int] = None,
        stall_segments: Optional[int] = None,
        background_threads: Optional[int] = None,
        bloom_bits_per_key: Optional[int] = None,
        shared_models: Optional[bool] = None,
        resident_index: Optional[bool] = None,
        value_cache_bytes: Optional[int] = None,
        value_reads: Optional[Literal["mapped", "pread"]] = None,
        bulk_chunk_bytes: Optional[int] = None,
        build_memory_bytes: Optional[int] = None,
    ) -> "DB": ...
    def get_with_deadline(self, key: _Key) -> Optional[Tuple[bytes, Optional[int]]]:
        """``(value, deadline_ms or None)``, or ``None`` when absent."""
    def now_ms(self) -> int:
        """The database clock, in milliseconds since the Unix epoch."""
    def put(
        self, key: _Key, value: _Value, sync: bool = False, *, ttl_ms: Optional[int] = None, expire_at_ms: Optional[int] = None
    ) -> None:
        """Puts ``key -> value``, optionally fsynced and/or expiring."""
    def delete(self, key: _Key, sync: bool = False) -> None:
        """Deletes ``key`` (nothing happens when absent)."""
    def __setitem__(self, key: _Key, value: _Value, /) -> None: ...
    def __delitem__(self, key: _Key, /) -> None: ...
    def write_batch(self, sync: bool = False) -> WriteBatch:
        """A batch applied atomically on ``write()`` or a clean ``with`` exit."""
    def snapshot(self) -> Snapshot:
        """A consistent read view of the database as it is now."""
    def count_keys(self) -> int:
        """Live keys, exact: from the one segment of a settled database, otherwise by walking them."""
    def stats(self) -> Dict[str, Any]:
        """Sizes and counts (segments, memtable, disk, log, models)."""
    def verify(self) -> Dict[str, Any]:
        """Checks every checksum of every live file; raises ``CorruptionError``."""
    def flush(self) -> None:
        """Builds the memtable into a segment and waits."""
    def compact(self) -> None:
        """Merges every segment into one and waits."""
    def settle(self) -> None:
        """Flushes and waits for background merges to finish."""
    def sync_wal(self) -> None:
        """Fsyncs the log: every acknowledged write becomes durable."""
    def bulk_load(self, records: Iterable[Tuple[_Key, _Value]]) -> Dict[str, int]:
        """Loads ``(key, value)`` pairs straight into segments."""
    def close(self) -> None:
        """Closes the database; later use raises ``ClosedError``."""
    @property
    def closed(self) -> bool:
        """True once closed."""
    @property
    def path(self) -> str:
        """The database directory."""
    @property
    def read_only(self) -> bool:
        """True when opened with ``read_only=True``."""
    def __enter__(self) -> "DB": ...
    def __exit__(self, *exc: Any) -> bool: ...

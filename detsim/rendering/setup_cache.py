"""Prepared setups kept for reuse: the same configuration prepared again is not computed again.

A configuration is keyed by a digest of its content (:func:`config_key`), not by identity: configurations
read twice from the same command line, arrays (a mask, an HKL table) included, share one key. A configuration
that holds anything the digest cannot read exactly (a tensor, which may carry a gradient or change in
place; an object of an unknown type) has no key and is never reused. The cache (:class:`SetupCache`) is
bounded in entries and in bytes, least recently used first out. What is computed from a kept setup (the
fused kernel's packed parameters on a device) is kept with it (:class:`Derived`), for every setup made from it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
from collections import OrderedDict
from enum import Enum
from typing import Any, Callable, Generic, TypeVar

import numpy as np

MAX_ENTRIES = 8
MAX_BYTES = 256 << 20  # the tensors of the setups kept, together (a 4096² pixel list alone is 128 MiB)

Value = TypeVar("Value")


class _Unkeyable(Exception):
    """The configuration holds something the digest does not read exactly."""


def config_key(config: Any) -> str | None:
    """A digest of everything ``config`` holds (BLAKE2b, hex), or None where it holds a tensor or an object the
    digest does not know (such a configuration is prepared every time)."""
    digest = hashlib.blake2b(digest_size=32)  # a cache key (the suite's image hashes are sha256, elsewhere)
    try:
        _feed(digest, config)
    except _Unkeyable:
        return None
    return digest.hexdigest()


def _feed(digest, value: Any) -> None:
    update = digest.update
    if value is None or isinstance(value, (bool, int, str)):
        update(f"{type(value).__name__}:{value!r};".encode())
    elif isinstance(value, float):
        update(f"float:{value.hex()};".encode())  # exact: 0.1 and 0.1 + 1 ulp differ
    elif isinstance(value, Enum):
        update(f"{type(value).__qualname__}.{value.name};".encode())
    elif isinstance(value, os.PathLike):
        update(f"path:{os.fspath(value)!r};".encode())
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        update(f"{type(value).__module__}.{type(value).__qualname__}(".encode())
        for f in dataclasses.fields(value):
            update(f"{f.name}=".encode())
            _feed(digest, getattr(value, f.name))
        update(b")")
    elif isinstance(value, (tuple, list)):
        update(f"{type(value).__name__}[{len(value)}](".encode())
        for item in value:
            _feed(digest, item)
        update(b")")
    elif isinstance(value, np.ndarray) and value.dtype != object:
        update(f"array:{value.dtype.str}:{value.shape}:".encode())
        update(np.ascontiguousarray(value).tobytes())
        update(b";")
    elif isinstance(value, np.generic) and not isinstance(value, np.object_):
        update(f"scalar:{value.dtype.str}:".encode() + value.tobytes() + b";")
    else:
        raise _Unkeyable(type(value).__name__)


class Derived:
    """Values computed from one kept setup and kept with it (a device's packed kernel parameters, say): every
    setup prepared from the same cache entry carries this one object, so a value computed for one of them
    serves the others; it goes when the entry has left the cache and no setup made from it is alive. Keys are
    few (a kind and a device), so it holds a few values; safe to share between threads."""

    def __init__(self):
        self._values: dict[Any, Any] = {}
        self._lock = threading.Lock()

    def get_or_make(self, key: Any, make: Callable[[], Value]) -> Value:
        """The value kept under ``key``, made by ``make()`` the first time."""
        with self._lock:
            if key not in self._values:
                self._values[key] = make()
            return self._values[key]

    def __len__(self) -> int:
        return len(self._values)


class SetupCache(Generic[Value]):
    """At most ``entries`` values, of at most ``max_bytes`` together, least recently used out first; safe to
    share between threads."""

    def __init__(self, entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES):
        self.entries, self.max_bytes = entries, max_bytes
        self._kept: OrderedDict[Any, tuple[Value, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Value | None:
        with self._lock:
            found = self._kept.get(key)
            if found is None:
                return None
            self._kept.move_to_end(key)
            return found[0]

    def put(self, key: Any, value: Value, nbytes: int) -> None:
        """Keep ``value`` (``nbytes`` of tensors) under ``key``; one larger than the whole bound is not kept."""
        if nbytes > self.max_bytes or self.entries <= 0:
            return
        with self._lock:
            self._kept.pop(key, None)
            self._kept[key] = (value, nbytes)
            while len(self._kept) > self.entries or sum(n for _, n in self._kept.values()) > self.max_bytes:
                self._kept.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()

    def __len__(self) -> int:
        return len(self._kept)


__all__ = ["Derived", "MAX_BYTES", "MAX_ENTRIES", "SetupCache", "config_key"]

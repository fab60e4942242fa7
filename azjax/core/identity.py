"""Caches keyed by a game object's identity, never by its hash or equality.

A game of the user's may be unhashable (a plain `@dataclass` sets `__hash__` to None), or
equal to another game whose rules differ; what is cached for a game (a compiled program,
a size estimate) belongs to that one object. A key holds its object, so that the object's
id cannot pass to another object while the entry lives.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class Identity:
    """A dict key that stands for one object: equal only to a key of that same object.

    Args:
      obj: any object, hashable or not; the key holds it.
    """

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Identity) and other.obj is self.obj

    def __repr__(self) -> str:
        return f"Identity({type(self.obj).__name__} at {id(self.obj):#x})"


def cache_by_identity(maxsize: int) -> Callable[[F], F]:
    """`functools.lru_cache(maxsize)` for a function whose first argument is a game:
    keyed by that object's identity (`Identity`), and by the other arguments' hashes.

    Args:
      maxsize: how many results are kept (the least recently used go first).

    Returns:
      A decorator; the decorated function takes the same arguments, positional only.
    """

    def decorate(fn: F) -> F:
        @functools.lru_cache(maxsize=maxsize)
        def by_key(key: Identity, *args: Any) -> Any:
            return fn(key.obj, *args)

        @functools.wraps(fn)
        def cached(first: Any, *args: Any) -> Any:
            return by_key(Identity(first), *args)

        cached.cache_clear = by_key.cache_clear  # type: ignore[attr-defined]
        return cached  # type: ignore[return-value]

    return decorate

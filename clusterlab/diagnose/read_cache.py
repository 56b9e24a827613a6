"""What a diagnosis reads once: a run's clocks and attempt spans, which the attribution, its candidates and its
checkpoint advice each ask for (`read_once`); outside one, every call reads the store."""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import polars as pl

_READ: contextvars.ContextVar[dict[tuple[str, str], pl.DataFrame] | None] = contextvars.ContextVar(
    "read_once", default=None)


def once(what: str, run: str, read: Callable[[], pl.DataFrame]) -> pl.DataFrame:
    """`read()`, or what it gave for (`what`, `run`) earlier in the same `read_once`."""
    cache = _READ.get()
    if cache is None:
        return read()
    if (what, run) not in cache:
        cache[what, run] = read()
    return cache[what, run]


@contextmanager
def read_once() -> Iterator[None]:
    """Within it, `timeline.shared_clocks` and `timeline.attempt_spans` of a run are read once."""
    token = _READ.set({})
    try:
        yield
    finally:
        _READ.reset(token)

"""Parsing files in worker processes: the parse is CPU-bound Python and polars, so threads would not scale.

Plans go to the workers in chunks (many small files in one message), results come back in the plans' order,
and at most a few chunks per worker are in flight, so memory stays bounded whatever the number of files.
Each worker runs polars on one thread: the processes are the parallelism. Small ingests are parsed in this
process: starting workers costs about a second, more than a few MB of logs take to parse.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import warnings
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from clusterlab.ingest_group import parse_many
from clusterlab.ingest_pack import pack
from clusterlab.ingest_parse import FilePlan, ParsedFile

POOL_MIN_BYTES = 32 << 20  # less to parse than this: no workers (unless asked for explicitly)
POOL_MIN_FILES = 400  # ... or fewer files than this
CHUNK_BYTES = 16 << 20  # plans sent to a worker in one message: up to this many bytes ...
CHUNK_FILES = 256  # ... or this many files (small files of a kind are parsed together within a chunk)
IN_FLIGHT = 3  # chunks queued per worker


def default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class Work:
    """How much there is to parse: whether workers are worth starting."""

    files: int
    size: int

    @property
    def small(self) -> bool:
        return self.size < POOL_MIN_BYTES and self.files < POOL_MIN_FILES


def parse_all(plans: Iterable[FilePlan], workers: int | None = None, work: Work | None = None) -> Iterator[ParsedFile]:
    """Every plan parsed, in order; in `workers` processes (default: the cores) when there is enough work.

    `plans` are taken as the workers need them (they may still be being planned); `work`: how much there is (by
    default counted from the plans)."""
    if work is None:
        plans = list(plans)
        work = Work(len(plans), sum(p.size for p in plans))
    n = workers or default_workers()
    if n > 1 and not (workers is None and work.small) and work.files > 1 and not spawn_safe():
        if workers:
            warnings.warn("parsing in this process, not in workers: the main script has no "
                          "`if __name__ == \"__main__\":` guard, and every worker would run it again", stacklevel=3)
        n = 1
    if n <= 1 or work.files <= 1 or (workers is None and work.small):
        for chunk in _chunks(plans):
            yield from parse_many(chunk)
        return
    yield from _in_workers(plans, n)


def spawn_safe() -> bool:
    """Whether worker processes may start. A spawned worker imports the main module again (as `__mp_main__`): a
    script whose top level ingests, unguarded by `if __name__ == "__main__":`, would run again in each worker."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if path is None:  # an interactive session or a notebook: nothing to run again
        return True
    try:
        return "__main__" in Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def _chunks(plans: Iterable[FilePlan]) -> Iterator[list[FilePlan]]:
    chunk: list[FilePlan] = []
    size = 0
    for p in plans:
        chunk.append(p)
        size += p.size
        if size >= CHUNK_BYTES or len(chunk) >= CHUNK_FILES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def parse_chunk(plans: list[FilePlan]) -> list[ParsedFile]:
    outs = parse_many(plans)
    pack(outs)  # the rows cross to the writer as one Arrow stream per table, not a pickled frame per file
    return outs


def _in_workers(plans: Iterable[FilePlan], n: int) -> Iterator[ParsedFile]:
    # NOTE: spawn, not fork: forking a process whose polars and DuckDB thread pools hold locks can deadlock
    # the child. POLARS_MAX_THREADS is read when a worker's polars starts, so it is set around the pool's life.
    saved = os.environ.get("POLARS_MAX_THREADS")
    os.environ["POLARS_MAX_THREADS"] = "1"
    try:
        with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn")) as pool:
            queued: deque[Future] = deque()
            chunks = _chunks(plans)
            for chunk in chunks:
                queued.append(pool.submit(parse_chunk, chunk))
                if len(queued) >= n * IN_FLIGHT:
                    break
            while queued:
                done = queued.popleft().result()
                nxt = next(chunks, None)
                if nxt is not None:
                    queued.append(pool.submit(parse_chunk, nxt))
                yield from done
    finally:
        if saved is None:
            os.environ.pop("POLARS_MAX_THREADS", None)
        else:
            os.environ["POLARS_MAX_THREADS"] = saved

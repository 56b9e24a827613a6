"""Parsing files in worker processes: the parse is CPU-bound Python and polars, so threads would not scale.

Plans go to the workers in chunks (many small files in one message), results come back in the plans' order,
and at most a few chunks per worker are in flight, so memory stays bounded whatever the number of files.
Each worker runs polars on one thread: the processes are the parallelism. Small ingests are parsed in this
process: starting workers costs about a second of CPU, more than a few MB of logs, or a few hundred small files
parsed together, take to parse.
"""

from __future__ import annotations

import ctypes
import gc
import multiprocessing
import os
import signal
import sys
import warnings
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

from clusterlab.ingest.groups import parse_many
from clusterlab.ingest.heads import _collectors, _hints
from clusterlab.ingest.pack import pack
from clusterlab.ingest.parse import FilePlan, ParsedFile

POOL_MIN_BYTES = 32 << 20  # less to parse than this: no workers (unless asked for explicitly)
# ... or fewer files than this. NOTE: small files of a kind are parsed together (text groups, step records), a
# millisecond or two each: the campaign corpus' 560 NCCL logs (10 MB) took 1.04-1.15 s in one process and
# 1.77-1.84 s with two workers, whose start (spawn, imports) cost 0.7 s of CPU more than their parsing saved
POOL_MIN_FILES = 2000
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


def parse_all(plans: Iterable[FilePlan], workers: int | None = None, pool: Workers | None = None
              ) -> Iterator[ParsedFile]:
    """Every plan parsed, in order; in `workers` processes (default: the cores) when there is enough work.

    `plans` are taken as they come (they may still be being planned): workers start as soon as the plans so far
    are worth them, or `pool` has (while the files were being found)."""
    with Workers(workers) if pool is None else nullcontext(pool) as pool:
        plans = iter(plans)
        ahead: list[FilePlan] = []  # plans taken before the workers started
        while not pool.started:
            plan = next(plans, None)
            if plan is None:
                break
            ahead.append(plan)
            pool.planned(plan.size)
        if pool.started:
            yield from pool.parse(chain(ahead, plans))
            return
        pool.wanted(pool.work, warn=True)  # no workers: asked only to say why, where they were asked for
    # (`workers=1` parses any ingest here: a window's results are held until its last chunk is parsed)
    for window, places, chunk in _kind_chunks(ahead, IN_FLIGHT):
        yield from window.put(places, parse_many(chunk))


class Workers:
    """The worker processes of one ingest: started when there is known to be enough work (`wanted`), and
    warmed at once, so that their start overlaps the walk of the evidence instead of following it."""

    def __init__(self, workers: int | None = None) -> None:
        self.asked, self.n = workers, workers or default_workers()
        self.pool: ProcessPoolExecutor | None = None
        self._saved: str | None = None
        self.work = Work(0, 0)  # the files to parse so far
        self.walked = Work(0, 0)  # the files a walk found so far (see `found`)
        self._safe: bool | None = None  # whether workers may start at all (spawn_safe), once known

    @property
    def started(self) -> bool:
        return self.pool is not None

    def wanted(self, work: Work, warn: bool = False) -> bool:
        """Whether `work` is worth workers (small ingests are parsed in this process: a start costs a second)."""
        if self.n <= 1 or work.files <= 1 or (self.asked is None and work.small):
            return False
        if self._safe is None:
            self._safe = spawn_safe()
        if not self._safe:
            if warn and self.asked:
                warnings.warn("parsing in this process, not in workers: the main script has no "
                              "`if __name__ == \"__main__\":` guard, and every worker would run it again",
                              stacklevel=4)
            return False
        return True

    def planned(self, size: int | None) -> None:
        """One more file to parse: the workers start once the files so far are worth them."""
        self.work = self._more(self.work, size)

    def found(self, size: int | None) -> None:
        """One more file found by a walk that will parse every file it finds (a database holding none yet)."""
        self.walked = self._more(self.walked, size)

    def _more(self, work: Work, size: int | None) -> Work:
        work = Work(work.files + 1, work.size + (size or 0))
        if not self.started and self.wanted(work):
            self.start()
        return work

    def start(self) -> None:
        # NOTE: spawn, not fork: forking a process whose polars and DuckDB thread pools hold locks can deadlock
        # the child. POLARS_MAX_THREADS is read when a worker's polars starts: set for the pool's life.
        self._saved = os.environ.get("POLARS_MAX_THREADS")
        os.environ["POLARS_MAX_THREADS"] = "1"
        self.pool = ProcessPoolExecutor(self.n, mp_context=multiprocessing.get_context("spawn"), initializer=warm,
                                        initargs=(os.getpid(),))
        for _ in range(self.n):  # each submit finding no idle worker starts one: all start now, not on demand
            self.pool.submit(int)

    def parse(self, plans: Iterable[FilePlan]) -> Iterator[ParsedFile]:
        assert self.pool is not None
        queued: deque[tuple[_Window, list[int], list[FilePlan], Future]] = deque()
        parts = _kind_chunks(plans, self.n * IN_FLIGHT)

        def submit() -> bool:
            part = next(parts, None)
            if part is not None:
                queued.append((*part, self.pool.submit(parse_chunk, part[2])))
            return part is not None

        while len(queued) < self.n * IN_FLIGHT and submit():
            pass
        while queued:
            window, places, chunk, future = queued.popleft()
            done = future.result()
            submit()
            for pf, plan in zip(done, chunk, strict=True):
                pf.plan = plan
            yield from window.put(places, done)

    def close(self) -> None:
        if self.pool is None:
            return
        self.pool.shutdown(cancel_futures=True)
        self.pool = None
        if self._saved is None:
            os.environ.pop("POLARS_MAX_THREADS", None)
        else:
            os.environ["POLARS_MAX_THREADS"] = self._saved

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def warm(parent: int | None = None) -> None:
    """A worker's start: die with its parent, import what parsing needs (its first chunk would wait for it), and
    collect garbage less often."""
    if parent is not None:
        _die_with(parent)
    _collectors()
    _hints()
    # NOTE: parsing makes many short-lived objects and few cycles: the collector's default pace (a pass each 700
    # allocations, over every object the imports left) cost 2-3% of a worker's time
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)


PR_SET_PDEATHSIG = 1  # prctl(2): the signal this process gets when the thread that started it ends


def _die_with(parent: int) -> None:
    """A parent killed with SIGKILL cannot stop its workers, which would go on parsing for nobody (and hold
    hundreds of MB): the kernel kills them with it (Linux). Elsewhere they end when their queue closes."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before the call: no signal will come
        os._exit(1)


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


def _chunks(plans: Iterable[FilePlan], files: int | None = None, most: int | None = None
            ) -> Iterator[list[FilePlan]]:
    files, most = files or CHUNK_FILES, most or CHUNK_BYTES
    chunk: list[FilePlan] = []
    size = 0
    for p in plans:
        chunk.append(p)
        size += p.size
        if size >= most or len(chunk) >= files:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


@dataclass
class _Window:
    """The results of a window of plans, in the plans' order, as their chunks come back."""

    results: list[ParsedFile | None]
    left: int  # files whose results have not come back

    def put(self, places: list[int], done: list[ParsedFile]) -> list[ParsedFile]:
        """A chunk's results in their plans' places; all the window's, in order, once the last came back."""
        for place, pf in zip(places, done, strict=True):
            self.results[place] = pf
        self.left -= len(done)
        return [] if self.left else self.results  # type: ignore[return-value]  (all set)


def _kind_chunks(plans: Iterable[FilePlan], chunks: int) -> Iterator[tuple[_Window, list[int], list[FilePlan]]]:
    """Chunks of windows of `chunks` chunks' worth of plans, each window's plans ordered by `_kind_hint`: (the
    window, each plan's place in it, the chunk)."""
    # NOTE: a bundle interleaves kinds (an attempt's NCCL, step and trainer files, then the next attempt's): every
    # chunk held every kind, and each kind's group in each chunk paid each of its collectors' fixed cost (~10-30 ms
    # of regex compilation, polars keeps ~32 compiled) again. Campaign corpus, seeds 1-4 (1,540 files, 75 MB),
    # 2 workers: 8.7-8.8 -> 7.1-7.3 s CPU
    for window in _chunks(plans, CHUNK_FILES * chunks, CHUNK_BYTES * chunks):
        order = sorted(range(len(window)), key=lambda i: (_kind_hint(window[i]), i))
        held = _Window([None] * len(window), len(window))
        start = 0
        for chunk in _chunks([window[i] for i in order]):
            yield held, order[start:start + len(chunk)], chunk
            start += len(chunk)


def _kind_hint(plan: FilePlan) -> tuple[str, str]:
    """What a file's path says of its kind before a byte is read: its extension (a compression's left off) and its
    directory's name without digits (nccl/, steps/, the node directories of one cluster's naming)."""
    path = plan.task.path
    name = path.name.removesuffix(".gz")
    return name.rpartition(".")[2] if "." in name else "", path.parent.name.translate(_NO_DIGITS)


_NO_DIGITS = str.maketrans("", "", "0123456789")


def parse_chunk(plans: list[FilePlan]) -> list[ParsedFile]:
    """A worker's chunk, for the trip back: the rows packed (one Arrow stream per table, not a pickled frame per
    file) and the plans left out (the writer holds them: pickled back, they cost a third of the trip)."""
    outs = parse_many(plans)
    pack(outs)
    for out in outs:
        out.plan = None  # type: ignore[assignment]
    return outs

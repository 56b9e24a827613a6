"""When the evidence under one named path was logged, read from its own dated lines: the year that a time printed
without one (syslog's `Mar 14 10:02:03`, glog's `I0314 10:02:03.123`, klog) takes.

A file's write time says when it was copied, unpacked or generated, not when its lines were logged: a bundle of
March's evidence copied off a cluster in December, or a campaign replayed today with its own dates, put every
yearless line a year from the dated lines beside it (sacct, slurmctld, journals in ISO form, step records), and the
kernel's Xid lines then fall outside every attempt. The stamps that print their year are the evidence's own clock
for the year; the write time stays the rule where no file of the path prints a dated stamp.
"""

from __future__ import annotations

import datetime as dt
import gzip
import os
import re
import statistics
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from clusterlab.ingest.bundle import FileTask

SAMPLE_FILES = 48  # files of one named path whose heads are read (spread over its files) ...
MAX_FILES = 512  # ... or, where none of them prints a dated stamp, at most this many
HEAD_BYTES = 8192
MIN_FILES = 1  # files that print a dated stamp, at least, for the path's era to stand
# `2026-03-14T10:02` / `2026-03-14 10:02`: an ISO stamp (journal short-iso, sacct, slurmctld, Python logging, JSON)
_ISO = re.compile(rb"((?:19|20)\d\d)-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[T ]([01]\d|2[0-3]):([0-5]\d)")
_NOT_BEFORE = frozenset(bytes([c]) for c in b"0123456789.:/-")  # a stamp is not the tail of these


def eras(roots: Iterable[Path], tasks: list[FileTask]) -> list[dt.datetime | None]:
    """Each task's era: for the named path it was found under (a bundle, a folder, a file), the median of the last
    dated stamp in the heads of up to SAMPLE_FILES of its files; None where none of them prints one."""
    owner = _owners([str(r) for r in roots], tasks)
    by_root: dict[int, list[FileTask]] = {}
    for task, k in zip(tasks, owner, strict=True):
        if k is not None:
            by_root.setdefault(k, []).append(task)
    era: dict[int, dt.datetime] = {}
    for k, mine in by_root.items():
        stamps: list[dt.datetime] = []
        for read, t in enumerate(_spread(mine)):
            # NOTE: where few files print a year (NCCL without timestamps, raw dmesg: only sacct and slurmctld
            # date themselves), reading goes on past the first sample until one does
            if read >= MAX_FILES or (read >= SAMPLE_FILES and stamps):
                break
            if (s := last_stamp(_head(t.path))) is not None:
                stamps.append(s)
        if len(stamps) >= MIN_FILES:
            era[k] = statistics.median_low(stamps)
    return [None if k is None else era.get(k) for k in owner]


def _spread(tasks: list[FileTask]) -> Iterator[FileTask]:
    """The tasks in an order that spreads over them (every n-th first, then the ones between), each once."""
    step = max(1, len(tasks) // SAMPLE_FILES)
    for first in range(step):
        yield from tasks[first::step]


def _owners(roots: list[str], tasks: list[FileTask]) -> list[int | None]:
    """The index of the named path each task was found under (itself where it was named), by its text: a fleet's
    tens of thousands of paths are not each walked up their parents."""
    heads = [(k, r, r.rstrip(os.sep) + os.sep) for k, r in enumerate(roots)]
    out: list[int | None] = []
    for task in tasks:
        p = str(task.path)
        out.append(next((k for k, r, under in heads if p == r or p.startswith(under)), None))
    return out


def last_stamp(head: bytes) -> dt.datetime | None:
    """The last ISO stamp of a head (a file's later lines are its log; its first may quote older dates)."""
    # NOTE: its last KiB first, where most files' last stamped line is (the whole head: 0.06 ms a file more)
    for part in (head[-1024:], head):
        for m in reversed(list(_ISO.finditer(part))):
            if m.start() and part[m.start() - 1:m.start()] in _NOT_BEFORE:
                continue  # (a longer number, a version, a path)
            try:
                return dt.datetime(*(int(g) for g in m.groups()))
            except ValueError:  # (the 31st of a short month)
                continue
        if len(head) <= 1024:
            break
    return None


def _head(path: Path) -> bytes:
    try:
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES)
        if head[:2] == b"\x1f\x8b":
            with gzip.open(path, "rb") as f:
                head = f.read(HEAD_BYTES)
    except (OSError, EOFError, zlib.error):  # (a damaged gzip member: its parse says why it cannot be read)
        return b""
    return head


__all__ = ["eras", "last_stamp"]

"""A file's head: reading the heads of a chunk of files at once, the sniff hints in them, and which collectors
read each file (one exclusive format, or every line-oriented one). Split from `ingest.parse`, which uses them."""

from __future__ import annotations

import itertools
from functools import cache
from types import ModuleType
from typing import Protocol

import polars as pl

from clusterlab.collectors import all_collectors
from clusterlab.ingest.bundle import FileTask
from clusterlab.ingest.reader import GZIP_MAGIC, HEAD_BYTES, gunzip_small, read_head_checked


class Planned(Protocol):
    """What reading a head needs of a file's plan (`parse.FilePlan`)."""

    task: FileTask
    size: int


@cache
def _collectors() -> tuple[ModuleType, ...]:
    return tuple(all_collectors())


Head = tuple[bytes, str | None] | OSError  # a file's head and what broke its gzip, or why it cannot be read
NEAR_BYTES = 4096  # sniff hints are looked for here in all of a chunk's heads at once, past it only where needed
WHOLE_BYTES = 1 << 20  # a plain file this small is read whole with its head (grouped parses need all of it)


class HeadHints:
    """The SNIFF_HINTs in a head (ASCII case-insensitive): found in its first 4 KiB with the chunk's other heads,
    and past them by one scan of the hints the first 4 KiB lacked."""

    __slots__ = ("found",)

    def __init__(self, found: set[str]) -> None:
        self.found = found

    def __contains__(self, hint: bytes) -> bool:
        return hint.decode() in self.found


def read_heads(plans: list[Planned]) -> tuple[list[Head | None], list[HeadHints | None], list[bytes | None]]:
    """The plans' heads, the SNIFF_HINTs each contains, and the whole content of small files (`Unzipped` where
    a gzip's).

    Hints are found in one scan of all heads for all hints at once, not a substring search per hint per head."""
    heads: list[Head | None] = []
    raws: list[bytes | None] = []
    for plan in plans:
        raw = None
        try:
            if not plan.size:
                head = None
            elif plan.size <= WHOLE_BYTES:
                # NOTE: read to the size planned (and on, should it have grown): asking for 1 MiB at once costs
                # a megabyte's allocation a file, twice the reading of a 70 KB one
                with open(plan.task.path, "rb", buffering=0) as f:
                    raw = f.read(plan.size + 1)
                    if len(raw) > plan.size:
                        raw += f.read(WHOLE_BYTES + 1 - len(raw))
                if raw[:2] == GZIP_MAGIC:
                    # NOTE: a small gzip is decompressed once, for its head and its group parse (its head was read
                    # again from the file and all of it decompressed twice: 0.2 s of a campaign corpus' 452)
                    raw = gunzip_small(raw) if len(raw) <= WHOLE_BYTES else None
                    head = read_head_checked(plan.task.path) if raw is None else (raw[:HEAD_BYTES], None)
                else:
                    head = (raw[:HEAD_BYTES], None)
                    raw = raw if len(raw) <= WHOLE_BYTES else None
            else:
                head = read_head_checked(plan.task.path)
        except OSError as e:
            head = e
        heads.append(head)
        raws.append(raw)
    return heads, _hints_in([h[0] if isinstance(h, tuple) else None for h in heads]), raws


def _hints_in(heads: list[bytes | None]) -> list[HeadHints | None]:
    hints = _hints()
    at = [i for i, h in enumerate(heads) if h is not None]
    if not at:
        return [None] * len(heads)
    # NOTE: hints are ASCII: decoding a head never makes or breaks an ASCII match. Only the first 4 KiB are listed
    # match by match ('"step"' is on each line of a step file: listing a whole 64 KiB head costs 0.4 ms a file).
    near = pl.Series([heads[i][:NEAR_BYTES].decode("utf-8", "replace") for i in at], dtype=pl.String)
    found = [set(x) for x in near.str.extract_many(hints, ascii_case_insensitive=True, overlapping=True)
             .list.unique().list.eval(pl.element().str.to_lowercase()).to_list()]
    # past 4 KiB, heads that found the same hints are asked together whether any other hint is there (mostly not)
    overlap = max(map(len, hints)) - 1
    by_found: dict[frozenset[str], list[int]] = {}
    for k, i in enumerate(at):
        if len(heads[i]) > NEAR_BYTES:
            by_found.setdefault(frozenset(found[k]), []).append(k)
    for seen, ks in by_found.items():
        others = [h for h in hints if h not in seen]
        if not others:
            continue
        # NOTE: whether any of the literals is there (one regex of them, ASCII case-blind: an Aho-Corasick test took
        # 0.29 s of a campaign corpus' 1,524 heads, the regex 0.21), then which (Aho-Corasick), in the heads that
        # hold one (a Python test of each hint in each head that held one cost 1.5 ms a trainer log)
        far = pl.Series([str(memoryview(heads[at[k]])[NEAR_BYTES - overlap:], "utf-8", "replace") for k in ks],
                        dtype=pl.String)
        hit = far.str.contains("(?i-u)" + "|".join(pl.escape_regex(h) for h in others))
        if not hit.any():
            continue
        more = (far.filter(hit).str.extract_many(others, ascii_case_insensitive=True, overlapping=True)
                .list.unique().list.eval(pl.element().str.to_lowercase()).to_list())
        for k, got in zip([k for k, h in zip(ks, hit.to_list(), strict=True) if h], more, strict=True):
            found[k] |= set(got)
    out: list[HeadHints | None] = [None] * len(heads)
    for k, i in enumerate(at):
        out[i] = HeadHints(found[k])
    return out


@cache
def _hints() -> list[str]:
    return sorted({h.decode() for c in _collectors() for h in (getattr(c, "SNIFF_HINT", None) or ())})


def choose(head: bytes, path: str, collectors: list[ModuleType],
           present: HeadHints | frozenset[bytes] | None = None) -> list[ModuleType]:
    """The collectors that read this file: one exclusive format, or every line-oriented one.

    `present`: the SNIFF_HINTs the head contains, where they were found already (`read_heads`)."""
    exclusive, line_based = _roles(tuple(collectors))
    if present is None:
        low = head.lower()
        found = {h for _, hints in (*exclusive, *line_based) for h in hints or () if h.encode() in low}
    else:
        found = present.found if isinstance(present, HeadHints) else {h.decode() for h in present}

    def sniffed(c: ModuleType, hints: frozenset[str] | None) -> bool:
        # NOTE: a hint test costs nothing; most sniffs cost a millisecond, on every file
        return (hints is None or not hints.isdisjoint(found)) and c.sniff(head, path)

    for c, hints in exclusive:
        if sniffed(c, hints):
            return [c]
    # NOTE: any line-oriented sniff will do, so the ones that recognised the latest text files are asked first,
    # most recent first: a fleet's NCCL log then costs one sniff, not the six that come before NCCL's, and a
    # bundle whose trainer, Slurm and kernel logs alternate costs about one each (a false one is up to a ms)
    for c, hints in sorted(line_based, key=lambda ch: _TEXT_ORDER.get(ch[0].NAME, 0), reverse=True):
        if sniffed(c, hints):
            _TEXT_ORDER[c.NAME] = next(_TEXT_CLOCK)
            _SNIFFED[0] = c.NAME
            return [c for c, _ in line_based]
    return []


Role = tuple[ModuleType, frozenset[str] | None]  # a collector and its SNIFF_HINTs (None: it sniffs every file)


@cache
def _roles(collectors: tuple[ModuleType, ...]) -> tuple[tuple[Role, ...], tuple[Role, ...]]:
    """The exclusive collectors and the line-oriented ones, in order, each with its hints as text (worked out once
    per list of collectors, not for every file)."""
    roles = [(c, frozenset(h.decode() for h in hint) if (hint := getattr(c, "SNIFF_HINT", None)) else None)
             for c in collectors]
    return (tuple(r for r in roles if getattr(r[0], "EXCLUSIVE", False)),
            tuple(r for r in roles if not getattr(r[0], "EXCLUSIVE", False)))


_SNIFFED: list[str | None] = [None]  # the line-oriented collector whose sniff said yes to the latest text file

# the line-oriented collectors whose sniffs said yes, and when (an order to ask in, never an answer)
_TEXT_ORDER: dict[str, int] = {}
_TEXT_CLOCK = itertools.count(1)


def last_sniffed() -> str | None:
    """The line-oriented collector whose sniff recognised the latest text file `choose` was asked about."""
    return _SNIFFED[0]


__all__ = ["Head", "HeadHints", "choose", "last_sniffed", "read_heads"]

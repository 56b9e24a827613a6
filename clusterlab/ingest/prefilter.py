"""Which lines of a text log its collectors read: one scan of the patterns' union, then each PATTERN on those.

Most lines of a log at NCCL_DEBUG=INFO or of a kernel journal match no collector's PATTERN. The union of the
chosen collectors' patterns picks out the lines some collector reads in one scan (a regex engine's prefilter
over every line); each collector's own PATTERN then runs on those lines only, all of them in one polars call
(in parallel), and the lines no collector reads are the ones the union's mask left out: no pattern runs twice
over a line (the union used to run again to find the unmatched lines, ~12 % of an INFO-heavy NCCL log's CPU).

NOTE: measured on the campaign corpus (`benchmarks/fleet_ingest.py --corpus campaigns`), a prefilter of
literals read from each PATTERN (one Aho-Corasick scan per collector) was slower than the union on NCCL and
kernel logs, whose few matched lines make the per-collector scans the cost; so were a dozen scans of the
patterns over every line, the union's DFA being quick where it rarely matches (and slow where most lines match:
`split` then takes the dozen scans).
"""

from __future__ import annotations

from types import ModuleType

import polars as pl

DENSE = 0.5  # a frame whose sampled lines match the union this often has each PATTERN run over every line
SAMPLE_LINES = 1000
# NOTE: the regex engine falls off a cliff past a compiled size: the union of all 20 text collectors' patterns
# (13,005 characters) scanned a 22,000-line group in 13.6 s, the same union less any one of them (12,898 or fewer)
# in 0.06 s. The union is built in parts of at most this many characters, whose masks are OR-ed (three scans of
# 5,000 where there was one of 13,000 cost about the same as the one did below the cliff).
UNION_MAX_CHARS = 5000


def unions(chosen: list[ModuleType]) -> list[str]:
    """The union of the chosen collectors' patterns, in parts of at most UNION_MAX_CHARS (a pattern longer than that
    is a part of its own)."""
    parts: list[list[str]] = [[]]
    size = 0
    for c in chosen:
        alt = f"(?:{c.PATTERN})"
        if parts[-1] and size + len(alt) + 1 > UNION_MAX_CHARS:
            parts.append([])
            size = 0
        parts[-1].append(alt)
        size += len(alt) + 1
    return ["|".join(p) for p in parts if p]


def _any_of(text: pl.Expr, chosen: list[ModuleType]) -> pl.Expr:
    return pl.any_horizontal([text.str.contains(u) for u in unions(chosen)])


def split(frame: pl.DataFrame, chosen: list[ModuleType], rest: bool = True
          ) -> tuple[dict[str, pl.DataFrame], pl.DataFrame, pl.DataFrame | None]:
    """(each collector's lines, the lines any collector matches, the other lines where `rest`), all in order.

    NOTE: where most lines match (a trainer's output: its step lines), the union's DFA is the cost (25 MB/s on
    campaign trainer logs); the patterns then run each over every line instead, in one call (120 MB/s). Which
    way is taken changes no row: both select exactly the lines each PATTERN matches."""
    text = pl.col("text")
    union = _any_of(text, chosen)
    if len(chosen) > 1 and frame.height > SAMPLE_LINES:
        # (lines spread over the frame: a trainer's first lines are its arguments, its step lines come after)
        sample = frame.gather_every(frame.height // SAMPLE_LINES)
        dense = sample.select(union.mean()).item()
        if dense is not None and dense > DENSE:
            masks = frame.select(text.str.contains(c.PATTERN).alias(f"_{i}") for i, c in enumerate(chosen))
            hit = masks.select(pl.any_horizontal(pl.all())).to_series()
            sel = {c.NAME: frame.filter(masks[f"_{i}"]) for i, c in enumerate(chosen)}
            return sel, frame.filter(hit), frame.filter(~hit) if rest else None
    flagged = frame.with_columns(_m=union)
    matched = flagged.filter(pl.col("_m")).drop("_m")
    if len(chosen) == 1:
        sel = {chosen[0].NAME: matched}
    else:
        masks = matched.select(text.str.contains(c.PATTERN).alias(f"_{i}") for i, c in enumerate(chosen))
        sel = {c.NAME: matched.filter(masks[f"_{i}"]) for i, c in enumerate(chosen)}
    others = flagged.filter(~pl.col("_m")).drop("_m") if rest else None
    return sel, matched, others


__all__ = ["split"]

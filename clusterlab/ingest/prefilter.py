"""Which lines of a text log its collectors read: one scan of the patterns' union, then each PATTERN on those.

Most lines of a log at NCCL_DEBUG=INFO or of a kernel journal match no collector's PATTERN. The union of the
chosen collectors' patterns (in parts below the regex engine's cliff) picks out the lines some collector reads in
one scan per part; each part's collectors then share out the lines it matched (`_resolve`: where they are many,
the collector most of them are for takes those the others' union misses, no scan of its own), and the lines no
collector reads are the ones no part's mask holds: no pattern runs twice over a line (the union used to run again
to find the unmatched lines, ~12 % of an INFO-heavy NCCL log's CPU).

NOTE: measured on the campaign corpus (`benchmarks/fleet_ingest.py --corpus campaigns`), a prefilter of
literals read from each PATTERN (one Aho-Corasick scan per collector) was slower than the union on NCCL and
kernel logs, whose few matched lines make the per-collector scans the cost; so were a dozen scans of the
patterns over every line, the union's DFA being quick where it rarely matches (and slow where most lines match:
`split` then runs the few collectors that match most of them over every line, and the union of the others)."""

from __future__ import annotations

from types import ModuleType

import polars as pl

from clusterlab.collectors._ascii import ascii_classes

DENSE = 0.5  # a frame whose sampled lines match the union this often has its heavy collectors run alone
SAMPLE_LINES = 1000
FEW_LINES = 2000  # matched lines this few have every PATTERN run over them, in one call
HEAVY_SHARE = 0.02  # of a dense frame's sampled lines: a collector matching more runs over every line alone
# NOTE: the regex engine falls off a cliff past a compiled size: the union of all 20 text collectors' patterns
# (13,005 characters) scanned a 22,000-line group in 13.6 s, the same union less any one of them (12,898 or fewer)
# in 0.06 s. The union is built in parts of at most this many characters, whose masks are OR-ed. With the patterns'
# classes in ASCII (`ascii_classes`) the cliff moved out: on the campaign corpus at four seeds (32 collectors),
# parts of 5,000 / 9,000 / 15,000 characters split its 120,000 NCCL lines in 225 / 161 / 167 ms CPU, 39,000
# trainer lines in 168 / 157 / 153 and 21,000 kernel lines in 58 / 56 / 83 (20,000: 30,000 trainer lines 6x slower)
UNION_MAX_CHARS = 9000


def unions(chosen: list[ModuleType]) -> list[str]:
    """The union of the chosen collectors' patterns, in parts of at most UNION_MAX_CHARS (a pattern longer than that
    is a part of its own)."""
    return [u for u, _ in _parts(chosen)]


def _any_of(text: pl.Expr, chosen: list[ModuleType]) -> pl.Expr:
    return pl.any_horizontal([text.str.contains(u) for u in unions(chosen)])


def split(frame: pl.DataFrame, chosen: list[ModuleType], rest: bool = True
          ) -> tuple[dict[str, pl.DataFrame], pl.DataFrame, pl.DataFrame | None]:
    """(each collector's lines, the lines any collector matches, the other lines where `rest`), all in order.

    NOTE: where most lines match (a trainer's output: its step lines), the union's DFA is the cost (25 MB/s on
    campaign trainer logs): the collectors that match many of a sample's lines (HEAVY_SHARE) then run each over
    every line, and only the others' union after them (229 -> 157 ms CPU on the trainer logs of the campaign
    corpus at four seeds; running every PATTERN over every line was the way before).

    NOTE: where a part of the union matches many lines, they are mostly one collector's (a fleet's NCCL INFO
    lines): `_resolve` gives that collector the lines the rest of the part's union misses, so that only one scan
    runs over them where a scan per collector did (335 -> 182 ms CPU on the NCCL logs of the same corpus, 13 MB).

    Which way is taken changes no row: each collector gets exactly the lines its PATTERN matches (with its classes
    in ASCII, `ascii_classes`, whether its file is parsed alone or in a group)."""
    text = pl.col("text")
    heavy: list[ModuleType] = []
    if len(chosen) > 1 and frame.height > SAMPLE_LINES:
        # (lines spread over the frame: a trainer's first lines are its arguments, its step lines come after)
        sample = frame.gather_every(frame.height // SAMPLE_LINES)
        dense = sample.select(_any_of(text, chosen).mean()).item()
        if dense is not None and dense > DENSE:
            shares = sample.select(text.str.contains(_pattern(c)).mean().alias(f"_{i}")
                                   for i, c in enumerate(chosen)).row(0)
            heavy = [c for c, share in zip(chosen, shares, strict=True) if share is not None and share > HEAVY_SHARE]
    light = [c for c in chosen if all(c is not h for h in heavy)]
    parts = _parts(light) if light else []
    flags = [*(f"_h{i}" for i in range(len(heavy))), *(f"_p{i}" for i in range(len(parts)))]
    flagged = frame.with_columns(*(text.str.contains(_pattern(c)).alias(f"_h{i}") for i, c in enumerate(heavy)),
                                 *(text.str.contains(u).alias(f"_p{i}") for i, (u, _) in enumerate(parts)))
    hit = pl.any_horizontal(flags)
    marked = flagged.filter(hit)
    matched = marked.select(frame.columns)
    others = flagged.filter(~hit).select(frame.columns) if rest else None
    sel = {c.NAME: matched.filter(marked[f"_h{i}"]) for i, c in enumerate(heavy)}
    if len(chosen) == 1:
        sel[chosen[0].NAME] = matched
    elif light and not heavy and matched.height <= FEW_LINES:
        # (only the patterns of a part that matched a line: each is compiled again in every split)
        live = [c for i, (_, cs) in enumerate(parts) if marked[f"_p{i}"].any() for c in cs]
        masks = matched.select(text.str.contains(_pattern(c)).alias(f"_{i}") for i, c in enumerate(live))
        sel |= {c.NAME: matched.clear() for c in light}
        sel |= {c.NAME: matched.filter(masks[f"_{i}"]) for i, c in enumerate(live)}
    elif light:
        rows: dict[str, list[pl.Series]] = {c.NAME: [] for c in light}
        numbered = marked.with_row_index("_r")
        for i, (_, cs) in enumerate(parts):
            mine = numbered.filter(pl.col(f"_p{i}")).select("_r", "text")
            if mine.height:
                _resolve(mine, cs, rows)
        sel |= {name: matched.gather(pl.concat(got).sort()) if got else matched.clear() for name, got in rows.items()}
    return {c.NAME: sel[c.NAME] for c in chosen}, matched, others


def _parts(chosen: list[ModuleType]) -> list[tuple[str, list[ModuleType]]]:
    """The union in parts (`unions`), each with the collectors whose patterns it joins."""
    parts: list[list[ModuleType]] = [[]]
    size = 0
    for c in chosen:
        alt = len(_pattern(c)) + 5  # (?:...)|
        if parts[-1] and size + alt > UNION_MAX_CHARS:
            parts.append([])
            size = 0
        parts[-1].append(c)
        size += alt
    return [(_union(cs), cs) for cs in parts if cs]


def _union(cs: list[ModuleType]) -> str:
    return "|".join(f"(?:{_pattern(c)})" for c in cs)


def _pattern(c: ModuleType) -> str:
    return ascii_classes(c.PATTERN)


def _resolve(rows: pl.DataFrame, cs: list[ModuleType], out: dict[str, list[pl.Series]]) -> None:
    """Which of the collectors `cs` match each of `rows` (lines that match their union), as row numbers (`_r`) in
    `out`. The collector most of them match takes the lines the union of the others leaves, which no other pattern
    is run over: a fleet's NCCL INFO lines cost one scan of the others' union, not one scan per collector."""
    text = pl.col("text")
    if len(cs) == 1:
        out[cs[0].NAME].append(rows["_r"])
        return
    if rows.height <= FEW_LINES:
        masks = rows.select(text.str.contains(_pattern(c)).alias(f"_{i}") for i, c in enumerate(cs))
        for i, c in enumerate(cs):
            out[c.NAME].append(rows.filter(masks[f"_{i}"])["_r"])
        return
    sample = rows.gather_every(max(1, rows.height // 200))
    counts = sample.select(text.str.contains(_pattern(c)).sum().alias(f"_{i}") for i, c in enumerate(cs)).row(0)
    top = cs[max(range(len(cs)), key=lambda i: counts[i])]
    others = [c for c in cs if c is not top]
    also = rows.select(text.str.contains(_union(others))).to_series()
    out[top.NAME].append(rows.filter(~also)["_r"])
    shared = rows.filter(also)
    if shared.height:
        out[top.NAME].append(shared.filter(text.str.contains(_pattern(top)))["_r"])
        _resolve(shared, others, out)


__all__ = ["split"]

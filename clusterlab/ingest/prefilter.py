"""Which lines a text log's collectors can read: literal prefilters first, each collector's PATTERN only after.

Most lines of a log at NCCL_DEBUG=INFO, of a kernel journal or of a trainer's output match no collector's
PATTERN, yet every PATTERN used to run over every line (one regex scan of a dozen patterns each, 8 to 20 MB/s).
Every PATTERN here is read once for the literals a match must contain (`required`: of each alternative, its
longest run of plain characters, or a set the branches' runs cover); a scan for them (Aho-Corasick, ASCII
case-blind; the collectors' scans in parallel) keeps a collector's candidate lines, and its PATTERN runs on
those only. A line without any of them cannot match: the rows are the same. Where a PATTERN yields no literal
of 3 characters or more (or Python's parser cannot read it), every line is its candidate, as before.
"""

from __future__ import annotations

import re
from functools import cache
from types import ModuleType

import polars as pl

try:  # Python 3.11+: the parser moved under re
    from re import _constants as sre_c  # type: ignore[attr-defined]
    from re import _parser as sre_p  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    import sre_constants as sre_c  # type: ignore[no-redef]
    import sre_parse as sre_p  # type: ignore[no-redef]

MIN_LITERAL = 3  # shorter literals keep too many lines to be worth a scan of their own
# NOTE: the literals are matched ASCII case-blind; a (?i) pattern also matches some non-ASCII letters as ASCII
# ones (the Kelvin sign as k): a line with any non-ASCII character is always a candidate
_NON_ASCII = r"[^\x00-\x7F]"


@cache
def required(pattern: str) -> tuple[str, ...] | None:
    """Literals (lower case) of which every match of the pattern contains one; None where none is known."""
    try:
        got = _seq(sre_p.parse(pattern))
    except (re.error, RecursionError, OverflowError, ValueError):
        return None
    if got is None or min(map(len, got)) < MIN_LITERAL:
        return None
    return tuple(sorted(got))


def _seq(items: sre_p.SubPattern | list) -> frozenset[str] | None:
    """The best set of required literals of a sequence: one run of plain characters, or one element's set."""
    best: frozenset[str] | None = None
    run: list[str] = []

    def consider(cand: frozenset[str] | None) -> None:
        nonlocal best
        if cand and (best is None or min(map(len, cand)) > min(map(len, best))):
            best = cand

    for op, av in items:
        if op is sre_c.LITERAL:
            run.append(chr(av).lower())
            continue
        consider(frozenset(["".join(run)]) if run else None)
        run = []
        if op is sre_c.SUBPATTERN:
            consider(_seq(av[-1]))
        elif op is sre_c.BRANCH:
            branches = [_seq(b) for b in av[1]]
            if all(b is not None for b in branches):
                consider(frozenset().union(*branches))  # type: ignore[arg-type]
        elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT) and av[0] >= 1:
            consider(_seq(av[2]))
        elif op is sre_c.ATOMIC_GROUP:
            consider(_seq(av))
    consider(frozenset(["".join(run)]) if run else None)
    return best


def split(frame: pl.DataFrame, chosen: list[ModuleType], rest: bool = True
          ) -> tuple[dict[str, pl.DataFrame], pl.DataFrame, pl.DataFrame | None]:
    """(each collector's lines, the lines any collector matches, the other lines where `rest`), all in order.

    A collector's PATTERN runs only on the lines holding one of the literals a match of it needs (`required`,
    one Aho-Corasick scan each, in parallel); a collector whose PATTERN needs none runs on every line."""
    text = pl.col("text")
    lits = {c.NAME: required(c.PATTERN) for c in chosen}
    base = frame
    if any(lits.values()):
        base = frame.with_columns(_na=text.str.contains(_NON_ASCII))
    cands = pl.collect_all([
        base.lazy().filter(text.str.contains_any(list(got), ascii_case_insensitive=True) | pl.col("_na"))
        if (got := lits[c.NAME]) else base.lazy() for c in chosen])
    # NOTE: eager, one filter after the other: a fused predicate would run the regex on every line again
    sel = {c.NAME: cand.filter(text.str.contains(c.PATTERN)).select(frame.columns)
           for c, cand in zip(chosen, cands, strict=True)}
    parts = [f for f in sel.values() if f.height]
    if len(parts) <= 1:
        matched = parts[0] if parts else frame.clear()
    else:
        matched = pl.concat(parts).unique("line", keep="first").sort("line")
    if not rest:
        return sel, matched, None
    others = frame.filter(~pl.col("line").is_in(matched["line"].implode())) if matched.height else frame
    return sel, matched, others


__all__ = ["required", "split"]

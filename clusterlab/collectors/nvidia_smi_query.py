"""Pieces of `nvidia-smi -q` saved without the report's header → one event per GPU section group.

Users and health tools keep only the part of the report that matters, e.g. `nvidia-smi -q -d ROW_REMAPPER`
cut after its banner, or `nvidia-smi -q | grep -A5 "Remapped Rows"` over eight GPUs:

        Remapped Rows
            Correctable Error                 : 0
            Uncorrectable Error               : 2
            Pending                           : Yes
            Remapping Failure Occurred        : No
    --
        Remapped Rows
            ...

Such a piece has no `NVSMI LOG` banner and no `Timestamp` (the `nvidia_smi` collector reads whole reports), often
no `GPU 00000000:5D:00.0` line and sometimes not the report's indentation. What the sections mean is the
`nvidia_smi` collector's (its section paths and its findings, worst first: a failed or pending row remap, pending
page retirement, volatile uncorrectable ECC counts, a GPU asking for a reset); this module only finds the GPU
groups of a piece: a `GPU <bus id>` line opens one, and so does a top-level section already seen in the group (the
next GPU's copy of it). A group without a GPU line names no PCI address. A piece carries no time: its events are
undated (the engine dates them from the file when it can).
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors import nvidia_smi as report
from clusterlab.collectors._base import Context, Parsed, file_of_line

NAME = "nvidia_smi_query"
FILE_HOST_COLUMN = True  # parsed with other files, the lines carry their file's host (ctx.host) as `file_host`
EXCLUSIVE = True
# the sections this collector gives a meaning to: one of them must be in the head
_SECTIONS = ("Remapped Rows", "Retired Pages", "ECC Errors", "GPU Reset Status")
SNIFF_HINT = tuple(s.lower().encode() for s in _SECTIONS)

_GPU = report._GPU  # noqa: SLF001  (the report's own spellings, not a copy of them)
_KEYS = report._KEYS  # noqa: SLF001
# A section line: capitalised words and nothing after them (`Volatile`, `Remapped Rows`), any indentation;
# a key line: a key read by the report's findings, then ` : value`.
_SECTION = r"^ *[A-Z][A-Za-z0-9 /()-]*$"
PATTERN = "|".join([_GPU, _SECTION, rf"^ *(?:{_KEYS}) *: "])
BLOCK_START = _GPU
_TOP = 4  # the report indents a GPU's top-level sections by four spaces
_SENTINEL = "(not named)"  # the bus of a group without a GPU line, replaced before the rows leave


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802  (a collector's contract names are capitals)
    """What parse() reads of the context (the report's, `nvidia_smi.GROUP_CONTEXT`): pieces agreeing on it may be
    parsed together."""
    return report.GROUP_CONTEXT(ctx)


def sniff(head: bytes, path: str) -> bool:
    """A piece of an nvidia-smi -q report: one of its ECC sections with `key : value` lines, and no report header."""
    lines = [ln.rstrip() for ln in head.decode("utf-8", "replace").splitlines()[:200] if ln.strip()]
    if not lines or lines[0].lstrip().startswith(("=", "Timestamp", "Unable to determine the device handle")):
        return False  # a whole report: the nvidia_smi collector's
    sections = [i for i, ln in enumerate(lines) if ln.strip() in _SECTIONS]
    # NOTE: the section name alone is common prose ("ECC Errors" in a README); its keys must follow it (under
    # at most two sub-sections: `ECC Errors` / `Volatile` / `DRAM Uncorrectable : 0`)
    return any(" : " in ln for i in sections for ln in lines[i + 1:i + 4])


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One event per GPU group of the piece."""
    out = Parsed()
    rows = report._rows(_reindented(lines), ctx)  # noqa: SLF001
    rows = _groups(rows)
    keyed = rows.filter(pl.col("key").is_not_null())
    if not keyed.height:
        out.unparsed_lines = lines["line"]
        out.unparsed = len(out.unparsed_lines)
        return out
    events = report._gpu_events(rows, ctx)  # noqa: SLF001
    unnamed = pl.col("pci_bus").is_null()
    out.add("events", events.with_columns(
        text=pl.when(unnamed).then(pl.col("text").str.replace(f"GPU {_SENTINEL}", "a GPU not named", literal=True))
        .otherwise(pl.col("text")),
        detail=pl.when(unnamed).then(pl.col("detail").str.replace(f'"bus_id":"{_SENTINEL}",', "", literal=True)
                                     .str.replace(f'"bus_id":"{_SENTINEL}"', "", literal=True))
        .otherwise(pl.col("detail")),
    ))
    return out


def _reindented(lines: pl.DataFrame) -> pl.DataFrame:
    """The lines shifted so that the piece's outermost section sits where the report puts it (four spaces); each
    file's own (many may be parsed together)."""
    text = pl.col("text").str.strip_chars_end()
    indent = text.str.len_chars() - text.str.strip_chars_start(" ").str.len_chars()
    # NOTE: measured on the sections this module knows (else on the keys, one level under a top section), not on
    # any capitalised line: a line of prose before the piece must not push its sections a level down
    known = text.str.strip_chars().is_in(list(_SECTIONS))
    keys = text.str.contains(rf"^ *(?:{_KEYS}) *: ")
    outer = pl.coalesce(indent.filter(known).min(), indent.filter(keys).min() - _TOP).over(file_of_line())
    f = lines.with_columns(_outer=outer, _indent=indent)
    if f["_outer"].drop_nulls().eq(_TOP).all():  # (none to shift: the report's own indentation, or no piece)
        return lines
    text, outer = pl.col("text"), pl.col("_outer")
    # (outer is at least -_TOP: keys at the margin put their section four spaces to the left of it)
    shifted = (pl.when(outer < _TOP).then(pl.lit(" " * 2 * _TOP).str.slice(0, _TOP - outer) + text)
               .otherwise(text.str.slice(outer - _TOP)))
    # (a line less indented than the outermost section is no part of the piece: it stays where it was)
    inside = (pl.col("_indent") >= outer) & (outer != _TOP) & ~text.str.contains(_GPU)
    return f.select(pl.exclude("_outer", "_indent", "text"),
                    pl.when(inside).then(shifted).otherwise(text).alias("text")).select(lines.columns)


def _groups(rows: pl.DataFrame) -> pl.DataFrame:
    """The rows with `gpu` (their group) and `bus` (its GPU line's, or the sentinel) for the report's aggregation."""
    top = pl.col("section").is_not_null() & (pl.col("level") == 1)
    # NOTE: each file's own GPU lines and sections (`_f`: many may be parsed together): a file's first sections
    # are never a copy of those another file ends with
    rows = rows.with_columns(_gpu_line=pl.col("bus").is_not_null().cum_sum().over("_f"))
    scope = ["_f", "_gpu_line"]
    # the n-th copy of a top-level section after a GPU line (or the piece's start) opens group n
    copy = pl.when(top).then(pl.col("line").rank("ordinal").over(*scope, "section"))
    rows = rows.with_columns(copy.alias("_copy")).with_columns(
        pl.col("_copy").forward_fill().fill_null(1).cum_max().over(scope).alias("_copy"))
    # (rows are in line order: a group's rows are one run of (file, GPU line, copy))
    rows = rows.with_columns(gpu=pl.struct(*scope, "_copy").rle_id() + 1)
    bus = pl.col("bus").forward_fill().over(scope).fill_null(_SENTINEL)
    return rows.with_columns(bus=pl.when(pl.int_range(pl.len()).over("gpu") == 0).then(bus)).drop("_copy", "_gpu_line")

"""sacct dump collector: `sacct --parsable2` (or `--parsable`, with a trailing `|`) → the jobs table.

The first line names the columns (`JobID|JobName|State|ExitCode|Start|End|...`); which columns and
in which order is whatever `--format` asked for, so every read goes by the header. One row per
job, and one per step (`1234.batch`, `1234.0`, `1234.extern`) where the dump has them; array
tasks read `1234_7`, heterogeneous components `1234+1`. States may carry a suffix
(`CANCELLED by 1000`); times are the local time of the machine sacct ran on (`ctx.tz`), with
`Unknown` / `None` for times that are not known; ExitCode is `exit:signal`.
"""

from __future__ import annotations

import re
import weakref

import polars as pl

from clusterlab.collectors._base import Context, Parsed
from clusterlab.collectors._slurmlib import jobs_frame

NAME = "sacct"
EXCLUSIVE = True
PATTERN = None  # structured: every line is a header or a row

# A header: `|`-separated field names, one of them a job id, optional trailing `|` (--parsable).
_HEADER = r"^[A-Za-z][A-Za-z0-9]*(?:\|[A-Za-z][A-Za-z0-9]*)+\|?$"
_HEADER_RE = re.compile(_HEADER)
# NOTE: a row of plain words (`train|COMPLETED`) also looks like a header; a header names a job id.
_NAMES_ID = r"(?i)(?:^|\|)jobid(?:raw)?(?:\||$)"

# sacct field name (lower case) → what we read it as; the first present of each list wins.
FIELDS: dict[str, tuple[str, ...]] = {
    "job_id": ("jobid", "jobidraw"),
    "job_name": ("jobname",),
    "state": ("state",),
    "exit": ("exitcode",),
    "start": ("start", "eligible"),
    "end": ("end",),
    "submit": ("submit",),
    "nnodes": ("nnodes", "allocnodes"),
    "nodelist": ("nodelist",),
    "tres": ("alloctres",),
}

# NOTE: a dump longer than one batch loses its header after the first batch; the engine gives
# parse() no per-file state, so the last header seen is kept per file context.
_HEADERS: weakref.WeakKeyDictionary[Context, list[str]] = weakref.WeakKeyDictionary()


def sniff(head: bytes, path: str) -> bool:
    """A sacct parsable dump: its first non-blank line is a `|` header naming JobID or JobIDRaw."""
    for ln in head.decode("utf-8", "replace").splitlines()[:5]:
        if ln.strip():
            return bool(_HEADER_RE.match(ln.strip()) and re.search(_NAMES_ID, ln))
    return False


def _file_header(ctx: Context) -> list[str] | None:
    """The header on the file's first line, for batches (or appended reads) that start after it."""
    h = (ctx.header or "").strip()
    return h.split("|") if _HEADER_RE.match(h) and re.search(_NAMES_ID, h) else None


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """Jobs (and steps) from the header and rows of one batch."""
    out = Parsed()
    frame = lines.filter(pl.col("text").str.strip_chars() != "").with_columns(
        (pl.col("text").str.strip_chars().str.contains(_HEADER) & pl.col("text").str.contains(_NAMES_ID)).alias("_hdr"))
    frame = frame.with_columns(pl.col("_hdr").cum_sum().alias("_grp"))
    headers = {0: _HEADERS.get(ctx) or _file_header(ctx)} if frame.height and frame["line"][0] > 1 else {0: None}
    for g, text in frame.filter(pl.col("_hdr")).select("_grp", "text").iter_rows():
        headers[g] = text.strip().split("|")
    for g, names in sorted(headers.items()):
        rows = frame.filter((pl.col("_grp") == g) & ~pl.col("_hdr"))
        if not rows.height:
            continue
        if names is None:
            out.unparsed += rows.height
            out.warnings.append(f"line {rows['line'][0]}: sacct rows before any header line")
            continue
        jobs, bad = read_rows(rows, names, ctx)
        out.add("jobs", jobs)
        if bad.height:
            out.unparsed += bad.height
            out.warnings.append(f"line {bad['line'][0]}: {bad.height} sacct rows without {len(names)} fields")
    if len(headers) > 1:
        _HEADERS[ctx] = headers[max(headers)]
    return out


def read_rows(rows: pl.DataFrame, names: list[str], ctx: Context) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The jobs rows of `rows` under header `names`, and the rows whose field count does not fit."""
    trailing = names[-1] == ""  # --parsable ends every line with `|`
    names = [n.lower() for n in (names[:-1] if trailing else names)]
    parts = pl.col("text").str.strip_chars_end("\r")
    if trailing:
        parts = parts.str.strip_suffix("|")
    frame = rows.with_columns(parts.str.split("|").alias("_f"))
    fits = pl.col("_f").list.len() == len(names)
    bad = frame.filter(~fits)
    frame = frame.filter(fits)
    col = {key: next((pl.col("_f").list.get(names.index(n)) for n in cands if n in names), pl.lit(None, pl.String))
           for key, cands in FIELDS.items()}
    return jobs_frame(frame, col, ctx), bad

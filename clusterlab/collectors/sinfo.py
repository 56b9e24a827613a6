"""sinfo node listings → one event per node that is down, drained or failing, with its reason.

What users paste when nodes go away: `sinfo -R` (the nodes with a reason) and `sinfo -lN` / `sinfo -lNe`
(every node, long), with Slurm 20.11–25.05's headers (`src/sinfo/opts.c`, default formats `%20E %9u %19H %N`
and `%N %.6D %.9P %.11T %.4c %.8z %.6m %.8d %.6w %.8f %20E`):

    REASON               USER      TIMESTAMP           NODELIST
    Not responding       slurm     2026-03-10T14:01:07 node[02-03]

    Tue Mar 10 14:05:12 2026
    NODELIST    NODES PARTITION       STATE CPUS    S:C:T MEMORY TMP_DISK WEIGHT FEATURES REASON
    node02          1     batch*      down*   16   16:1:1  96521        0      1   (null) Not responding

The reason column holds spaces, so it is cut at its header's place; the other columns are read as words.
A listing printed by a tool that quotes each line (`"REASON ...",` in a playbook's output) is read
inside its quotes. Times (TIMESTAMP, or the date line `-l` prints first) are the cluster's local time.
"""

from __future__ import annotations

import re

import polars as pl

from clusterlab.collectors._base import (
    FILE_LINE_BASE,
    TABLE_COLUMNS,
    Context,
    Parsed,
    file_of_line,
    json_detail,
    local_to_utc,
    search,
)
from clusterlab.collectors._slurmlib import explode_hosts, iso_local, known, with_reason_modes

NAME = "sinfo"
EXCLUSIVE = False
FILL_HOST = False  # each row names its own node

_Q = r'^\s*"?'  # a line may sit inside quotes
_HEAD = r"\bNODELIST\b.*\bREASON\b|\bREASON\b.*\bNODELIST\b"
_DATE = _Q + r'[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}"?,?\s*$'
# a `-R` row: ... user, then its time (or Unknown), then (with -l) a state, then the node list
_R_ROW = r"\S\s+\S+\s+(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d|Unknown)\s+(?:\S+\s+)?\S+\"?,?\s*$"
# a `-lN` row: node, NODES, partition, STATE, CPUS, S:C:T, MEMORY
_N_ROW = _Q + r"\S+\s+\d+\s+\S+\s+[a-z_]+[*~#!%$@^+-]*\s+\d+\s+\d+:\d+:\d+\s+\d+\s"
PATTERN = "|".join([_HEAD, _DATE, _R_ROW, _N_ROW])

# States of a node at work or ready for it (sinfo's short names, with their `*~#...` flags stripped)
_FINE = ["idle", "alloc", "allocated", "mix", "mixed", "comp", "completing", "resv", "reserved", "plnd", "planned",
         "npc", "perfctrs", "futr", "future", "powered_down", "powering_up", "power_down", "powering_down"]


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802 (the collector contract's name)
    """What parse() reads of the context: listings agreeing on it may be parsed together."""
    return (ctx.tz,)


def sniff(head: bytes, path: str) -> bool:
    """A `sinfo -R` or `sinfo -lN` listing: its header line (possibly quoted, after a prompt line)."""
    lines = head.decode("utf-8", "replace").splitlines()[:50]
    return search(lines, _Q + r"(?:REASON\s+USER\s+TIMESTAMP\s+(?:STATE\s+)?NODELIST"
                         r"|NODELIST\s+NODES\s+PARTITION\s+STATE\s+CPUS\b.*\bREASON)\b")


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """Events for the listed nodes that are down, drained or failing, or that carry a reason."""
    out = Parsed()
    unq = pl.col("text").str.replace(r'^\s*"', "").str.replace(r'"\s*,?\s*$', "").str.strip_chars_end()
    frame = lines.with_columns(unq.alias("row")).with_columns(
        pl.col("row").str.contains(_HEAD).alias("_head"), pl.col("row").str.contains(_DATE).alias("_date"))
    date = pl.when(pl.col("_date")).then(pl.col("row").str.strip_chars().str.replace_all(" +", " ")
                                         .str.strptime(pl.Datetime("us"), "%a %b %d %H:%M:%S %Y", strict=False))
    # NOTE: each file's own headers and listing times (files parsed together number their lines apart): rows
    # before a file's first header belong to no header, not to the one the file before ended with
    frame = frame.with_columns(
        _grp=file_of_line() * FILE_LINE_BASE + pl.col("_head").cum_sum().over(file_of_line()),
        _listed=local_to_utc(date, ctx.tz).forward_fill().over(file_of_line()))
    parts = []
    for grp, head in frame.filter(pl.col("_head")).select("_grp", "row").iter_rows():
        rows = frame.filter((pl.col("_grp") == grp) & ~pl.col("_head") & ~pl.col("_date"))
        if rows.height:
            parts.append(_read(rows, head, ctx))
    if not parts:
        return out
    nodes = pl.concat(parts, how="diagonal_relaxed").filter(pl.col("host").is_not_null())
    state = pl.col("state").str.to_lowercase().str.replace(r"[*~#!%$@^+-]+$", "")
    reason = known(pl.col("reason"))
    reason = pl.when(reason.str.to_lowercase() != "none").then(reason)
    # NOTE: `*` after a state: the node is not responding (sinfo's flag); a reason says why it was set aside
    lost = pl.when(pl.col("state").str.ends_with("*") & state.str.contains(r"^(?:down|drain|drng|drained|fail)"))
    nodes = with_reason_modes(nodes.with_columns(reason.alias("reason"), pl.lit(None, pl.String).alias("failure_mode")))
    nodes = nodes.with_columns(pl.coalesce("failure_mode", lost.then(pl.lit("node_failure"))).alias("failure_mode"))
    nodes = nodes.filter(pl.col("reason").is_not_null() | (pl.col("state").is_not_null() & ~state.is_in(_FINE)))
    nodes = explode_hosts(nodes, "host", out)
    schema = TABLE_COLUMNS["events"]
    out.add("events", nodes.select(
        pl.col("line").cast(pl.Int64), pl.col("ts").cast(schema["ts"]), "host",
        pl.lit("sinfo_node").alias("kind"), "failure_mode", "xid",
        pl.when(pl.col("failure_mode").is_not_null()).then(pl.lit("error")).otherwise(pl.lit("warning"))
        .alias("severity"),
        pl.col("text").str.slice(0, 2000).alias("text"),
        json_detail({"state": pl.col("state"), "reason": pl.col("reason"), "partition": pl.col("partition"),
                     "user": pl.col("user"), "nodelist": pl.col("nodelist")}).alias("detail"),
    ))
    return out


def _read(rows: pl.DataFrame, head: str, ctx: Context) -> pl.DataFrame:
    """The rows under one header: NODELIST, STATE, REASON, USER, PARTITION, TIMESTAMP and the row's time."""
    cols = [(m.group().upper(), m.start()) for m in re.finditer(r"\S+", head)]
    names = [n for n, _ in cols]
    at = names.index("REASON")
    start = cols[at][1]
    end = cols[at + 1][1] if at + 1 < len(cols) else None
    text = pl.col("row")
    # NOTE: the words before REASON are the columns before it; those after it, the columns after it
    before = text.str.slice(0, start).str.strip_chars().str.split(" ").list.eval(pl.element().filter(
        pl.element() != ""))
    after = (text.str.slice(end).str.strip_chars().str.split(" ").list.eval(pl.element().filter(pl.element() != ""))
             if end is not None else pl.lit([], pl.List(pl.String)))
    reason = text.str.slice(start, None if end is None else end - start).str.strip_chars()

    def col(name: str) -> pl.Expr:
        if name not in names:
            return pl.lit(None, pl.String)
        i = names.index(name)
        return before.list.get(i, null_on_oob=True) if i < at else after.list.get(i - at - 1, null_on_oob=True)

    stamp = iso_local(known(col("TIMESTAMP")), ctx.tz)
    return rows.select(
        "line", "text", col("NODELIST").alias("host"), col("STATE").alias("state"), reason.alias("reason"),
        col("USER").alias("user"), col("PARTITION").alias("partition"),
        pl.coalesce(stamp, "_listed").alias("ts"),
    )

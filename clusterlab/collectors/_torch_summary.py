"""torchrun's failure summary (`ChildFailedError`): one event per failed child, its rank, exit code and signal.

The summary's field lines (`  time      : ...`, `  rank      : 3 (local_rank: 3)`, `  exitcode  : -6 (pid: 1234)`,
`  error_file: ...`, `  traceback : ...`; torch 1.9's `  msg: "..."`) are read by `torch_dist`'s line fields; the
entries are grouped here by adjacency. Split from `torch_dist` (one collector, two modules).
"""

from __future__ import annotations

import re
import signal
from collections.abc import Callable

import polars as pl

from clusterlab.collectors._base import Context, json_detail, local_to_utc, rows_frame


def detail(frame: pl.DataFrame, names: list[str]) -> pl.Expr:
    """`json_detail` of the columns that hold a value on some row: a column null on every row adds nothing to any
    row's detail, and each member costs a JSON encoding (44 of them an event)."""
    held = [n for n in names if frame[n].null_count() < frame.height]
    return json_detail(held) if held else pl.lit(None, pl.String)


def children(f: pl.DataFrame, finals: pl.DataFrame, ctx: Context, content_mode: Callable[[pl.Expr], pl.Expr]
             ) -> tuple[pl.DataFrame, list[int], pl.Series]:
    """One event per failure entry of a ChildFailedError summary, grouped by line adjacency; the first lines of the
    entries that name neither rank nor exit code. `content_mode`: the mode the collector reads in a message."""
    lines = f.filter(pl.col("field").is_not_null() | pl.col("header").is_not_null()).select(
        "line", "rest", "key", "field", "value", "header").sort("line")
    entries: list[dict] = []
    section: dict[str, str] = {}
    for r in lines.iter_rows(named=True):  # summary lines only: a handful per failure
        block = r["key"].rsplit("|", 1)[0]  # file and launcher prefix
        if r["header"]:
            section[block] = r["header"]
            continue
        last = entries[-1] if entries else None
        if (r["field"] == "time" or last is None or r["line"] - last["last"] > 8 or last["block"] != block
                or r["field"] in last["fields"]):
            last = {"line": r["line"], "block": block, "root": section.get(block), "fields": {}, "tb": None,
                    "lines": []}
            entries.append(last)
        last["fields"][r["field"]], last["last"] = r["value"], r["line"]
        last["lines"].append(r["rest"].strip())
        if r["field"] == "traceback" and r["value"].startswith("Traceback (most recent call last)"):
            last["tb"] = r["line"]
    exc = {r["tb_line"]: r for r in finals.iter_rows(named=True)}
    rows = [_child_row(e, exc.get(e["tb"]), ctx) for e in entries]
    good = [r for r in rows if r["rank"] is not None or r["exitcode"] is not None]
    # An entry of a summary whose fields cannot be read is kept, as a failure nothing more is known of.
    odd = [{"line": r["line"], "host": r["host"], "kind": "unrecognised", "failure_mode": "unknown",
            "severity": "warning", "text": r["text"]} for r, e in zip(rows, entries, strict=True)
           if r["rank"] is None and r["exitcode"] is None and e["root"] is not None]
    tbs = [e["tb"] for e in entries if e["tb"] is not None]
    odd_frame = rows_frame("events", odd)
    bad = pl.Series("line", [r["line"] for r in rows if r["rank"] is None and r["exitcode"] is None], pl.Int64)
    if not good:
        return odd_frame, tbs, bad
    frame = pl.DataFrame(good, infer_schema_length=None)
    stamp = pl.col("time").cast(pl.String).str.replace("_", " ").str.to_datetime("%Y-%m-%d %H:%M:%S%.f", time_unit="us",
                                                                   strict=False)
    frame = frame.select(
        pl.col("line").cast(pl.Int64), local_to_utc(stamp, ctx.proc_tz or ctx.tz).alias("ts"),
        pl.col("host").cast(pl.String),
        # a child that died of a signal, with no error of its own, failed of a cause other lines may state
        pl.lit("child_failed").alias("kind"),
        pl.coalesce(content_mode(pl.col("cause").cast(pl.String)), pl.lit("unknown")).alias("failure_mode"),
        "severity", pl.col("rank").cast(pl.Int32, strict=False), "text",
        detail(frame, ["root_cause", "local_rank", "exitcode", "signal", "pid", "fqdn", "error_file", "exception",
                        "message"]).alias("detail"),
    )
    return pl.concat([frame, odd_frame], how="diagonal_relaxed"), tbs, bad


def _child_row(e: dict, exc: dict | None, ctx: Context) -> dict:
    """The fields of one summary entry (`rank : 3 (local_rank: 3)`, `exitcode : -6 (pid: 1234)`, ...)."""
    fl = e["fields"]
    rank = re.match(r"(\d+)(?: \(local_rank: (\d+)\))?", fl.get("rank") or "")
    code = re.match(r"(-?\d+)(?: \(pid: (\d+)\))?(?: \(?(SIG\w+)\)?)?", fl.get("exitcode") or "")
    # 1.9 prints the message as `msg: "..."`
    tb = fl.get("traceback") or (fl.get("msg") or "").strip('"')
    sig = re.search(r"Signal (\d+) \((SIG\w+)\)", tb)
    exitcode = _int(code, 1)
    signame = (code.group(3) if code and code.group(3) else sig.group(2) if sig else
               _signal_name(-exitcode) if exitcode is not None and exitcode < 0 else None)
    fqdn = fl.get("host")
    host = fqdn if not fqdn or fqdn in ctx.known_hosts or _is_ip(fqdn) else fqdn.split(".")[0]
    message = exc["exc_msg"] if exc else (None if tb in ("", "<N/A>") or tb.startswith("Traceback") else tb)
    # NOTE: the error itself leads the text ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate
    # ..."): it is what an incident's evidence must show, not the summary's header fields
    said = ": ".join(x for x in (exc["exc_type"] if exc else None, message) if x)
    return {
        "line": e["line"], "text": " | ".join([said, *e["lines"]] if said else e["lines"]), "time": fl.get("time"),
        "host": host, "rank": _int(rank, 1),
        "severity": "critical" if e["root"] == "root" else "error",
        "root_cause": e["root"] == "root" if e["root"] else None, "local_rank": _int(rank, 2),
        "exitcode": exitcode, "signal": signame, "pid": _int(code, 2), "fqdn": fqdn if fqdn != host else None,
        "error_file": None if fl.get("error_file") in (None, "<N/A>") else fl.get("error_file"),
        "exception": exc["exc_type"] if exc else None, "message": message,
        "cause": " ".join(x for x in (exc["exc_type"] if exc else None, message) if x) or None,
    }


def _signal_name(n: int) -> str | None:
    """SIGABRT for 6 (Linux numbering, as torchrun itself reports it)."""
    try:
        return signal.Signals(n).name
    except ValueError:
        return None


def _int(m: re.Match | None, group: int) -> int | None:
    """A regex group as an int, None where it did not match or does not fit 32 bits (ranks, pids, exit codes)."""
    n = int(m.group(group)) if m and m.group(group) else None
    return n if n is not None and -(2**31) <= n < 2**31 else None


def _is_ip(host: str) -> bool:
    """An IPv4 or IPv6 address (never shortened at its first dot)."""
    return re.fullmatch(r"[\d.]+|[0-9a-fA-F]*:[0-9a-fA-F:]*", host) is not None

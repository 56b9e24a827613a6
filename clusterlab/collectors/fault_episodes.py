"""Node fault episodes (a node out of service from `start` to `end`, and why) → `fault_episodes` rows.

Two formats:

- A fault trace as InfiniteHBD-Trace publishes it (github.com/stepfun-ai/InfiniteHBD-Trace): a JSON array
  (or one object a line) of events `{"node_id", "event_time", "event_type": "fault_start" | "fault_end",
  "fault_type": {"Level", "Class", "Desc"}}`, `event_time` in days since the trace's day 0. The day 0 is
  the ingest's epoch (`clusterlab ingest --epoch 2024-03-30`, `Lab.ingest(..., epoch=...)`): without
  one the file is refused, since relative days dated at a guess would join no run. An ISO time in
  `event_time` needs no epoch. A start is paired with the next end of the same node and the same fault
  type (a node can have two faults open at once); a start never ended is an episode still open.
- A plain CSV with the header `host,start,end,class,detail` (`detail` may hold commas, and may be
  quoted): `start` / `end` ISO 8601 (naive: UTC; `Z` or an offset honoured) or relative days as above;
  an empty `end` is an episode still open.

`failure_mode` is the taxonomy's name for the class and detail (`GPU DBE` → gpu_memory_ecc, `Link Down` →
network, ...); `node_failure` where they say nothing finer (the trace's `Unknown Error`, a stress test).
"""

from __future__ import annotations

import json

import polars as pl

from clusterlab.collectors._base import TABLE_COLUMNS, Context, Parsed, offset_to_utc

NAME = "fault_episodes"
EXCLUSIVE = True
SNIFF_HINT = (b'"fault_start"', b"host,start,end,class")
PATTERN = None
BLOCK_START = None

_CSV_HEADER = r"(?i)^\s*host\s*,\s*start\s*,\s*end\s*,\s*class\s*(?:,\s*detail\s*)?$"
# one CSV record: the first four fields unquoted or quoted (no comma inside), the detail the rest of the line
_FIELD = r'\s*(?:"([^"]*)"|([^,"]*))\s*'
_CSV_ROW = rf"^{_FIELD},{_FIELD},{_FIELD},{_FIELD}(?:,(.*))?$"
_KEY = r'"node_id"\s*:'  # once per trace record: where each record's line is

# (failure mode, regex over `class: detail`), first match wins; order matters (ECC before the GPU catch-all)
MODES: tuple[tuple[str, str], ...] = (
    ("gpu_memory_ecc", r"(?i)\b[DS]BE\b|double bit|single bit|\becc\b|row remap"),
    ("gpu_fell_off_bus", r"(?i)gpu lost|device not found|fell off the bus|xid[\s:=_-]*79\b"),
    ("pcie_error", r"(?i)pci(?:e)? link width|pcie? .*(?:aer|bus error)"),
    ("gpu_throttle", r"(?i)gpu temperature|thermal|throttl"),
    ("nvlink_error", r"(?i)nvlink|nvswitch|fabric manager"),
    ("gpu_hw_other", r"(?i)\bgpu\b|\bxid\b|nvidia-smi|silent data corruption|\bsdc\b"),
    ("network", r"(?i)\bnic\b|rnic|link down|cable|optical|\bib\b|infiniband|roce|\bhca\b|y-cable|link speed"),
    ("filesystem_io", r"(?i)\bfs\b|file ?system|read-?only|disk|nfs|lustre"),
    ("host_hw", r"(?i)power supply|\bpsu\b|\bfan\b|motherboard|\bcpu\b|machine check|\bmce\b|raid|riser|dimm|"
                r"memory|battery|bmc"),
)


def sniff(head: bytes, path: str) -> bool:
    """A fault trace (its records' `fault_start` / `fault_end` and `node_id`) or the episode CSV's header."""
    text = head.decode("utf-8", "replace")
    if '"node_id"' in text and ('"fault_start"' in text or '"fault_end"' in text) and '"event_time"' in text:
        return True
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    return bool(pl.Series([first]).str.contains(_CSV_HEADER).any())


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """The episodes of a trace or a CSV (one batch holds the whole file: see the NOTE in `_trace`)."""
    out = Parsed()
    text = lines["text"]
    csv = text.str.contains(_CSV_HEADER)
    if csv.any():
        _csv(lines.filter(~csv & (text.str.strip_chars() != "")), ctx, out)
    else:
        _trace(lines, ctx, out)
    return out


def _when(raw: pl.Expr, ctx: Context) -> tuple[pl.Expr, pl.Expr]:
    """Naive UTC of an ISO time or of relative days since ctx.epoch; and whether it is relative days."""
    raw = raw.str.strip_chars()
    days = raw.cast(pl.Float64, strict=False)
    iso = raw.str.extract_groups(
        r"^(?P<_d>\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d)?)?)(?:\.(?P<_f>\d+))?(?P<_o>Z|[+-]\d\d:?\d\d)?$")
    local = (iso.struct.field("_d").str.replace(" ", "T").str.to_datetime("%Y-%m-%dT%H:%M:%S", strict=False)
             .fill_null(iso.struct.field("_d").str.replace(" ", "T").str.to_datetime("%Y-%m-%dT%H:%M", strict=False))
             .fill_null(iso.struct.field("_d").str.to_datetime("%Y-%m-%d", strict=False)))
    micros = iso.struct.field("_f").str.slice(0, 6).str.pad_end(6, "0").cast(pl.Int64, strict=False).fill_null(0)
    absolute = offset_to_utc(local.cast(pl.Datetime("us")) + pl.duration(microseconds=micros),
                             iso.struct.field("_o"), "UTC")
    if ctx.epoch is None:
        relative = pl.lit(None, pl.Datetime("us"))
    else:
        # NOTE: whole microseconds of the days: the trace prints 4 decimals of a day (8.64 s)
        relative = pl.lit(ctx.epoch, pl.Datetime("us")) + pl.duration(microseconds=(days * 86_400e6).round())
    return pl.when(days.is_not_null()).then(relative).otherwise(absolute), days.is_not_null()


def failure_mode(text: pl.Expr) -> pl.Expr:
    """The taxonomy's failure mode of an episode's `class: detail` (node_failure where nothing finer is said)."""
    mode = pl.lit("node_failure")
    for m, rx in reversed(MODES):
        mode = pl.when(text.str.contains(rx)).then(pl.lit(m)).otherwise(mode)
    return mode


def _refuse_relative(frame: pl.DataFrame, rel: str, ctx: Context, out: Parsed) -> bool:
    """Relative days without an epoch: refuse the file (the user can give one); True when refused."""
    hit = frame.filter(pl.col(rel))
    if ctx.epoch is None and hit.height:
        out.refuse = (f"line {hit['line'][0]}: times in days since the trace's start need its date: "
                      "ingest with --epoch YYYY-MM-DD (Lab.ingest(..., epoch=...))")
        return True
    return False


def _rows(frame: pl.DataFrame) -> pl.DataFrame:
    """The table's columns from `line, ts, end_ts, host, level, fault_class, detail`."""
    schema = TABLE_COLUMNS["fault_episodes"]
    fm = failure_mode(pl.concat_str([pl.col("fault_class").fill_null(""), pl.col("detail").fill_null("")],
                                    separator=": "))
    return frame.with_columns(failure_mode=fm).select([pl.col(c).cast(t) for c, t in schema.items()])


def _csv(lines: pl.DataFrame, ctx: Context, out: Parsed) -> None:
    """Episodes of the `host,start,end,class,detail` CSV."""
    f = lines.with_columns(pl.col("text").str.strip_chars_end("\r").str.extract_groups(_CSV_ROW).alias("_g"))
    g = pl.col("_g").struct
    f = f.with_columns(
        host=pl.coalesce(g.field("1"), g.field("2")).str.strip_chars(),
        _start=pl.coalesce(g.field("3"), g.field("4")), _end=pl.coalesce(g.field("5"), g.field("6")),
        fault_class=pl.coalesce(g.field("7"), g.field("8")).str.strip_chars(),
        # a quoted detail: its quotes dropped and its doubled quotes undone
        detail=g.field("9").str.strip_chars().str.replace(r'^"(.*)"$', "$1").str.replace_all('""', '"'),
    )
    start, rel_s = _when(pl.col("_start"), ctx)
    end, rel_e = _when(pl.col("_end"), ctx)
    f = f.with_columns(ts=start, end_ts=end, _rel=rel_s | rel_e.fill_null(False),
                       _no_end=pl.col("_end").str.strip_chars().fill_null("") == "")
    if _refuse_relative(f, "_rel", ctx, out):
        return
    ok = (pl.col("host").fill_null("") != "") & pl.col("ts").is_not_null() & (pl.col("end_ts").is_not_null()
                                                                             | pl.col("_no_end"))
    bad = f.filter(~ok)
    if bad.height:
        out.unparsed += bad.height
        out.warnings.append(f"line {bad['line'][0]}: not `host,start,end,class,detail` with a host and a start time")
    good = f.filter(ok).with_columns(level=pl.lit(None, pl.String),
                                     detail=pl.when(pl.col("detail") != "").then("detail"))
    _backwards(good, out)
    out.add("fault_episodes", _rows(good))


def _backwards(frame: pl.DataFrame, out: Parsed) -> None:
    """Warn of an episode that ends before it starts (kept: the evidence says so)."""
    back = frame.filter(pl.col("end_ts") < pl.col("ts"))
    if back.height:
        out.warnings.append(f"line {back['line'][0]}: the episode ends before it starts")


def _trace(lines: pl.DataFrame, ctx: Context, out: Parsed) -> None:
    """Episodes of an InfiniteHBD-style trace: its starts paired with their ends."""
    records = _records(lines, out)
    if records is None:
        return
    when, rel = _when(pl.col("event_time"), ctx)
    records = records.with_columns(ts=when, _rel=rel)
    if _refuse_relative(records, "_rel", ctx, out):
        return
    kind = pl.col("event_type").str.to_lowercase()
    bad = records.filter(pl.col("node_id").is_null() | pl.col("ts").is_null() | ~kind.is_in(["fault_start",
                                                                                            "fault_end"]))
    if bad.height:
        out.unparsed += bad.height
        out.warnings.append(f"line {bad['line'][0]}: a record without node_id, a time or a fault_start/fault_end")
    _pair(records.filter(~pl.col("line").is_in(bad["line"].implode())), out)


_OPEN = r"^\s*\[?\s*\{\s*$"  # a pretty-printed record's opening line (its nested objects open after a key)
_RECORD = {"node_id": pl.String, "event_time": pl.String, "event_type": pl.String, "Level": pl.String,
           "Class": pl.String, "Desc": pl.String, "line": pl.Int64}


def _records(lines: pl.DataFrame, out: Parsed) -> pl.DataFrame | None:
    """The trace's records, each with the line of its `"node_id"` (else its first line); None: none read.

    NOTE: decoded record by record (json.loads in a loop): a trace holds thousands of records, not millions, and
    one damaged record then costs itself only, not the file. The whole file is one batch (the engine flushes every
    200,000 lines).
    """
    text = lines["text"].str.strip_chars()
    one_a_line = bool((text.str.starts_with("{") & text.str.ends_with("}")).all())
    chunk = (pl.int_range(pl.len()) if one_a_line else pl.col("text").str.contains(_OPEN).cum_sum()).alias("_c")
    key = pl.when(pl.col("text").str.contains(_KEY)).then(pl.col("line"))
    chunks = (lines.with_columns(chunk).group_by("_c", maintain_order=True)
              .agg(body=pl.col("text").str.join("\n"),
                   line=pl.coalesce(key.drop_nulls().first(), pl.col("line").first()))
              .with_columns(record=pl.col("body").str.replace(r"^\s*\[", "").str.replace(r"[\s,\]]*$", ""))
              .filter(pl.col("body").str.contains("{", literal=True)))
    rows, broken = [], []
    # a chunk is the whole array (one line, or no record on a line of its own), else one record of it
    for line, whole, record in zip(chunks["line"].to_list(), chunks["body"].to_list(), chunks["record"].to_list(),
                                   strict=True):
        value = _loads(whole)
        value = _loads(record) if value is None else value
        if value is None:
            broken.append(line)
            continue
        for rec in value if isinstance(value, list) else [value]:
            rows.append(_record(rec, line) if isinstance(rec, dict) else {"line": line})
    if broken:
        out.unparsed += len(broken)
        out.warnings.append(f"line {broken[0]}: not a JSON fault record (cut or damaged)")
    return pl.DataFrame(rows, schema=_RECORD) if rows else None


def _loads(text: str) -> object | None:
    """The JSON value of `text` (None: not JSON)."""
    try:
        return json.loads(text)
    except ValueError:
        return None


def _record(rec: dict, line: int) -> dict:
    """One trace record's fields as text (a bounded length each: the text is untrusted)."""
    ft = rec.get("fault_type") if isinstance(rec.get("fault_type"), dict) else {}
    return {"node_id": _text(rec.get("node_id")), "event_time": _text(rec.get("event_time")),
            "event_type": _text(rec.get("event_type")), "Level": _text(ft.get("Level")),
            "Class": _text(ft.get("Class")), "Desc": _text(ft.get("Desc")), "line": line}


def _text(v: object) -> str | None:
    """A scalar as text, at most 500 characters (None for null, an object or an array)."""
    return None if v is None or isinstance(v, dict | list) else str(v)[:500]


def _pair(records: pl.DataFrame, out: Parsed) -> None:
    """Each node's n-th start of a fault type ends at its n-th end of the same type (in time order)."""
    key = ["node_id", "Level", "Class", "Desc"]
    records = records.with_columns(_start=pl.col("event_type").str.to_lowercase() == "fault_start")
    records = records.sort(["ts", "line"]).with_columns(_n=pl.int_range(pl.len()).over([*key, "_start"]))
    starts = records.filter(pl.col("_start"))
    ends = records.filter(~pl.col("_start")).select(*key, "_n", end_ts="ts", _end_line="line")
    paired = starts.join(ends, on=[*key, "_n"], how="full", coalesce=True, nulls_equal=True)
    orphans = paired.filter(pl.col("line").is_null())
    if orphans.height:
        out.unparsed += orphans.height
        out.warnings.append(f"line {orphans['_end_line'].min()}: a fault_end with no fault_start of its node and type")
    eps = paired.filter(pl.col("line").is_not_null()).select(
        "line", "ts", "end_ts", host="node_id", level="Level", fault_class="Class", detail="Desc")
    _backwards(eps, out)
    out.add("fault_episodes", _rows(eps.sort("line")))

"""Prometheus HTTP API `query_range` dumps (the `matrix` result) → `telemetry` rows.

The format (prometheus.io/docs/prometheus/latest/querying/api/#range-queries):
`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":...,<labels>},
"values":[[<unix seconds>,"<value>"],...]},...]}}`, a value a string (`"NaN"` and `"+Inf"` too). A file
holds one response (as curl saved it, on one line or pretty-printed), or one response a line. The
series' host is its dcgm-exporter `Hostname` label, else its `instance` without the port (node
exporter's target), else the bundle's. A query that renamed the metric (`rate(...)`, no `__name__`)
names nothing clusterlab knows: it is counted, not guessed. Decoded by polars' JSON reader where each line is a
response; otherwise (one response on a line of any length, as curl saves it, or pretty-printed) streamed by
`parse_document` with ijson, a series at a time, so that a day's dump of hundreds of megabytes is read in bounded
memory. A streamed row carries the line its series starts on: exact for responses on lines of their own, as near
as the 1 MiB piece it was read in for a pretty-printed one.
"""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl

from clusterlab import telemetry
from clusterlab.collectors._base import Context, Parsed

NAME = "prometheus_range"
EXCLUSIVE = True
SNIFF_HINT = (b'"resulttype"',)
PATTERN = None
BLOCK_START = None

_LABELS = ["__name__", "Hostname", "instance", "gpu", "pci_bus_id", "device", "port", "export"]
_DOC = pl.Struct({
    "status": pl.String,
    "data": pl.Struct({
        "resultType": pl.String,
        "result": pl.List(pl.Struct({
            "metric": pl.Struct({k: pl.String for k in _LABELS}),
            "values": pl.List(pl.List(pl.String)),
        })),
    }),
})


def sniff(head: bytes, path: str) -> bool:
    """A Prometheus API response whose result is a matrix."""
    text = head[:4096].decode("utf-8", "replace").lstrip()
    return text.startswith("{") and '"resultType"' in head.decode("utf-8", "replace") and \
        '"matrix"' in head.decode("utf-8", "replace")


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One telemetry row per value of each series of a known metric (counters: rates between its values)."""
    out = Parsed()
    text = lines["text"]
    whole_lines = bool(text.str.strip_chars().str.starts_with("{").all() and text.str.strip_chars().str
                       .ends_with("}").all())
    docs = (lines.select("line", doc="text") if whole_lines
            else pl.DataFrame({"line": [int(lines["line"][0])], "doc": ["\n".join(text.to_list())]}))
    try:
        decoded = docs.with_columns(pl.col("doc").str.json_decode(_DOC).alias("_d"))
    except pl.exceptions.PolarsError:
        # NOTE: one response longer than the engine's batch (a pretty-printed dump of millions of lines) is cut
        out.unparsed += lines.height
        out.warnings.append(f"line {docs['line'][0]}: not valid JSON (cut, or one response over a batch long)")
        return out
    bad = decoded.filter(pl.col("_d").struct.field("data").struct.field("resultType").fill_null("") != "matrix")
    if bad.height:
        out.unparsed += bad.height
        out.warnings.append(f"line {bad['line'][0]}: not a Prometheus matrix response (or cut in the middle)")
    series = (decoded.filter(pl.col("_d").struct.field("data").struct.field("resultType") == "matrix")
              .select("line", r=pl.col("_d").struct.field("data").struct.field("result"))
              .explode("r").filter(pl.col("r").is_not_null()).unnest("r").unnest("metric"))
    if not series.height:
        return out
    labelled = _labelled(series, out, "values")
    points = labelled.explode("values").filter(pl.col("values").is_not_null()).with_columns(
        t=pl.col("values").list.get(0, null_on_oob=True), v=pl.col("values").list.get(1, null_on_oob=True))
    out.add("telemetry", _telemetry(points))
    return out


def _labelled(series: pl.DataFrame, out: Parsed, *keep: str) -> pl.DataFrame:
    """The named series' host, GPU, bus id, device and metric name (with the `keep` columns); unnamed ones counted."""
    unnamed = series.filter(pl.col("__name__").is_null())
    out.unparsed += unnamed.height
    if unnamed.height:
        out.warnings.append(f"line {unnamed['line'][0]}: a series without __name__ (a renamed query) skipped")
    port = pl.col("port")
    device = pl.coalesce("export", pl.when(port.is_not_null()).then(pl.format("{}/{}", "device", port)), "device")
    # NOTE: a series' labels are read once, before its points are exploded: the bus id's regex per point was
    # two fifths of the parse of a node's response
    return series.filter(pl.col("__name__").is_not_null()).select(
        "line", *keep,
        host=pl.coalesce("Hostname", pl.col("instance").str.replace(r":\d+$", "")),
        gpu=pl.col("gpu").cast(pl.Int32, strict=False), bus_id=telemetry.bus_id(pl.col("pci_bus_id")),
        device=pl.when(pl.col("__name__").str.starts_with("DCGM_")).then(pl.lit(None, pl.String)).otherwise(device),
        name="__name__",
    )


def _telemetry(points: pl.DataFrame) -> pl.DataFrame:
    """Telemetry rows of labelled points whose `t` is the UNIX time (number or text) and `v` the value as text."""
    samples = points.select(
        "line",
        # NOTE: a time no datetime holds (1e300) is no time: the point is left out, not the batch
        (pl.col("t").cast(pl.Float64, strict=False) * 1e6).cast(pl.Int64, strict=False).cast(pl.Datetime("us"))
        .alias("ts"),
        "host", "gpu", "bus_id", "device", "name",
        value=pl.col("v").cast(pl.Float64, strict=False),
    ).filter(pl.col("ts").is_not_null())
    return telemetry.to_rows(samples, telemetry.PROMETHEUS)


# ---------------------------------------------------------------- streamed documents


def document(head: bytes) -> bool:
    """Streamed unless each line is a response: a first line longer than the head (curl's one-line answer) or a
    pretty-printed response (which one batch of lines may cut) is read as a JSON document."""
    end = head.find(b"\n")
    first = head[:end].strip() if end >= 0 else b""
    return not (first.startswith(b"{") and first.endswith(b"}"))


CHUNK_POINTS = 200_000  # points held before their rows are handed on (at the end of a series)
SERIES_POINTS = 1_000_000  # a series longer than this (no server gives one: 11,000 a query) is handed on in parts
_RESULT = "data.result.item"
_PAIR, _POINT = f"{_RESULT}.values.item", f"{_RESULT}.values.item.item"
_LABEL_AT = {f"{_RESULT}.metric.{k}": k for k in _LABELS}


class _Series:
    """The points read so far, a column each, and the series they belong to (labels, line, point count)."""

    def __init__(self) -> None:
        self.t: list[object] = []
        self.v: list[object] = []
        self.meta: list[dict[str, object]] = []

    def close(self, labels: dict[str, object], line: int, start: int) -> None:
        """The points from `start` on are one series (or the part of one read so far)."""
        self.meta.append({**labels, "line": line, "_n": len(self.t) - start})

    def rows(self, out: Parsed, upto: int) -> Parsed:
        """Hand the points before `upto` (those of the series closed) on as `out`'s telemetry rows; keep the rest."""
        if self.meta:
            meta = pl.DataFrame(self.meta, schema={**{k: pl.String for k in _LABELS}, "line": pl.Int64,
                                                   "_n": pl.Int64})
            # NOTE: the labels are read once a series (`_labelled`), then repeated over its points
            labelled = _labelled(meta, out, "_n")
            points = (labelled.select(pl.exclude("_n").repeat_by(pl.col("_n")).explode())
                      .filter(pl.col("line").is_not_null()))  # (a series of no points explodes to a null)
            named = pl.Series([m.get("__name__") is not None for m in self.meta]).repeat_by(meta["_n"]).explode()
            t = pl.Series("t", self.t[:upto], dtype=pl.Float64, strict=False).filter(named)
            v = pl.Series("v", [x if isinstance(x, str) or x is None else str(x) for x in self.v[:upto]],
                          dtype=pl.String).filter(named)
            out.add("telemetry", _telemetry(points.with_columns(t=t, v=v)))
        del self.t[:upto], self.v[:upto]
        self.meta = []
        return out


def _lines_of(pieces: Iterator[tuple[int, bytes]], few: int = 64) -> Iterator[tuple[int, bytes]]:
    """The pieces, a piece of few lines (long ones: curl's answers, one a line) split at its line breaks, so that
    what the parser meets in each part is known to lie on the part's line."""
    for at, piece in pieces:
        if piece.count(b"\n") > few:
            yield at, piece
            continue
        *whole, last = piece.split(b"\n")
        for i, part in enumerate(whole):
            yield at + i, part + b"\n"
        if last:
            yield at + len(whole), last


def parse_document(pieces: Iterator[tuple[int, bytes]], ctx: Context) -> Iterator[Parsed]:
    """Telemetry rows of the responses in `pieces`, streamed: handed on every CHUNK_POINTS points or so."""
    import ijson  # NOTE: only files read as documents need it

    events = ijson.sendable_list()
    coro = ijson.parse_coro(events, use_float=True, multiple_values=True)
    acc, out = _Series(), Parsed()
    labels: dict[str, object] = {}
    doc_line = series_line = start = k = 0
    in_series, result_type, line = False, None, 1

    def handle() -> None:
        nonlocal doc_line, series_line, start, k, result_type, labels, in_series
        t, v = acc.t, acc.v
        for prefix, event, value in events:
            if prefix == _POINT:  # the hot path: a point's time, then its value
                if k == 0:
                    t.append(value)
                elif k == 1:
                    v.append(value)
                k += 1
            elif prefix == _PAIR:
                if event == "start_array":
                    k = 0
                elif event == "end_array" and k < 2:  # a point cut short ([t] or []): its columns stay aligned
                    if k == 0:
                        t.append(None)
                    v.append(None)
            elif prefix == _RESULT:
                if event == "start_map":
                    labels, series_line, start, in_series = {}, line, len(t), True
                elif event == "end_map":
                    acc.close(labels, series_line, start)
                    in_series = False
            elif prefix in _LABEL_AT:
                labels[_LABEL_AT[prefix]] = value if isinstance(value, str) else None
            elif prefix == "data.resultType":
                result_type = value
            elif prefix == "" and event == "start_map":
                doc_line, result_type = line, None
            elif prefix == "" and event == "end_map" and result_type != "matrix":
                out.unparsed += 1
                out.warnings.append(f"line {doc_line}: not a Prometheus matrix response ({str(result_type)[:40]})")
        events.clear()

    try:
        for at, part in _lines_of(pieces):
            line = at  # (read by handle())
            coro.send(part)
            handle()
            if in_series and len(acc.t) - start >= SERIES_POINTS:
                # one series this long (no server sends one): handed on in parts, a counter's rate lost at each cut
                acc.close(labels, series_line, start)
                yield acc.rows(out, len(acc.t))
                out, start = Parsed(), 0
            elif len(acc.t) >= CHUNK_POINTS:
                upto = start if in_series else len(acc.t)
                yield acc.rows(out, upto)
                out, start = Parsed(), start - upto if in_series else 0
        coro.close()
        handle()
    except ijson.JSONError as e:
        handle()
        out.unparsed += 1
        out.warnings.append(f"line {line}: not valid JSON, or cut short: read up to here "
                            f"({str(e).splitlines()[0][:80]})")
        if in_series:  # the points of the series the damage cut are good ones (a point it cut has no value)
            acc.v.extend([None] * (len(acc.t) - len(acc.v)))
            acc.close(labels, series_line, start)
    yield acc.rows(out, len(acc.t))

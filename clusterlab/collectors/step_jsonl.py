"""Per-rank step records (JSON Lines): what `clusterlab.torchtools.instrument` writes and anyone may emit.

One object a line: `ts` (ISO 8601, or epoch seconds; the end of the step; ISO without an offset
is UTC), `rank`, `host`, `step`, `step_s`, and where known `compute_s`, `comm_s`, `data_s`,
`tokens`, `loss`. A record with `stalled_s` (and maybe `region`) is not a step but a step still open that long
(`instrument.StepRecorder`'s stall record): it becomes a `step_stalled` event; a step whose `loss_nonfinite` is
true is also a `loss_nonfinite` event of that rank. Other keys are ignored. A line
that is not such an object (junk, a truncated last line, a record without `rank` or `step`) is counted as
unparsed, never fatal.

This is the hottest path (ranks x steps rows): the batch is decoded by polars in one call with
an explicit schema. Only when that call fails are invalid lines dropped in one lenient pass and
the rest read with every field as text, halving the batch only around a nested value.
"""

from __future__ import annotations

import io
import re

import polars as pl

from clusterlab.collectors._base import Context, Parsed, sniff_jsonl

NAME = "step_jsonl"
PATTERN = None
EXCLUSIVE = True
SNIFF_HINT = (b'"step"',)
GROUPABLE = True  # the bulk of a fleet's files (one per rank and attempt): many are parsed in one call
UNPARSED_WARNING = "not a step record (a JSON object with rank and step)"

_FIELDS: dict[str, pl.DataType] = {
    "ts": pl.String, "rank": pl.Int64, "host": pl.String, "step": pl.Int64, "step_s": pl.Float64,
    "compute_s": pl.Float64, "comm_s": pl.Float64, "data_s": pl.Float64, "tokens": pl.Int64, "loss": pl.Float64,
    "stalled_s": pl.Float64, "region": pl.String, "loss_nonfinite": pl.Boolean,
}
# Epoch seconds (what instrument.py writes) read as numbers: no text column to cast. A file of ISO times makes
# this read fail at once, and the text schema reads it.
_EPOCH = {**_FIELDS, "ts": pl.Float64}
_TYPED = pl.Struct(_FIELDS)
_HALVINGS = 32  # damaged files a group's reads may single out before the group is read line by line instead
_SLOW_PART = 64  # lines: a part this small the fast reader refused goes to the slow decoders whole
# The fallback: every field as text, cast afterwards ("rank": "3" is read).
_TEXT = pl.Struct({k: pl.String for k in _FIELDS})
_OBJECT = r"^\s*\{.*\}\s*$"
# Python's json module writes a non-finite float as the bare token NaN, Infinity or -Infinity (allow_nan is its
# default), which is no JSON: polars refuses the line and the rank's non-finite loss, the one number that shows a
# GPU computing wrong values, would be lost. The loss becomes null with `loss_nonfinite` set; any other field null.
_NONFINITE = (b"NaN", b"Infinity")
# a line that is blank or white after the first: one regex pass (three substring searches of every byte cost 7x)
_BLANK_AFTER_FIRST = re.compile(rb"\n[\n \t]")
_LOSS_NONFINITE = (r'"loss"\s*:\s*(?:-?Infinity|NaN)(\s*[,}])', '"loss": null, "loss_nonfinite": true${1}')
_FIELD_NONFINITE = (r':\s*(?:-?Infinity|NaN)(\s*[,}])', ": null${1}")


def sniff(head: bytes, path: str) -> bool:
    """Most of the head's first lines are JSON objects with `step` and `rank` keys."""
    return sniff_jsonl(head, lambda o: "step" in o and "rank" in o)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """Rank step rows from a batch of JSONL lines."""
    text = lines.filter(pl.col("text").str.strip_chars() != "")
    objects = _finite_tokens(text.filter(pl.col("text").str.contains(_OBJECT)))
    rows = _records(_decode(objects))
    out = Parsed()
    _add(out, rows)
    out.unparsed = text.height - rows.height
    if out.unparsed:
        out.unparsed_lines = text.join(rows.select("line"), on="line", how="anti")["line"]
    return out


def parse_whole(texts: list[bytes], base: int) -> Parsed | None:
    """Whole files of step records (a fleet's per-rank files): NDJSON reads over their joined text (UTF-8), line
    `i x base + n` for line n of text i. Blank lines, which the reader skips, cost no second read (`_whole`). A file the
    joined read refuses (a last line cut as its rank died, junk) is found (by its last byte, a scan, or halving the
    files) and read line by line, as alone; the others stay in the joined reads. None where a carriage return is in
    any: the engine then reads every line one by one."""
    if any(b"\r" in t for t in texts):
        return None
    texts, out, reads, mended = list(texts), Parsed(), 0, False
    # NOTE: the usual damage, a last line cut as the rank died, is seen without a read; halving finds the rest
    # (each halving reads its part again: a few damaged files among hundreds cost a few reads, not hundreds)
    cut = {i for i, t in enumerate(texts) if not _closed(t)}
    pending = _runs(0, len(texts), cut)
    while pending:
        lo, hi = pending.pop()
        rows = _whole(texts[lo:hi], lo, base)
        if rows is not None:
            _add(out, rows)
            reads += 1
        elif not mended:
            # NOTE: Python's NaN tokens, the harmless refusal, are looked for only once a read refused (scanning every
            # file up front cost a tenth of a clean group's parse), and then in every file not yet read (a refused read
            # costs as much as a clean one), made JSON; a file that may also hold a blank line is read as alone
            mended = True
            unread = [*pending, (lo, hi)]
            cut |= {i for a, b in unread for i in _mend(texts, a, b)}
            pending = [run for a, b in unread for run in _runs(a, b, cut)]
        elif len(cut) >= _HALVINGS:  # damaged throughout: one line-by-line pass over all is cheaper
            return None
        elif hi - lo > 1:
            mid = (lo + hi) // 2
            pending += [(mid, hi), (lo, mid)]
        else:
            cut.add(lo)
    for i in sorted(cut):
        text = texts[i].decode("utf-8").removesuffix("\n").split("\n")
        got = parse(pl.DataFrame({"line": pl.int_range(1, len(text) + 1, dtype=pl.Int64, eager=True) + i * base,
                                  "text": text}), Context(path=""))
        for table, frame in got.tables.items():
            out.add(table, frame)
        if got.unparsed_lines is not None:
            out.unparsed_lines = (got.unparsed_lines if out.unparsed_lines is None
                                  else pl.concat([out.unparsed_lines, got.unparsed_lines]))
        out.unparsed += got.unparsed
    if cut or reads > 1:
        out.tables = {t: f.sort("line") for t, f in out.tables.items()}
    if out.unparsed_lines is not None:
        out.unparsed_lines = out.unparsed_lines.sort()
    return out


def _runs(lo: int, hi: int, cut: set[int]) -> list[tuple[int, int]]:
    """The runs of files in [lo, hi) that are not cut, last first (the order `pending` pops them)."""
    bounds = [lo - 1, *sorted(i for i in cut if lo <= i < hi), hi]
    return [(a + 1, b) for a, b in zip(bounds, bounds[1:], strict=False) if b > a + 1][::-1]


def _mend(texts: list[bytes], lo: int, hi: int) -> list[int]:
    """Make the NaN / Infinity tokens of texts[lo:hi] JSON (in place); returns those that hold a blank line."""
    blank = []
    for i in range(lo, hi):
        if any(tok in texts[i] for tok in _NONFINITE):
            texts[i] = _finite_bytes(texts[i])
        if _blank_in(texts[i]):
            blank.append(i)
    return blank


def _finite_tokens(objects: pl.DataFrame) -> pl.DataFrame:
    """The lines with Python's NaN / Infinity tokens made JSON (only where a line holds one: the hot path)."""
    if not any(objects["text"].str.contains(tok.decode(), literal=True).any() for tok in _NONFINITE):
        return objects
    return objects.with_columns(pl.col("text").str.replace_all(*_LOSS_NONFINITE)
                                .str.replace_all(*_FIELD_NONFINITE))


def _finite_bytes(text: bytes) -> bytes:
    """A whole file's text with Python's NaN / Infinity tokens made JSON (as `_finite_tokens`)."""
    return _finite_tokens(pl.DataFrame({"text": text.decode("utf-8", "replace").split("\n")}))["text"] \
        .str.join("\n").item().encode()


def _closed(text: bytes) -> bool:
    """The file's last record is whole (it ends with a closing brace, before any final line break)."""
    return text.rstrip(b"\n").endswith(b"}")


def _whole(texts: list[bytes], first: int, base: int) -> pl.DataFrame | None:
    """The records of whole clean files (`first`: the index of the first), or None where the read refuses one."""
    joined = b"".join(t if t.endswith(b"\n") else t + b"\n" for t in texts)
    counts = [t.count(b"\n") + (not t.endswith(b"\n")) for t in texts]
    fast = _read(joined)
    if fast is None:
        return None
    # NOTE: the reader skips blank lines (a writer's stray newline, a record lost but its line break kept): the files
    # that hold one number their records by their other lines, found here, and the group is not read a second time
    kept = {} if fast.height == sum(counts) else _unblank(texts)
    rows_of = [len(kept[i]) if i in kept else n for i, n in enumerate(counts)]
    if sum(rows_of) != fast.height:
        return None
    n = pl.Series(rows_of, dtype=pl.Int64)
    starts = n.cum_sum() - n
    within = pl.int_range(1, fast.height + 1, dtype=pl.Int64, eager=True) - starts.repeat_by(n).explode()
    for i, lines in kept.items():
        within = within.scatter(range(starts[i], starts[i] + len(lines)), lines)
    line = pl.int_range(first, first + len(texts), dtype=pl.Int64, eager=True).repeat_by(n).explode() * base + within
    rows = _records(fast.with_columns(line=line.alias("line")).select("line", *_FIELDS))
    return rows if rows.height == fast.height else None


def _unblank(texts: list[bytes]) -> dict[int, list[int]]:
    """The files that may hold a blank or white line (`_blank_in`): each one's lines that are not, numbered from 1."""
    out = {}
    for i, t in enumerate(texts):
        if _blank_in(t):
            lines = t.removesuffix(b"\n").split(b"\n")
            out[i] = [k for k, line in enumerate(lines, 1) if line.strip(b" \t")]
    return out


def _blank_in(text: bytes) -> bool:
    """Whether a line of the text may be blank or white (JSON's blanks: a record's line begins with its brace)."""
    return text[:1] in (b"\n", b" ", b"\t") or _BLANK_AFTER_FIRST.search(text) is not None


def _add(out: Parsed, rows: pl.DataFrame) -> None:
    """Step records as rank steps, stall records and non-finite losses also as events."""
    stalled = pl.col("stalled_s").is_not_null()
    nonfinite = pl.col("loss_nonfinite").fill_null(False)
    if rows["stalled_s"].null_count() == rows.height and not rows["loss_nonfinite"].any():
        out.add("rank_steps", _rank_steps(rows))
        return
    out.add("rank_steps", _rank_steps(rows.filter(~stalled)))
    marked = rows.filter(stalled | nonfinite)
    ts = _timestamp(pl.col("ts"), marked["ts"]).alias("ts")
    out.add("events", marked.select(
        "line", ts, "host", "rank",
        kind=pl.when(stalled).then(pl.lit("step_stalled")).otherwise(pl.lit("loss_nonfinite")),
        failure_mode=pl.when(stalled).then(pl.lit(None, pl.String)).otherwise(pl.lit("loss_divergence")),
        severity=pl.when(stalled).then(pl.lit("warning")).otherwise(pl.lit("error")),
        text=pl.when(stalled).then(pl.format(
            "rank {} still in step {} after {} s{}", "rank", "step", pl.col("stalled_s").round(1),
            pl.when(pl.col("region").is_not_null()).then(pl.format(" ({})", "region")).otherwise(pl.lit(""))))
        .otherwise(pl.format("rank {}: loss is not finite at step {}", "rank", "step")),
        detail=pl.when(stalled).then(pl.struct("step", "stalled_s", "region").struct.json_encode())
        .otherwise(pl.struct("step").struct.json_encode())))


def _records(decoded: pl.DataFrame) -> pl.DataFrame:
    # NOTE: a rank past 32 bits is no rank: the record is reported, not the batch lost.
    decoded = decoded.with_columns(pl.col("rank").cast(pl.Int32, strict=False))
    return decoded.filter(pl.col("rank").is_not_null() & pl.col("step").is_not_null())


def _rank_steps(rows: pl.DataFrame) -> pl.DataFrame:
    return rows.select("line", _timestamp(pl.col("ts"), rows["ts"]).alias("ts"), "host", "rank", "step",
                       "step_s", "compute_s", "comm_s", "data_s", "tokens", "loss")


def _read(data: bytes) -> pl.DataFrame | None:
    """The NDJSON records, epoch times as numbers where they all are; None where polars refuses a line."""
    for schema in (_EPOCH, _FIELDS):
        try:
            return pl.read_ndjson(io.BytesIO(data), schema=schema)
        except (pl.exceptions.PolarsError, ValueError, RuntimeError):
            continue
    return None


def _decode(objects: pl.DataFrame) -> pl.DataFrame:
    """`line` plus the record's fields; lines that cannot be decoded are left out."""
    # NOTE: polars' NDJSON reader (SIMD, all cores) reads the batch several times faster than decoding it line
    # by line; it refuses what does not fit the schema ("rank": "3"), and the line-by-line paths take over.
    # A fleet's group holds the odd file cut mid-line as its rank died: one such line must not send the whole
    # group to the slow decoders, so the batch is halved around the lines the fast reader refuses.
    done, slow, pending = [], [], [objects] if objects.height else []
    while pending:
        part = pending.pop()
        fast = _read(part["text"].str.join("\n").item().encode())
        if fast is not None and fast.height == part.height:
            done.append(fast.with_columns(part["line"]).select("line", *_FIELDS))
        elif part.height > _SLOW_PART:
            half = part.height // 2
            pending += [part.slice(half), part.slice(0, half)]
        else:
            slow.append(part)
    if not slow:
        return _in_order(done) if done else objects.select("line").with_columns(
            pl.lit(None, t).alias(k) for k, t in _FIELDS.items())
    return _in_order([*done, _decode_slowly(pl.concat(slow))])


def _in_order(parts: list[pl.DataFrame]) -> pl.DataFrame:
    if len(parts) == 1:
        return parts[0]
    if len({p.schema["ts"] for p in parts}) > 1:  # epoch numbers in some parts: as text, which _timestamp reads
        parts = [p.with_columns(pl.col("ts").cast(pl.String)) for p in parts]
    return pl.concat(parts).sort("line")


def _decode_slowly(objects: pl.DataFrame) -> pl.DataFrame:
    """The lines the NDJSON reader refused (a few among many), decoded with the line-by-line paths."""
    try:
        return _unpack(objects, _TYPED)
    except pl.exceptions.PolarsError:
        pass
    # NOTE: rare path. Drop what is not JSON at all (one lenient pass), read the rest with every
    # field as text ("rank": "3" is fine), and halve only around a nested value in a known field.
    valid = objects.filter(pl.col("text").str.json_path_match("$").is_not_null())
    done = [pl.DataFrame(schema={"line": pl.Int64, **_FIELDS})]
    pending = [valid] if valid.height else []
    while pending:
        part = pending.pop()
        try:
            done.append(_unpack(part, _TEXT))
        except pl.exceptions.PolarsError:
            if part.height > 1:
                half = part.height // 2
                pending += [part.slice(half), part.slice(0, half)]
    return pl.concat(done).sort("line")


def _unpack(part: pl.DataFrame, dtype: pl.Struct) -> pl.DataFrame:
    """Decode `part` with `dtype` (raises on a line that does not fit) and cast to the fields' types."""
    frame = part.select("line", pl.col("text").str.json_decode(dtype).alias("_r")).unnest("_r")
    return frame.with_columns([_cast(k, t) for k, t in _FIELDS.items()])


def _cast(name: str, dtype: pl.DataType) -> pl.Expr:
    # NOTE: polars casts no text to a boolean: "true" / "false" (any case) are read, anything else is null
    if dtype == pl.Boolean:
        return pl.col(name).cast(pl.String).str.to_lowercase().replace_strict(
            {"true": True, "false": False}, default=None, return_dtype=pl.Boolean)
    return pl.col(name).cast(dtype, strict=False)


def _timestamp(ts: pl.Expr, values: pl.Series | None = None) -> pl.Expr:
    """Naive UTC from ISO 8601 (with or without an offset) or epoch seconds (`values`: the column, to skip
    the ISO parses when every time is a number, as instrument.py writes them, or to read the usual UTC spelling
    first and try the others only on the values it leaves)."""
    epoch = ts.cast(pl.Float64, strict=False)
    # NOTE: seconds only; a value past year 9999 is not a time this format can mean.
    from_epoch = pl.when(epoch.abs() < 2.5e11).then((epoch * 1e6).round().cast(pl.Int64)).cast(pl.Datetime("us"))
    iso = ts.str.replace(r"^(\d{4}-\d{2}-\d{2}) ", "${1}T").str.replace(r"[Zz]$", "+00:00")
    aware = iso.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f%z", strict=False, time_unit="us").dt.replace_time_zone(None)
    naive = iso.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f", strict=False, time_unit="us")
    general = pl.coalesce(aware, naive, from_epoch)
    if values is None:
        return general
    if values.dtype != pl.String:
        return from_epoch if values.cast(pl.Float64, strict=False).null_count() == values.null_count() else general
    # NOTE: three parses of every value cost a third of a fleet's step-file ingest; most files spell UTC with Z
    # (no cache: a step file's times are all different)
    zulu = values.str.to_datetime("%Y-%m-%dT%H:%M:%S%.fZ", strict=False, time_unit="us", cache=False)
    left = zulu.is_null() & values.is_not_null()
    if not left.any():
        return pl.lit(zulu)
    rest = values.filter(left).to_frame("ts").select(general.alias("ts"))["ts"]
    return pl.lit(zulu.scatter(left.arg_true(), rest))

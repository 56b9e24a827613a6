"""The collector contract: what a collector receives and what it returns.

A collector is one module in this package with:

    NAME: str                 stable source name, stored in every row's `source` column
    PATTERN: str | None       regex (Rust `regex` syntax, which Python's `re` also reads) selecting
                              the lines this collector wants; None means "every line" (structured
                              formats such as JSONL and sacct dumps)
    EXCLUSIVE: bool           True: when sniff() is true this collector alone reads the file
    SNIFF_HINT: tuple[bytes]  optional: lowercase byte strings one of which a head must contain for sniff()
                              to be true (a cheap necessary condition: the engine skips sniff() without one)
    GROUPABLE: bool           optional (structured formats, PATTERN None): parse() reads no `ctx` field, each
                              row depends on its own line only, and unread lines are returned in
                              `Parsed.unparsed_lines` (reported as UNPARSED_WARNING), not as warnings; the
                              engine may then parse many small files of this format in one call
    GROUP_CONTEXT(ctx) -> tuple
                              optional (line-oriented formats): the context fields parse() reads; whole small
                              logs agreeing on them may be parsed in one call (clusterlab.ingest.groups_text),
                              their lines numbered `file index x FILE_LINE_BASE + line`. Such a parse keeps every
                              relation between lines within a file (`file_of_line()`), reports its unread lines
                              in `Parsed.unparsed_lines` and warns only as "line N: ..."
    WARNINGS_PER_FILE: bool   optional, with GROUP_CONTEXT: parse()'s warnings are "line N: ..." and each file
                              gets in a group the ones it gets alone (a cap per file, `file_of_line()`): the
                              engine hands them to their files instead of parsing the files warned about alone
    FILE_HOST_COLUMN: bool    optional, with GROUP_CONTEXT: parsed with other files, the lines carry their
                              file's host as a `file_host` column (the parse reads the host of a line there)
    BLOCK_START: str | None   optional regex for the first line of a multi-line block (a
                              traceback): the engine does not cut a batch inside one that starts
                              in a batch's last 256 lines, it hands the block to the next call whole
    def sniff(head: bytes, path: str) -> bool
                              is this file (first 64 KiB, decompressed) in my format?
    def parse(lines: pl.DataFrame, ctx: Context) -> Parsed
                              `lines` has columns `line` (1-based, int64) and `text` (str): the
                              lines of one batch that matched PATTERN, in file order

The engine streams the file, filters lines with all PATTERNs in one vectorised pass, calls
parse() per batch and writes the rows. A collector never touches DuckDB. Each row carries the
`line` it came from; `ts` is naive UTC (None where the line has no time of its own: the engine
then takes the time of the nearest earlier line that had one). Lines matched by PATTERN that the
collector could not make sense of are counted in `Parsed.unparsed`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

import polars as pl
import re2

from clusterlab.collectors._ascii import ascii_classes
from clusterlab.tables import TABLE_COLUMNS

UTC = ZoneInfo("UTC")

# Files parsed together (clusterlab.ingest.groups) number their lines `file index x FILE_LINE_BASE + line`: a
# collector whose rows depend on the lines before them (a forward fill, a join by process) keeps each file's
# lines to themselves by `line // FILE_LINE_BASE` (always 0 for a file parsed alone).
FILE_LINE_BASE = 1 << 32


def file_of_line() -> pl.Expr:
    """Which file of a group a line came from (0 for a file parsed alone)."""
    return pl.col("line") // FILE_LINE_BASE


# An events frame may carry this boolean column (not stored): the line was printed as its process died (the last
# line of a traceback). Without a stamp of its own it is dated by the next stamped line, the death, not the last one.
AT_EXIT = "at_exit"


@dataclass(frozen=True)
class Context:
    """What the engine knows about a file before reading it."""

    path: str  # display path, for messages only: never opened by a collector
    host: str | None = None  # from the bundle layout, a known node in the path, or an option
    run: str | None = None
    attempt: int | None = None
    year: int = 2026  # for formats that print no year (syslog, glog)
    tz: str = "UTC"  # timezone of formats printed in local time (dmesg -T, syslog)
    # a job output's own processes (torchrun's glog, c10's `[E1101 ...]`, the elastic summary) where they print
    # another zone than the site's: a container in UTC (measured against the file's zoned stamps; None: `tz`)
    proc_tz: str | None = None
    boot_time: dt.datetime | None = None  # naive UTC, for raw dmesg's seconds since boot
    known_hosts: frozenset[str] = frozenset()
    header: str | None = None  # the file's first non-blank line (a structured format's header)
    mtime: dt.datetime | None = None  # naive UTC; set when `year` was taken from it
    # naive: when the evidence beside the file was logged, by its own dated stamps (`ingest.era`); where known,
    # `year` is its year and a yearless time takes the year that puts it nearest
    era: dt.datetime | None = None
    epoch: dt.datetime | None = None  # naive UTC: day 0 of formats that count relative days (fault traces)
    # parsed with files of other years' contexts (a FILE_YEAR_COLUMNS collector in a group): `yearless` reads each
    # line's year, era and write time from its YEAR_COLUMNS, not from `year`, `era` and `mtime`
    year_columns: bool = False

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.tz)


@dataclass
class Parsed:
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    unparsed: int = 0  # lines that matched PATTERN but could not be read
    warnings: list[str] = field(default_factory=list)  # "line N: what", shown to the user
    refuse: str | None = None  # "line N: why": the file must not be stored at all (the user can fix it)
    # a GROUPABLE collector's unread lines (their numbers): the engine counts and reports them per file
    unparsed_lines: pl.Series | None = None

    def add(self, table: str, frame: pl.DataFrame) -> None:
        if frame.height:
            prev = self.tables.get(table)
            self.tables[table] = frame if prev is None else pl.concat([prev, frame], how="diagonal_relaxed")


def sniff_jsonl(head: bytes, is_record: Callable[[dict], bool], lines: int = 20) -> bool:
    """Most of the head's first non-blank lines are JSON objects that `is_record` accepts (the last may be cut off)."""
    seen = [ln for ln in _first_lines(head, lines) if ln.strip()]
    hits = 0
    for i, value in enumerate(_json_values(seen)):
        if hits and 2 * hits >= len(seen):  # decided: more hits cannot undo it (and a sniff runs on every file)
            return True
        if 2 * (hits + len(seen) - i) < len(seen):  # decided: the lines left cannot make a majority
            return False
        hits += isinstance(value, dict) and is_record(value)
    return hits > 0 and 2 * hits >= len(seen)


def _first_lines(head: bytes, n: int) -> list[bytes]:
    """The head's first `n` lines that end in a line break (a head's last line may be cut off)."""
    # NOTE: not head.split(b"\n", n): its last piece copies the rest of the 64 KiB head, on every file
    out, start = [], 0
    while len(out) < n and (end := head.find(b"\n", start)) >= 0:
        out.append(head[start:end])
        start = end + 1
    return out


_DECODER = json.JSONDecoder()
_NOT_JSON = object()


def _json_values(lines: list[bytes]) -> Iterator[object]:
    """What `json.loads` gives for each line (`_NOT_JSON` where it fails), each decoded only when asked for."""
    # NOTE: a line's value decoded from the line as text, without json.loads' per-call detours (encoding
    # detection, two whitespace matches): 40% less for a sniff that runs on every file. The value ends where the
    # line's text ends, or the line would not be JSON alone. Lines that are not UTF-8, start with a BOM or hold
    # a NUL (json.loads detects those encodings) are left to json.loads.
    for ln in lines:
        try:
            text = ln.decode("utf-8")
            if text.startswith("\ufeff") or "\x00" in text:  # json.loads reads NULs as UTF-16 or 32
                raise UnicodeError
        except UnicodeError:
            try:
                yield json.loads(ln)
            except ValueError:
                yield _NOT_JSON
            continue
        body = text.strip(_JSON_SPACE)
        try:
            value, end = _DECODER.raw_decode(body)
        except ValueError:
            yield _NOT_JSON
            continue
        yield value if end == len(body) else _NOT_JSON


_JSON_SPACE = " \t\n\r"  # what json.loads allows around a value


def search(text: str | bytes | Sequence[str], pattern: str) -> bool:
    """Whether `pattern` (Rust regex syntax) matches in `text` (or in any of its lines), in linear time."""
    # NOTE: Python's `re` backtracks: `NVRM: .*NVLink.*error` over a 64 KiB line of `NVRM: ` takes minutes,
    # and a sniff runs on every file. RE2 and Rust's regex engine (polars') never backtrack.
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    rx = _compiled(pattern)
    if rx is not None:
        return any(rx.search(t) for t in ([text] if isinstance(text, str) else text))
    lines = pl.Series([text] if isinstance(text, str) else list(text), dtype=pl.String)
    return bool(lines.str.contains(ascii_classes(pattern)).any())


@functools.cache
def _compiled(pattern: str) -> re2._Regexp | None:
    """`pattern` compiled once by RE2 (None: a syntax it does not take, which polars then runs).

    NOTE: a sniff runs on every file, and a polars call costs 0.13 ms however small its input (a Megatron sniff
    0.24 ms, a GlusterFS one on a kernel journal 0.2 ms, two to four of them a file); RE2, compiled once, a few
    microseconds. Its Perl classes and word boundaries are ASCII, as the prefilter runs them (`ascii_classes`)."""
    try:
        return re2.compile(pattern)
    except re2.error:
        return None


def most_lines_match(head: bytes, pattern: str, first: int = 50) -> bool:
    """Whether most of the head's first non-blank lines (at least three, or all of fewer) match `pattern`: the sniff
    of a log whose every line has one format (a filesystem client's own log)."""
    lines = [ln for ln in head.decode("utf-8", "replace").splitlines()[:first] if ln.strip()]
    rx = _compiled(pattern)
    if rx is not None:
        hits = sum(rx.search(ln) is not None for ln in lines)
    else:
        hits = pl.Series(lines, dtype=pl.String).str.contains(ascii_classes(pattern)).sum() if lines else 0
    return hits >= min(3, len(lines)) and 2 * hits >= len(lines)


def read_line_format(lines: pl.DataFrame, ctx: Context, pattern: str, out: Parsed) -> pl.DataFrame:
    """The lines of a one-format log that `pattern` reads, its named groups as columns (a `msg` group among them)
    and `host` the file's (`file_host` where files are parsed together); the others go to `out` as unread."""
    own = pl.col("file_host") if "file_host" in lines.columns else pl.lit(ctx.host, pl.String)
    frame = lines.select("line", "text", own.alias("host"),
                         pl.col("text").str.extract_groups(pattern).alias("_g")).unnest("_g")
    out.unparsed_lines = frame.filter(pl.col("msg").is_null())["line"]
    out.unparsed = len(out.unparsed_lines)
    return frame.filter(pl.col("msg").is_not_null())

def rows_frame(table: str, rows: list[dict]) -> pl.DataFrame:
    """A frame for `table` from a (short) list of row dicts; unknown keys are an error."""
    schema = TABLE_COLUMNS[table]
    for r in rows:
        extra = set(r) - set(schema)
        if extra:
            raise KeyError(f"{table} has no columns {sorted(extra)}")
    return pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)


def to_utc(ts: dt.datetime, zone: ZoneInfo) -> dt.datetime:
    """Naive UTC from a datetime that is aware, or naive in `zone`."""
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=zone)
    return ts.astimezone(UTC).replace(tzinfo=None)


# ---------------------------------------------------------------- expressions the collectors share


def local_to_utc(ts: pl.Expr, tz: str) -> pl.Expr:
    """Naive UTC from naive local time in `tz` (a time a DST change skipped becomes null)."""
    if tz in ("UTC", "Etc/UTC"):
        return ts
    return (ts.dt.replace_time_zone(tz, ambiguous="earliest", non_existent="null")
            .dt.convert_time_zone("UTC").dt.replace_time_zone(None))


def fraction(digits: pl.Expr) -> pl.Expr:
    """The fraction of a second printed as `digits` (any number of them; null: none) as a duration."""
    micros = digits.str.slice(0, 6).str.pad_end(6, "0").cast(pl.Int64, strict=False).fill_null(0)
    return pl.duration(microseconds=micros)


def offset_to_utc(local: pl.Expr, off: pl.Expr, tz: str) -> pl.Expr:
    """Naive UTC from a time and its printed offset (`Z`, `+hh:mm`, `+hhmm`); no offset: local time in `tz`."""
    off = off.str.replace(":", "")
    sign = pl.when(off.str.starts_with("-")).then(-1).otherwise(1)
    minutes = (off.str.slice(1, 2).cast(pl.Int64, strict=False) * 60
               + off.str.slice(3, 2).cast(pl.Int64, strict=False)).fill_null(0)
    return pl.when(off.is_null()).then(local_to_utc(local, tz)).otherwise(local - pl.duration(minutes=sign * minutes))


def syslog_time(stamp: pl.Expr, ctx: Context) -> pl.Expr:
    """Naive local time from a syslog `Nov 25 10:00:01` (no year: the context's, `yearless`)."""
    text = pl.concat_str([year_of(ctx), stamp.str.replace_all(" +", " ")], separator=" ")
    return yearless(text.str.strptime(pl.Datetime("us"), "%Y %b %d %H:%M:%S", strict=False), ctx)


# a file's `year`, `era` and the day after its write day (`yearless`), as columns of its lines (`year_columns`)
YEAR_COLUMNS = ("_year", "_era", "_late")


def year_of(ctx: Context) -> pl.Expr:
    """The year a yearless time is first read in, as text: the context's, or each line's file's."""
    return pl.col("_year").cast(pl.String) if ctx.year_columns else pl.lit(str(ctx.year))


def year_rows(ctxs: Sequence[Context]) -> pl.DataFrame:
    """YEAR_COLUMNS of each context (`_file`: its place), for its file's lines in a group."""
    return pl.DataFrame(
        {"_file": range(len(ctxs)), "_year": [c.year for c in ctxs], "_era": [c.era for c in ctxs],
         "_late": [None if c.mtime is None else _late(c.mtime) for c in ctxs]},
        schema={"_file": pl.Int64, "_year": pl.Int32, "_era": pl.Datetime("us"), "_late": pl.Datetime("us")})


def _late(mtime: dt.datetime) -> dt.datetime:
    return dt.datetime.combine(mtime.date(), dt.time()) + dt.timedelta(days=3)


def yearless(ts: pl.Expr, ctx: Context) -> pl.Expr:
    """A time printed without its year, given `ctx.year`.

    Where the evidence beside the file dates itself (`ctx.era`), the year is the one that puts the time nearest
    that era (a January line of a campaign logged across New Year). Where the year came from the file's write
    (`ctx.mtime`): a line is not newer than its file, so one dated past it is of the year before (December lines
    in a file written in January); not so where the evidence's own dates run past the write (a bundle replayed
    or generated with its own dates).

    Only such times are moved: a line that prints its year keeps it, even dated after the file's write (a clock
    ahead, a copy whose time was reset). Judged against the day after the file's write day (three days past its
    start): the same for every file of that day, which is what a group of files parsed together shares
    (`year_context`), or each line's file's where they come as columns (`year_columns`)."""
    half = dt.timedelta(days=183)
    if ctx.year_columns:  # the same, each line by its file's (a null era or write time: that rule does not apply)
        era, late = pl.col("_era"), pl.col("_late")
        ts = (pl.when(ts > era + half).then(ts.dt.offset_by("-1y"))
              .when(ts < era - half).then(ts.dt.offset_by("1y")).otherwise(ts))
        past = late.is_not_null() & ~(era > late).fill_null(False) & (ts > late)
        return pl.when(past).then(ts.dt.offset_by("-1y")).otherwise(ts)
    if ctx.era is not None:
        ts = (pl.when(ts > ctx.era + half).then(ts.dt.offset_by("-1y"))
              .when(ts < ctx.era - half).then(ts.dt.offset_by("1y")).otherwise(ts))
    if ctx.mtime is None:
        return ts
    late = _late(ctx.mtime)
    if ctx.era is not None and ctx.era > late:
        return ts
    return pl.when(ts > late).then(ts.dt.offset_by("-1y")).otherwise(ts)


def year_context(ctx: Context) -> tuple:
    """What `yearless` reads of the context (part of a GROUP_CONTEXT of a collector whose format has no year)."""
    return ctx.year, None if ctx.mtime is None else ctx.mtime.date(), ctx.era


def json_detail(fields: Mapping[str, pl.Expr] | Sequence[str]) -> pl.Expr:
    """A JSON object of the non-null fields (name -> expression, or column names); null when all are."""
    exprs = dict(fields) if isinstance(fields, Mapping) else {c: pl.col(c) for c in fields}
    # Each member is encoded (and escaped) by polars on its own; null members are left out (a NaN is
    # not null: it stays, as JSON's null). No regex runs over the encoded text.
    parts = [
        pl.when(e.is_not_null())
        .then(pl.struct(e.alias(k)).struct.json_encode().str.strip_prefix("{").str.strip_suffix("}"))
        for k, e in exprs.items()
    ]
    inner = pl.concat_str(parts, separator=",", ignore_nulls=True)
    return pl.when(inner.str.len_bytes() > 0).then(pl.concat_str([pl.lit("{"), inner, pl.lit("}")]))


def extract_all(frame: pl.DataFrame, regexes: Sequence[str], col: str = "text") -> pl.DataFrame:
    """`frame` plus a column for every named group of `regexes`, searched in `col`."""
    for rx in regexes:
        frame = frame.with_columns(pl.col(col).str.extract_groups(rx).alias("_g")).unnest("_g")
    return frame


def classify(frame: pl.DataFrame, rules: Sequence, col: str = "text", index: str = "_rule") -> pl.DataFrame:
    """`frame` with the index (in `index`) and fields of the first rule whose `regex` matches `col`."""
    # `rules`: dataclasses with a `regex` field; their other fields become (text) columns.
    names = [f.name for f in dataclasses.fields(rules[0]) if f.name != "regex"]
    table = pl.DataFrame({
        index: pl.Series(range(len(rules)), dtype=pl.Int32),
        **{n: pl.Series([getattr(r, n) for r in rules], dtype=pl.String) for n in names},
    })
    first = pl.min_horizontal([
        pl.when(pl.col(col).str.contains(r.regex)).then(pl.lit(i, pl.Int32)) for i, r in enumerate(rules)
    ]) if frame.height else pl.lit(None, pl.Int32)
    return frame.with_columns(first.alias(index)).join(table, on=index, how="left")


def first_kind(text: pl.Expr, kinds: Sequence[tuple[str, str, str | None, str]], kind: pl.Expr | None = None,
               mode: pl.Expr | None = None, severity: pl.Expr | None = None) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """Kind, failure mode and severity of the first `(kind, regex, mode, severity)` whose regex matches `text`."""
    # Where none matches: the given defaults (null where not given).
    none = pl.lit(None, pl.String)
    kind, mode, severity = (none if e is None else e for e in (kind, mode, severity))
    for k, rx, m, sev in reversed(kinds):
        hit = text.str.contains(rx)
        kind = pl.when(hit).then(pl.lit(k)).otherwise(kind)
        mode = pl.when(hit).then(pl.lit(m, pl.String)).otherwise(mode)
        severity = pl.when(hit).then(pl.lit(sev)).otherwise(severity)
    return kind, mode, severity


def cuda_mode(text: pl.Expr) -> pl.Expr:
    """The failure mode a CUDA error string names: OOM, ECC, NVLink, a lost GPU, else application error."""
    return (
        # a CUDA library that cannot allocate its workspace (cuBLAS, cuDNN: '..._STATUS_ALLOC_FAILED'): out of memory
        pl.when(text.str.contains(r"(?i)out of memory|_STATUS_ALLOC_FAILED")).then(pl.lit("cuda_oom"))
        .when(text.str.contains(r"(?i)ECC error")).then(pl.lit("gpu_memory_ecc"))
        .when(text.str.contains(r"(?i)NVLink")).then(pl.lit("nvlink_error"))
        # NOTE: cudaErrorDevicesUnavailable ("CUDA-capable device(s) is/are busy or unavailable"): a GPU the driver
        # holds (a reset pending, a process wedged on it), as the other errors of a GPU the job cannot use
        # (CUDA 9 and before worded error 46 'all CUDA-capable devices are busy or unavailable')
        .when(text.str.contains(r"(?i)unknown error|GPU is lost|no CUDA-capable device|(?:device\(s\) is/are"
                                r"|devices are) busy or unavailable")).then(pl.lit("gpu_hw_other"))
        .otherwise(pl.lit("cuda_error"))
    )

"""Helpers the step-log collectors (megatron, deepspeed, torchtitan, hf_trainer) share.

Launcher prefixes and local times of the lines, numbers from regex groups, step rows merged per
step and split at restarts, NaN flags and events, checkpoint operations and their pairing, facts,
and the `Parsed` each collector returns. Every frame here has the columns `prepare()` gives.

Every relation between lines (a step's repeats, a segment, an operation's lines, the loss before) stays within
one file (`file_of_line`): many small logs may be parsed as one batch (clusterlab.ingest.groups_text).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import polars as pl

from clusterlab.collectors._base import TABLE_COLUMNS, Context, Parsed, file_of_line, local_to_utc

ANSI = r"\x1b\[[0-9;]*m"
# the prefix Ray puts before each line of an actor's or task's output it forwards to the driver:
# `(RayTrainWorker pid=1234, ip=10.0.0.1) `, `(TorchTrainer pid=7) `, SkyPilot's `(worker1, rank=1, pid=2, ip=...) `
RAY_ACTOR = r"\([\w.-]+,? (?:rank=\d+, )?pid=\d+(?:, ip=[\w.:]+)?\) "
# pdsh/deepspeed `host: `, then torchrun's `[rank3]:` / `[default3]:` or srun --label's `3: `.
_LAUNCHER = (r"^(?:(?P<h>[A-Za-z][\w.-]*): +)?(?:\([\w.-]+,? (?:rank=\d+, )?pid=\d+(?:, ip=(?P<ip>[\w.:]+))?\) )?"
             r"(?:\[(?:rank|default)(?P<r1>\d+)\]: ?|(?P<r2>\d+): +)?")
# NOTE: `{:.6E}` prints a non-finite value in capitals (`lm loss: INF`), `{:.3f}` in lower case.
NUM = r"(-?(?:\d[\d,]*(?:\.\d*)?(?:[eE][-+]?\d+)?|(?i:nan|inf)))"
TS_FORMAT = "%Y-%m-%d %H:%M:%S%.f"


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802  (a collector's contract names are capitals)
    """What the step-log collectors' parse reads of the context (`prepare`, `local_time`)."""
    return (ctx.tz, ctx.known_hosts)


def prepare(lines: pl.DataFrame, ctx: Context, ts: str | None = None) -> pl.DataFrame:
    """`lines` plus `msg` (colour codes removed), the launcher prefix's `rank` / `host`, and `ts` (`ts` group 1)."""
    df = lines.with_columns(msg=pl.col("text").str.replace_all(ANSI, ""))
    pre = pl.col("msg").str.extract_groups(_LAUNCHER)
    host = pre.struct.field("h")
    # NOTE: a `word: ` prefix is a host only when the inventory knows that host ("WARNING: ...").
    known = pl.when(host.is_in(sorted(ctx.known_hosts))).then(host) if ctx.known_hosts else pl.lit(None, pl.String)
    df = df.with_columns(
        rank=pl.coalesce(pre.struct.field("r1"), pre.struct.field("r2")).cast(pl.Int32, strict=False),
        # NOTE: Ray's prefix names the worker's node by its address (`ingest.host_names` names the host it is)
        host=pl.coalesce(known, pre.struct.field("ip")),
    )
    # `ts`: a regex whose first group is a `TS_FORMAT` time in the node's local time.
    return df if ts is None else df.with_columns(ts=local_time(pl.col("msg").str.extract(ts, 1), TS_FORMAT, ctx))


def local_time(raw: pl.Expr, fmt: str, ctx: Context) -> pl.Expr:
    """Naive UTC from a timestamp string printed in the node's local time (`ctx.tz`)."""
    t = raw.str.replace(",", ".", literal=True).str.to_datetime(fmt, strict=False, time_unit="us")
    return local_to_utc(t, ctx.tz)


def num(pattern: str, group: int = 1, col: str = "msg") -> pl.Expr:
    """The float a regex group captures (thousands separators dropped; nan/inf kept)."""
    return pl.col(col).str.extract(pattern, group).str.replace_all(",", "").cast(pl.Float64, strict=False)


def integer(pattern: str, group: int = 1, col: str = "msg") -> pl.Expr:
    """The integer a regex group captures."""
    return pl.col(col).str.extract(pattern, group).str.replace_all(",", "").cast(pl.Int64, strict=False)


def seconds(span: pl.Expr) -> pl.Expr:
    """A duration in seconds (float)."""
    # NOTE: times the reciprocal, not divided: polars divides a column of two or more values by a number that way
    # and one value truly, so `/ 1e6` could differ in the last bit between a file parsed alone and in a group
    return span.dt.total_microseconds() * (1 / 1e6)


def conform(frame: pl.DataFrame, table: str) -> pl.DataFrame:
    """`frame` reduced to the columns of `table`, with the table's types."""
    schema = TABLE_COLUMNS[table]
    return frame.select([pl.col(c).cast(t, strict=False) for c, t in schema.items() if c in frame.columns])


def merge_repeats(steps: pl.DataFrame) -> pl.DataFrame:
    """One row per run of consecutive rows with the same step in one segment."""
    # Ranks repeating a line, or two line kinds reporting one step: keep the run's first line and
    # each column's first non-null value.
    # NOTE: without segments, a file is one (`segment` numbers them apart per file too)
    steps = steps if "_seg" in steps.columns else steps.with_columns(_seg=file_of_line())
    change = (pl.col("step") != pl.col("step").shift(1)) | (pl.col("_seg") != pl.col("_seg").shift(1))
    run = change.fill_null(True).cum_sum().alias("_run")
    cols = [c for c in steps.columns if c != "line"]
    return (steps.sort("line").with_columns(run).group_by("_run", maintain_order=True)
            .agg(pl.col("line").first(), *[pl.col(c).drop_nulls().first() for c in cols]).drop("_run"))


def segment(frame: pl.DataFrame, breaks: pl.Series) -> pl.DataFrame:
    """`frame` with `_seg`: how many restart markers (line numbers in `breaks`) precede each row, plus its file's
    index (files parsed together: each file's first segment follows the last of the file before it)."""
    marks = breaks.cast(pl.Int64).unique().sort()
    seg = marks.search_sorted(frame["line"], side="left")
    return frame.with_columns(_seg=pl.lit(seg).cast(pl.Int64) + file_of_line())


def interval_step_s(steps: pl.DataFrame, checkpoints: pl.DataFrame | None = None) -> pl.DataFrame:
    """Fill a missing `step_s` from the time between consecutive step rows of one segment, less the saves the same log
    timed between them (`checkpoints`: its checkpoint rows): a record printed every N steps whose interval held a save
    is N steps and the save, not N slow steps (DeepSpeed's `step=` every `steps_per_print`)."""
    prev_ts, prev_step = pl.col("ts").shift(1).over("_seg"), pl.col("step").shift(1).over("_seg")
    span = seconds(pl.col("ts") - prev_ts)
    if checkpoints is not None and checkpoints.height and steps.height:
        # each save is charged to the first step row after it: the interval it fell in
        p = (checkpoints.filter(pl.col("action") == "save")
             .select(pl.col("line").cast(pl.Int64), pl.col("duration_s").cast(pl.Float64).alias("seconds"))
             .drop_nulls().filter(pl.col("seconds") > 0).sort("line"))
        owner = steps.select(pl.col("line").cast(pl.Int64).alias("_owner")).unique().sort("_owner")
        p = (p.join_asof(owner, left_on="line", right_on="_owner", strategy="forward").drop_nulls("_owner")
             .group_by("_owner").agg(_pause=pl.col("seconds").sum()))
        steps = steps.join(p, left_on=pl.col("line").cast(pl.Int64), right_on="_owner", how="left")
        span = span - pl.col("_pause").fill_null(0.0)
    derived = pl.when((pl.col("step") > prev_step) & (span >= 0)).then(span / (pl.col("step") - prev_step))
    return steps.with_columns(step_s=pl.coalesce(pl.col("step_s"), derived)).drop("_pause", strict=False)


def flag_nonfinite(steps: pl.DataFrame) -> pl.DataFrame:
    """Store a NaN/inf loss or grad norm as null and count (at least) one NaN iteration in `nan`.

    A non-finite grad norm beside a finite (or unprinted) loss is marked for `loss_events` in `_kind` /
    `_why`: the step's update was already poisoned (bf16 has no loss scaler to skip it), the loss follows.
    So is a loss that drops to exactly 0 from a real one (`loss_zero`).
    """
    # The event keeps the line's text; NaN itself never reaches the tables.
    nan = pl.col("nan") if "nan" in steps.columns else pl.lit(None, pl.Int32)
    bad = pl.col("loss").is_finite().not_().fill_null(False)
    bad_grad = pl.col("grad_norm").is_finite().not_().fill_null(False) & ~bad
    # NOTE: a loss printed as exactly 0 right after a real one (>= 0.1) is no fit: a poisoned model (NaN logits
    # masked away) or every step skipped by an fp16 scaler at its floor reports 0.0; a converging loss gets there
    # through 0.01s. Not beside a real gradient (> 0): an RL objective (GRPO's) is 0 on average and still trains.
    # the last loss printed before in the file (a progress bar's row has none)
    prev = pl.col("loss").shift(1).forward_fill().over(file_of_line())
    trains = (pl.col("grad_norm").is_finite() & (pl.col("grad_norm") > 0)).fill_null(False)
    zero = ((pl.col("loss") == 0) & (prev >= 0.1)).fill_null(False) & ~bad & ~bad_grad & ~trains
    kind = pl.col("_kind") if "_kind" in steps.columns else pl.lit(None, pl.String)
    why = pl.col("_why") if "_why" in steps.columns else pl.lit(None, pl.String)
    return steps.with_columns(
        nan=pl.when(bad).then(pl.max_horizontal(nan.fill_null(0), pl.lit(1))).otherwise(nan).cast(pl.Int32),
        loss=pl.when(bad).then(None).otherwise(pl.col("loss")),
        grad_norm=pl.when(pl.col("grad_norm").is_finite()).then(pl.col("grad_norm")),
        _kind=pl.when(bad_grad).then(pl.lit("grad_norm_nonfinite")).when(zero).then(pl.lit("loss_zero"))
        .otherwise(kind),
        _why=pl.concat_str([why, pl.when(bad_grad).then(pl.format("grad norm {}", pl.col("grad_norm"))),
                            pl.when(zero).then(pl.format("loss 0 after {}", prev))],
                           separator="; ", ignore_nulls=True).replace("", None),
    )


def loss_events(steps: pl.DataFrame) -> pl.DataFrame:
    """A loss-divergence event for each step row that counts NaN iterations or that `_kind` marks.

    `loss_nan` where NaN iterations are counted (see `flag_nonfinite`), else the row's `_kind`
    (`grad_norm_nonfinite`, or a collector's own: Megatron's skipped iterations at the loss-scale floor).
    """
    kind = pl.col("_kind") if "_kind" in steps.columns else pl.lit(None, pl.String)
    why = pl.col("_why") if "_why" in steps.columns else pl.lit(None, pl.String)
    nan = pl.col("nan").fill_null(0) > 0
    bad = steps.with_columns(_k=kind, _w=why).filter(nan | pl.col("_k").is_not_null())
    plain = pl.struct(pl.col("step"), pl.col("nan").alias("nan_iterations")).struct.json_encode()
    # NOTE: the reason is added only where there is one: a plain NaN loss keeps its detail as before.
    why_detail = pl.struct(pl.col("step"), pl.col("nan").alias("nan_iterations"), pl.col("_w").alias("why"))
    return bad.select(
        "line", "ts", "host", "rank",
        pl.when(nan).then(pl.lit("loss_nan")).otherwise(pl.col("_k")).alias("kind"),
        pl.lit("loss_divergence").alias("failure_mode"), pl.lit("error").alias("severity"),
        pl.col("msg").str.strip_chars().alias("text"),
        pl.when(pl.col("_w").is_null()).then(plain).otherwise(why_detail.struct.json_encode()).alias("detail"),
    )


def any_of(patterns: Iterable[str]) -> str:
    """A regex that matches (somewhere) where any of `patterns` does."""
    return "|".join(f"(?:{p})" for p in dict.fromkeys(patterns))


@dataclass(frozen=True)
class Op:
    """The lines of one kind of checkpoint message: `pattern` (and `where`, where given) selects them; `cols`: any
    of step, path, duration_s, ok (null where not given)."""

    pattern: str
    action: str | pl.Expr
    phase: str
    where: pl.Expr | None = None
    cols: dict[str, pl.Expr] = field(default_factory=dict)


def op(pattern: str, action: str | pl.Expr, phase: str, where: pl.Expr | None = None, **cols: pl.Expr) -> Op:
    return Op(pattern, action, phase, where, cols)


_OP_COLS = {"step": pl.Int64, "path": pl.String, "duration_s": pl.Float64, "ok": pl.Boolean}


def checkpoint_ops(df: pl.DataFrame, ops: Sequence[Op]) -> pl.DataFrame:
    """The lines matching each of `ops` as checkpoint operation lines, in the form `checkpoint_rows` takes, in line
    order (a line that several match: a row for each, in the order of `ops`)."""
    # NOTE: one regex pass over the batch for all kinds (a filter per kind cost a pass each), the rest on the few
    # lines it leaves
    hits = [pl.col("msg").str.contains(o.pattern) for o in ops]
    hits = [h if o.where is None else h & o.where.fill_null(False) for h, o in zip(hits, ops, strict=True)]
    which = pl.concat_list([pl.when(h).then(pl.lit(i, pl.Int32)) for i, h in enumerate(hits)]).list.drop_nulls()
    got = (df.filter(pl.col("msg").str.contains(any_of(o.pattern for o in ops))).with_columns(_op=which)
           .explode("_op").filter(pl.col("_op").is_not_null()).sort("line", maintain_order=True))

    def pick(exprs: list[pl.Expr], dtype: pl.DataType) -> pl.Expr:
        chain = pl.when(pl.col("_op") == 0).then(exprs[0])
        for i, e in enumerate(exprs[1:], 1):
            chain = chain.when(pl.col("_op") == i).then(e)
        return chain.otherwise(pl.lit(None, dtype))

    return got.select(
        "line", "ts", "host",
        pick([pl.lit(o.action) if isinstance(o.action, str) else o.action for o in ops], pl.String).alias("action"),
        pick([pl.lit(o.phase) for o in ops], pl.String).alias("phase"),
        *[pick([o.cols.get(k, pl.lit(None, t)) for o in ops], t).alias(k) for k, t in _OP_COLS.items()])


def checkpoint_rows(ops: pl.DataFrame, missing_ok: bool | None) -> pl.DataFrame:
    """One checkpoint row per save/load operation, at its first line (see the comment below)."""
    # `ops`: `line`, `ts`, `host`, `action` (save | load), `phase` (start: a new operation; info:
    # part of the open one unless its step differs; finish; timer), `step`, `path`, `duration_s`
    # (printed by a finish or timer line) and `ok` (of a finish line). An operation that has no
    # finish line gets `ok = missing_ok`: False where the format always prints one.
    ops = ops.sort("line").with_columns(_f=file_of_line())  # an operation never spans two files
    # NOTE: nor two launches: a load starts one (an in-place restart, torchrun's next worker group, appends to the
    # same log), so a save the crash cut short never takes the next launch's save of the same step as its end
    ops = ops.with_columns(_seg=((pl.col("action") == "load") & (pl.col("phase") == "start"))
                           .cast(pl.Int64).cum_sum().over("_f"))
    prev_phase = pl.col("phase").shift(1).over("_f", "_seg", "action")
    prev_step = pl.col("step").shift(1).over("_f", "_seg", "action")
    closed = prev_phase.is_in(["finish", "timer"])
    opens = pl.col("phase").is_in(["start", "info"]) & (
        prev_phase.is_null() | prev_step.ne_missing(pl.col("step"))
        | (closed & ((pl.col("phase") == "start") | pl.col("step").is_null())))
    # A timer belongs to the operation before it, unless that one already had its timer (a
    # timer of a load that found no checkpoint): then it stands alone and is dropped.
    opens = opens | ((pl.col("phase") == "timer") & (prev_phase.is_null() | (prev_phase == "timer")))
    # A finish line naming another step than the closed operation before it is an operation of its own (NeMo's
    # one-line save report, with no start line before it)
    opens = opens | ((pl.col("phase") == "finish") & (prev_phase.is_null() | (closed & prev_step.is_not_null()
                                                                               & pl.col("step").is_not_null()
                                                                               & (prev_step != pl.col("step")))))
    ops = ops.with_columns(_op=opens.cast(pl.Int64).cum_sum().over("_f", "_seg", "action"))
    phase = pl.col("phase")
    groups = ops.group_by("_f", "_seg", "action", "_op", maintain_order=True).agg(
        pl.col("line").first(), pl.col("ts").drop_nulls().first(), pl.col("host").drop_nulls().first(),
        pl.col("step").drop_nulls().first(), pl.col("path").drop_nulls().first(),
        pl.col("ts").filter(phase.is_in(["start", "info"])).drop_nulls().first().alias("_t0"),
        # NOTE: a save every rank commits ends at the latest commit, not at the line printed last: the ranks of
        # several hosts interleave, and a host whose clock runs behind prints its commit last with an early stamp
        pl.col("ts").filter(phase == "finish").max().alias("_t1"),
        pl.col("duration_s").filter(phase == "timer").max().alias("_timer"),
        pl.col("duration_s").filter(phase == "finish").drop_nulls().first().alias("_printed"),
        (phase == "finish").any().alias("_done"), pl.col("ok").filter(phase == "finish").first().alias("_ok"),
        (phase != "timer").any().alias("_real"),
    )
    span = seconds(pl.col("_t1") - pl.col("_t0"))
    return groups.filter("_real").with_columns(
        duration_s=pl.coalesce("_timer", "_printed", pl.when(span >= 0).then(span)),
        ok=pl.when("_done").then("_ok").otherwise(pl.lit(missing_ok, pl.Boolean)),
    ).sort("line")


FactSpec = tuple[str, dict[str, int]] | tuple[str, dict[str, int], pl.Expr]


def facts_from(df: pl.DataFrame, specs: Sequence[FactSpec]) -> pl.DataFrame:
    """Facts `key = group` for each line matching a spec's pattern (and its `within` mask, where given): a spec is
    `(pattern, {key: regex group}[, within])`; thousands separators dropped, facts without a value left out."""
    # NOTE: one regex pass over the batch for all specs (a filter per key cost a pass each), the rest on the few
    # lines it leaves
    def value(spec: FactSpec, group: int) -> pl.Expr:
        got = pl.col("msg").str.extract(spec[0], group).str.replace_all(",", "")
        return got if len(spec) == 2 else pl.when(spec[2]).then(got)

    hit = df.filter(pl.col("msg").str.contains(any_of(s[0] for s in specs)))
    kv = pl.concat_list([pl.struct(pl.lit(k).alias("key"), value(s, g).alias("value"))
                         for s in specs for k, g in s[1].items()])
    return (hit.select("line", "ts", "host", kv.alias("_kv")).explode("_kv").unnest("_kv")
            .filter(pl.col("value").is_not_null()))


def unused_lines(lines: pl.DataFrame, *frames: pl.DataFrame) -> pl.Series:
    """The numbers of the `lines` none of the frames drew on."""
    used = [f.select(pl.col("line").cast(pl.Int64)) for f in frames if f.height]
    if not used:
        return lines["line"].cast(pl.Int64)
    return lines.select(pl.col("line").cast(pl.Int64)).join(pl.concat(used), on="line", how="anti")["line"]


def step_result(lines: pl.DataFrame, used: list[pl.DataFrame], **tables: pl.DataFrame) -> Parsed:
    """`Parsed` with each of `tables` conformed, and the matched lines none of `used` drew on as unparsed."""
    out = Parsed()
    for table, frame in tables.items():
        out.add(table, conform(frame, table))
    # by number, not only counted: files parsed together get their own counts (clusterlab.ingest.groups_text)
    out.unparsed_lines = unused_lines(lines, *used).sort()
    out.unparsed = len(out.unparsed_lines)
    return out

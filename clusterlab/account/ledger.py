"""The GPU-time ledger: every GPU-second of a run, from first start to last end, in one category.

Per attempt (its span: the scheduler's record where there is one, see `clusterlab.diagnose.timeline`) the
timeline is contiguous: `startup` (start → first step begins), one interval per record of the
merged step timeline (between consecutive step ends), then the tail (last step end → attempt end: a save
in it is `checkpoint`, the rest `hang`), then `restart` (attempt end → next start). A step
interval is `productive` up to the run's baseline step time (all of it where its excess is within the run's
step-time noise); the excess goes to `checkpoint` when a save ran in it, then `data_stall`, then `straggler` when
one host was slow, else `slowdown`. Steps begun after the root event of the attempt's end are no steps: their time
is `hang`.
Steps the next attempt threw away (after the checkpoint it resumed from) are `recompute`, all of their time
but a completed save's: what slowed them is no loss of its own, the work was lost (`thrown_is_recompute`).
Categories never overlap and are never clamped silently: a timeline that would make one negative raises
`LedgerError`, which attribution turns into a flagged ledger (`flagged`) with a note saying what disagreed.
"""

from __future__ import annotations

import polars as pl

from clusterlab.account import transport_lag

CATEGORIES = ["productive", "straggler", "slowdown", "checkpoint", "data_stall", "recompute", "hang",
              "restart", "startup", "idle"]
LOST = [c for c in CATEGORIES if c != "productive"]
TOLERANCE = 1e-6
# How late a record may be and still be the step under way when a failure came, as a share of its step time.
DUE_SLACK = 0.05
# How long after a dead peer its partners' network errors can come (`transport_lag`: 34 s at the recent NCCL
# releases' default): a root seen up to this long after the next record was due stopped the job before that record
TRANSPORT_TIMEOUT_S = transport_lag.LONGEST_S


class LedgerError(ValueError):
    """The evidence gives a timeline whose categories would overlap or go negative."""


def _secs(expr: pl.Expr) -> pl.Expr:
    return expr.dt.total_microseconds().cast(pl.Float64) / 1e6


def timeline(steps: pl.DataFrame, attempts: pl.DataFrame) -> pl.DataFrame:
    """Step intervals per attempt: `attempt, step, n, start, end, interval_s, step_s, data_s`.

    `steps` has one record per step (`attempt, step, ts, step_s, data_s`: the merged timeline of
    `clusterlab.diagnose.timeline.merge`); a record may cover several steps (Megatron logs every N iterations),
    which `n` counts. `attempts` has each attempt's span (`start_ts, end_ts`) and, where known, the step
    its checkpoint load resumed from (`resume_step`).

    Records are ordered by step number, not by time: clocks of different hosts disagree by seconds, and
    a step's identity is its number. A record's end never precedes the previous record's end (a clock a
    little behind gives a zero interval, never a negative one), and ends lie inside the attempt's span
    (the scheduler's record, which evidence from a node's clock may overrun by a few seconds)."""
    span = attempts.select(pl.col("attempt").cast(pl.Int32), "start_ts", "end_ts",
                           resume=(pl.col("resume_step") if "resume_step" in attempts.columns
                                   else pl.lit(None, pl.Int64)).fill_null(0))
    s = (steps.filter(pl.col("ts").is_not_null()).with_columns(pl.col("attempt").cast(pl.Int32))
         .sort("attempt", "ts")
         .with_columns(step=pl.coalesce("step", pl.int_range(1, pl.len() + 1).over("attempt").cast(pl.Int64)))
         .unique(["attempt", "step"], keep="last").sort("attempt", "step"))
    s = s.join(span, on="attempt").with_columns(
        ts=pl.col("ts").cum_max().over("attempt").clip(pl.col("start_ts"), pl.col("end_ts")))
    gap = pl.col("step") - pl.col("step").shift(1).over("attempt")
    # The first record covers the steps since the resumed checkpoint (since step 0 for a fresh start)
    # when that is no more than the longest gap between records; else the attempt's typical gap.
    typical = gap.median().over("attempt").fill_null(1)
    since = pl.col("step") - pl.col("resume")
    first_n = pl.when((since >= 1) & (since <= gap.max().over("attempt").fill_null(since))).then(since).otherwise(
        typical)
    s = s.with_columns(n=pl.coalesce(gap, first_n).clip(lower_bound=1).cast(pl.Int64))
    prev_end = pl.col("ts").shift(1).over("attempt")
    # A log that prints no step time (torchtitan prints throughput only) dates its first step's start by the
    # attempt's typical time per step between records: else its first record's steps would count as startup.
    # NOTE: typical per step, not per record: per-rank timings of a slow stretch (a record a step) beside a log
    # line every ten steps would otherwise set the typical pace to the slow stretch's
    s = s.join(_typical_step_s(s.with_columns(prev_end=prev_end)), on="attempt", how="left", maintain_order="left")
    first_guess = pl.col("ts") - pl.duration(microseconds=(pl.coalesce("step_s", "typical_step_s").fill_null(0)
                                                           * pl.col("n") * 1e6).cast(pl.Int64))
    start = pl.coalesce(prev_end, pl.max_horizontal(first_guess, pl.col("start_ts")))
    own = pl.col("stamp_err_s").fill_null(0.0) if "stamp_err_s" in s.columns else pl.lit(0.0)
    err = own + own.shift(1).over("attempt").fill_null(0.0)
    return s.with_columns(start=start, err_s=err).with_columns(interval_s=_secs(pl.col("ts") - pl.col("start"))).rename(
        {"ts": "end"}).select("attempt", "step", "n", "start", "end", "interval_s", "step_s", "data_s", "err_s")


def _typical_step_s(s: pl.DataFrame) -> pl.DataFrame:
    """Per attempt, the median time per step between consecutive records (`ts`, `prev_end`, `n`), each record
    weighted by the steps it covers: `attempt, typical_step_s`."""
    per = (s.select("attempt", "n", per=_secs(pl.col("ts") - pl.col("prev_end")) / pl.col("n"))
           .filter(pl.col("per").is_not_null()).sort("attempt", "per")
           .with_columns(cum=pl.col("n").cum_sum().over("attempt"), half=pl.col("n").sum().over("attempt") / 2))
    return per.filter(pl.col("cum") >= pl.col("half")).group_by("attempt").agg(typical_step_s=pl.col("per").first())


def with_unlogged_steps(tl: pl.DataFrame, roots: pl.DataFrame, baseline_s: float,
                        saves: pl.DataFrame | None = None) -> pl.DataFrame:
    """`tl` with one record per attempt for the whole steps that ran after its last step record and before its
    failure (`roots`: `attempt, root_ts`, the root event of the incident that ended it).

    A log that prints every N steps is silent for up to N - 1 steps that did run: a fault 30 s after the last
    record of a 4 s step stopped a job that had trained 7 more steps. Without this, those steps were `hang`.
    Only whole steps count (a step the fault cut short did no work), at most N - 1 of them (the Nth would have
    printed a record), at the baseline speed; a root event before the last record, or after the next record was
    due, adds nothing. A save that began after the last record (`saves`: `attempt, ts, duration_s`, its start and
    length) held the steps back: they are counted from its end (a time limit a minute after a save)."""
    if not tl.height or not roots.height or baseline_s <= 0:
        return tl
    last = (tl.sort("attempt", "step").group_by("attempt")
            .agg(step=pl.col("step").last(), end=pl.col("end").last(), every=pl.col("n").median()))
    r = (roots.select(pl.col("attempt").cast(pl.Int32), "root_ts").drop_nulls().group_by("attempt")
         .agg(pl.col("root_ts").min()).join(last, on="attempt"))
    if saves is not None and saves.height:  # the last save to end after the last record and before the root
        ends = saves.select(pl.col("attempt").cast(pl.Int32), "ts", done=pl.col("ts") + pl.duration(
            microseconds=(pl.col("duration_s").fill_null(0) * 1e6).cast(pl.Int64)))
        r = r.join(r.select("attempt", "end", "root_ts").join(ends, on="attempt").filter(
            # (a save's line may carry its step record's whole-second stamp, a moment before the record's end)
            pl.col("ts") >= pl.col("end") - pl.duration(seconds=ROOT_SLACK_S), pl.col("done") <= pl.col("root_ts"),
        ).group_by("attempt").agg(
            after=pl.col("done").max()), on="attempt", how="left").with_columns(
            resume=pl.max_horizontal("end", "after"))
    else:
        r = r.with_columns(resume=pl.col("end"))
    gap = _secs(pl.col("root_ts") - pl.col("resume"))
    whole = (gap / baseline_s).floor()
    # a root event after the next record was due (a hang detected by a watchdog minutes later) says nothing of
    # how long the steps went on: no record came when one should have, so progress had stopped before it. One
    # seen within a step and a transport timeout of that moment (the peers' network error after a node died)
    # stopped the job about then, as one seen before it: the record that never came was the step it cut short
    due = gap <= pl.col("every").round() * baseline_s * (1 + DUE_SLACK) + baseline_s + TRANSPORT_TIMEOUT_S
    r = (r.with_columns(k=pl.when(due).then(pl.min_horizontal(whole, pl.col("every").round() - 1)).otherwise(0)
                        .cast(pl.Int64)).filter(pl.col("k") >= 1))
    if not r.height:
        return tl
    # the record's interval holds the save as a logged record after a save does
    extra = r.with_columns(
        done=pl.col("resume") + pl.duration(microseconds=(pl.col("k") * baseline_s * 1e6).cast(pl.Int64))).select(
        "attempt", step=pl.col("step") + pl.col("k"), n="k", start="end", end="done",
        interval_s=_secs(pl.col("done") - pl.col("end")), step_s=pl.lit(baseline_s), data_s=pl.lit(None, pl.Float64))
    return pl.concat([tl, extra], how="diagonal_relaxed").sort("attempt", "step")


# How far a step record may start past its attempt's root event and still count as a step: the root's line and the
# step records come from different hosts' clocks, corrected to within a few seconds.
ROOT_SLACK_S = 5.0


def until_root(tl: pl.DataFrame, roots: pl.DataFrame, saves: pl.DataFrame | None = None) -> pl.DataFrame:
    """`tl` without the step records an attempt began after the root event of the incident that ended it (`roots`:
    `attempt, root_ts`): `hang` runs from the root event to the attempt's exit, whatever the job printed in
    between (DESIGN's ledger). Steps after silent data corruption or a diverging loss trained on wrong numbers (or
    were skipped for them) until a guard or a person stopped the job: no progress to keep or to throw away.

    Only a record that began more than ROOT_SLACK_S after the root is cut, so that a root a clock's error early
    takes no real step away; for a root dated only by an interval (its `ts` the lower bound) the caller passes the
    latest it can have been (`attribution._latest_roots`).
    A record of several steps that began before the root and ended more than ROOT_SLACK_S after it (a log every ten
    steps of a job that stepped on past a preemption's SIGTERM, or on a NaN loss) ends at the root: the steps it
    holds after the root began after it, and are hang like the records cut. Its steps before the root are what its
    time up to the root holds at the attempt's pace, less the saves (`saves`: `s_attempt, ts, duration_s`) that
    began in it before the root."""
    if not tl.height or not roots.height:
        return tl
    r = roots.select(pl.col("attempt").cast(pl.Int32), "root_ts").drop_nulls().group_by("attempt").agg(
        pl.col("root_ts").min())
    slack = pl.duration(seconds=ROOT_SLACK_S)
    late = pl.col("start") > pl.col("root_ts") + slack
    kept = (tl.with_columns(pl.col("attempt").cast(pl.Int32)).join(r, on="attempt", how="left")
            .filter(~late.fill_null(False)))
    if not {"end", "n", "interval_s"} <= set(kept.columns):  # starts alone: nothing to clip
        return kept.drop("root_ts")
    over = (pl.col("end") > pl.col("root_ts") + slack).fill_null(False) & (pl.col("n") > 1)
    pace = (pl.col("interval_s") / pl.col("n")).median().over("attempt")
    kept = kept.with_columns(pace=pace, held=pl.lit(0.0))
    if saves is not None and saves.height and kept.select(over.any()).item():
        # the saves each straddling record held before the root (a save that began in it, up to the root)
        sv = saves.select(attempt=pl.col("s_attempt").cast(pl.Int32), s_ts="ts",
                          s_end=pl.col("ts") + pl.duration(microseconds=(pl.col("duration_s") * 1e6).cast(pl.Int64)))
        held = (kept.filter(over).select("attempt", "step", "start", "root_ts").join(sv, on="attempt")
                .filter(pl.col("s_ts") >= pl.col("start"), pl.col("s_ts") < pl.col("root_ts"))
                .group_by("attempt", "step").agg(h=_secs(pl.min_horizontal("s_end", "root_ts") - pl.col("s_ts")).sum()))
        kept = kept.join(held, on=["attempt", "step"], how="left").with_columns(held=pl.col("h").fill_null(0.0)
                                                                                 ).drop("h")
    before = _secs(pl.max_horizontal("root_ts", "start") - pl.col("start"))
    steps_before = ((before - pl.col("held")) / pl.col("pace")).round().clip(1, pl.col("n")).cast(pl.Int64)
    # (its steps are the first of those it covered: its number is the last of them)
    kept = kept.with_columns(_over=over)
    clip = pl.col("_over")
    return kept.with_columns(
        step=pl.when(clip).then(pl.col("step") - pl.col("n") + steps_before).otherwise("step"),
        n=pl.when(clip).then(steps_before).otherwise("n"),
        end=pl.when(clip).then(pl.max_horizontal("root_ts", "start")).otherwise("end"),
    ).with_columns(interval_s=pl.when(clip).then(_secs(pl.col("end") - pl.col("start"))).otherwise("interval_s")
                   ).drop("root_ts", "pace", "held", "_over")


def saves_before_cut(saves: pl.DataFrame, before: pl.DataFrame, after: pl.DataFrame) -> pl.DataFrame:
    """`saves` (`s_attempt, save_step, ...`) without those of the steps `until_root` cut (`before` and `after` it):
    a save the job wrote after its root event (a diverged job saving on until the scancel) is part of the hang, not
    a checkpoint stall in the attempt's tail."""
    if not saves.height or before.height == after.height:
        return saves
    last = after.group_by("attempt").agg(kept=pl.col("step").max())
    cut = (before.group_by("attempt").agg(n=pl.len()).join(after.group_by("attempt").agg(m=pl.len()), on="attempt",
                                                           how="left")
           .filter(pl.col("m").fill_null(0) < pl.col("n")).join(last, on="attempt", how="left")
           .select(s_attempt=pl.col("attempt").cast(saves.schema["s_attempt"]), kept=pl.col("kept").fill_null(-1)))
    w = saves.join(cut, on="s_attempt", how="left")
    return w.filter(pl.col("kept").is_null() | pl.col("save_step").is_null() | (pl.col("save_step") <= pl.col("kept"))
                    ).drop("kept")


def baseline_step_s(tl: pl.DataFrame) -> float:
    """The run's steady step time: the median time of one step (reported, else measured), each record
    weighted by the steps it covers, so that a window of per-step records among a log's lines every N
    steps does not outvote the rest."""
    per_step = pl.coalesce(pl.col("step_s"), pl.col("interval_s") / pl.col("n"))
    w = tl.select(v=per_step, n=pl.col("n")).drop_nulls().sort("v")
    if not w.height:
        raise LedgerError("no step times to take a baseline from (the log's step lines carry no times of their own)")
    # the weighted median; where half the steps fall exactly between two values, their mean (as np.median)
    half, cum = w["n"].sum() / 2, pl.col("n").cum_sum()
    value = (w.filter(cum >= half)["v"][0] + w.filter(cum > half)["v"][0]) / 2
    if value is None or value <= 0:
        raise LedgerError("no step times to take a baseline from (the log's step lines carry no times of their own)")
    return float(value)


# A record is slowed only where its excess over the baseline is beyond this many robust deviations of the run's own
# step-time noise (as the straggler rule holds a host's lead against its run's noise: incidents.STRAGGLER_SIGMAS)
NOISE_SIGMAS = 3.0
# A save's lines mark its engine's writes, not what stalls every rank around them: gathering the state before the
# first line, the commit barrier after the last (DeepSpeed's `is ready now`, then the ranks' barrier). An interval
# holding a save that runs over its steps by up to this share of the save beyond the save's logged span lost that
# time to the save (checkpoint), not to a slowdown of the steps; the edges are moments (a barrier, a state gather),
# so never more than SAVE_EDGE_MAX_S: a slow stretch's excess beside a save stays the stretch's.
SAVE_EDGE_SHARE = 0.05
SAVE_EDGE_MAX_S = 1.0


def step_noise_s(tl: pl.DataFrame) -> float:
    """The run's step-time noise: the robust deviation (1.4826 x the median absolute deviation) of one step's time,
    from the records whose stamps are exact. A record of n steps is their sum, so its time per step varies 1/sqrt(n)
    as much (each step's jitter is its own): each deviation is scaled back by sqrt(n) to one step's."""
    if not tl.height:
        return 0.0
    exact = tl.filter(pl.col("err_s").fill_null(0.0) <= 0) if "err_s" in tl.columns else tl
    per = pl.col("interval_s") / pl.col("n")
    dev = exact.select(((per - per.median()) * pl.col("n").sqrt()).abs().median()).item()
    return 1.4826 * float(dev or 0.0)


def assign_saves(tl: pl.DataFrame, saves: pl.DataFrame) -> pl.DataFrame:
    """The step interval (its `end`) each save ran in: the first record after the saved step, or,
    for logs without step numbers, the first record that ends after the save began (strictly: a save that began
    the moment a record ended, as a trainer saves right after it logged the step, ran in the next one)."""
    cols = {"attempt": pl.Int32, "end": pl.Datetime("us"), "duration_s": pl.Float64, "save_step": pl.Int64}
    if not saves.height or not tl.height:
        return pl.DataFrame(schema=cols)
    sv = saves.rename({"s_attempt": "attempt"}).with_columns(pl.col("attempt").cast(pl.Int32))
    right = tl.select(pl.col("attempt").cast(pl.Int32), "step", "end")
    by_step = (sv.filter(pl.col("save_step").is_not_null()).sort("save_step")
               .join_asof(right.sort("step"), left_on="save_step", right_on="step", by="attempt",
                          strategy="forward", allow_exact_matches=False, check_sortedness=False))
    by_ts = (sv.filter(pl.col("save_step").is_null()).sort("ts")
             .join_asof(right.sort("end"), left_on="ts", right_on="end", by="attempt", strategy="forward",
                        allow_exact_matches=False, check_sortedness=False))
    both = pl.concat([by_step.select(list(cols)), by_ts.select(list(cols))])
    return both.filter(pl.col("end").is_not_null())


def split_intervals(tl: pl.DataFrame, saves: pl.DataFrame, slow: pl.DataFrame, keep: pl.DataFrame,
                    baseline_s: float, evals: pl.DataFrame | None = None) -> pl.DataFrame:
    """Each step interval's seconds by category (wide: one column per category). `evals` (`account.evals.spans`):
    the trainer's evaluation passes; one that ran in an interval is work the job was asked for, booked with the
    interval's steps (`productive`, or `recompute` where they were thrown away), never as their slowdown."""
    b = baseline_s
    save_s = assign_saves(tl, saves).group_by("attempt", "end").agg(
        save_s=pl.col("duration_s").sum(), save_step=pl.col("save_step").first())
    ev = (evals if evals is not None else pl.DataFrame(schema={"s_attempt": pl.Int32, "ts": pl.Datetime("us"),
                                                                "duration_s": pl.Float64}))
    eval_s = assign_saves(tl, ev.with_columns(save_step=pl.lit(None, pl.Int64))).group_by("attempt", "end").agg(
        eval_s=pl.col("duration_s").sum())
    data_base = tl.select(pl.col("data_s").median()).item() or 0.0
    w = (tl.join(save_s, on=["attempt", "end"], how="left").join(eval_s, on=["attempt", "end"], how="left")
         .join(slow.select("attempt", "step", slow_host="host"), on=["attempt", "step"], how="left")
         .join(keep, on="attempt", how="left"))
    # A record's excess within what its stamps can tell is not lost time: a whole-second stamp the step times
    # could not refine puts its end anywhere in a second, so half such records look a second long and half a
    # second short, and only the long halves would count (the interval's error is its two ends' errors).
    err = (pl.col("err_s").fill_null(0.0) if "err_s" in tl.columns else pl.lit(0.0))
    # Nor is an excess within the run's own step-time noise: half of all steps run slower than the median by chance,
    # and a job that records every step would book that jitter as slowdown where a log every ten steps averages it
    # out (the outsiders' convention: kept steps count whole). Steps a straggler incident covers are slowed anyway.
    noise = NOISE_SIGMAS * step_noise_s(tl) * pl.col("n").sqrt()
    tol = err + pl.when(pl.col("slow_host").is_null()).then(noise).otherwise(0.0)
    # NOTE: judged without the save that ran in it: an interval holding a save is as noisy as any other in its steps,
    # and its steps' jitter left beside the save's own time would be booked as slowdown
    # (and without the evaluation pass: its time is the steps' work, whatever its length)
    passed = pl.min_horizontal(pl.col("eval_s").fill_null(0),
                               (pl.col("interval_s") - pl.col("save_s").fill_null(0)).clip(lower_bound=0))
    stepping = (pl.col("interval_s") - pl.col("save_s").fill_null(0) - passed).clip(lower_bound=0)
    within = (stepping - pl.col("n") * b).abs() <= tol
    productive = (pl.when(within & (tol > 0)).then(stepping)
                  .otherwise(pl.min_horizontal(pl.col("interval_s") - passed, pl.col("n") * b))) + passed
    excess = pl.col("interval_s") - productive
    w = w.with_columns(productive_raw=productive, excess=excess)
    # NOTE: a straggler's interval runs over for the straggler's sake: its save gets only its logged span
    # NOTE: and only where the steps before the save ran at pace: beside slow steps the excess is theirs
    save = pl.col("save_s").fill_null(0)
    paced = ((pl.col("interval_s") - save - passed - pl.col("n") * b) <= tol).shift(1).over("attempt", order_by="step")
    edge = pl.when(pl.col("slow_host").is_null() & paced.fill_null(True)).then(
        pl.min_horizontal(save * SAVE_EDGE_SHARE, SAVE_EDGE_MAX_S))
    w = w.with_columns(checkpoint=pl.min_horizontal("excess", save + edge.otherwise(0.0)))
    w = w.with_columns(data_stall=pl.min_horizontal(
        pl.col("excess") - pl.col("checkpoint"),
        ((pl.col("data_s").fill_null(data_base) - data_base).clip(lower_bound=0) * pl.col("n"))))
    rest = pl.col("excess") - pl.col("checkpoint") - pl.col("data_stall")
    w = w.with_columns(straggler=pl.when(pl.col("slow_host").is_not_null()).then(rest).otherwise(0.0),
                       slowdown=pl.when(pl.col("slow_host").is_null()).then(rest).otherwise(0.0))
    # Thrown-away work: the share of a record's steps past the checkpoint the next attempt used.
    beyond = pl.when(pl.col("keep_step").is_not_null()).then(
        ((pl.col("step") - pl.col("keep_step")) / pl.col("n")).clip(0, 1)
    ).when(pl.col("keep_ts").is_not_null()).then((pl.col("end") > pl.col("keep_ts")).cast(pl.Float64)).otherwise(0.0)
    w = w.with_columns(recompute=pl.col("productive_raw") * beyond, thrown=beyond)
    return w.with_columns(productive=pl.col("productive_raw") - pl.col("recompute"))


# What a thrown-away step lost beyond its baseline is part of the work thrown away, whatever slowed it; a completed
# save stays `checkpoint` (it made a checkpoint, kept or not)
_CAUSES = ("straggler", "slowdown", "data_stall")


def thrown_is_recompute(wide: pl.DataFrame) -> pl.DataFrame:
    """`wide` (`split_intervals`, causes final) with the thrown-away share (`thrown`) of each interval's straggler,
    slowdown and data stall moved to `recompute`: the recompute window, last durable save to root event, is all
    recompute (the outsiders' convention, DESIGN's ledger). Called after the slowdown pass, which must still see
    a thrown-away step's slowdown to find its incident."""
    share = pl.col("thrown").fill_null(0.0)
    moved = pl.sum_horizontal([pl.col(c) * share for c in _CAUSES])
    return wide.with_columns((pl.col("recompute") + moved).alias("recompute"),
                             *[(pl.col(c) * (1 - share)).alias(c) for c in _CAUSES])


# A step in flight takes up to this many baseline steps: a root later than that after the last step did not cut it
FLIGHT_STEPS = 1.5


def tails(tl: pl.DataFrame, attempts: pl.DataFrame, saves: pl.DataFrame, finished: list[int] | None = None,
          roots: pl.DataFrame | None = None, baseline_s: float = 0.0) -> pl.DataFrame:
    """Per attempt: startup, the tail after the last step (save → checkpoint, the step in flight → `partial`,
    rest → hang), restart.

    `finished` attempts ended without a failure: after their final save nothing hung, the job wrote its last
    checkpoint and exited, so their whole tail is `checkpoint` where a save ran in it. `roots` (`attempt,
    root_ts`): the root event of each attempt that ended badly; one that never stepped (its checkpoint load
    failed) is startup up to it and hang from it to its exit (DESIGN's ledger), not startup throughout.

    `partial`: the work the root event cut short, from the last step's end (or the save after it) to the root:
    done and thrown away, `recompute` (DESIGN's ledger: hang runs from the root event; the outsiders' campaigns
    book "the partial step in flight" so). `roots` may say (`hang`) which attempts a hang with no deeper cause
    ended (those have none) and when the diagnosis dates each root (`root_own`, where `root_ts` is the latest the
    root's line can have been). `baseline_s`: the run's step time, what a step in flight can have taken."""
    first = tl.group_by("attempt").agg(first_start=pl.col("start").min(), last_end=pl.col("end").max(),
                                       last_step=pl.col("step").max())
    a = attempts.sort("attempt").join(first, on="attempt", how="left").with_columns(
        next_start=pl.col("start_ts").shift(-1))
    if roots is not None and roots.height:
        r = roots.with_columns(hang=pl.col("hang").fill_null(False) if "hang" in roots.columns else pl.lit(False),
                               root_own=pl.coalesce("root_own", "root_ts") if "root_own" in roots.columns
                               else pl.col("root_ts")).select(
            pl.col("attempt").cast(a.schema["attempt"]), "root_ts", "root_own", "hang").drop_nulls().group_by(
            "attempt").agg(pl.col("root_ts").min(), pl.col("root_own").min(), pl.col("hang").any())
        a = a.join(r, on="attempt", how="left").with_columns(
            root_ts=pl.col("root_ts").cast(a.schema["end_ts"]).clip(pl.col("start_ts"), pl.col("end_ts")),
            root_own=pl.col("root_own").cast(a.schema["end_ts"]).clip(pl.col("start_ts"), pl.col("end_ts")))
    else:
        a = a.with_columns(root_ts=pl.lit(None, a.schema["end_ts"]), root_own=pl.lit(None, a.schema["end_ts"]),
                           hang=pl.lit(False))
    never = pl.coalesce("root_ts", "end_ts")  # NOTE: an attempt without step records: its root splits it
    a = a.with_columns(stepped=pl.col("last_end").is_not_null()).with_columns(
        first_start=pl.coalesce("first_start", never), last_end=pl.coalesce("last_end", never)
    ).rename({"root_ts": "_root"})
    # saves after the last step record (a final save before exiting) fall in the tail
    after = (pl.col("save_step") >= pl.col("last_step")) | (pl.col("save_step").is_null() & (pl.col("ts") >
                                                                                              pl.col("last_end")))
    tail_saves = (saves.rename({"s_attempt": "attempt"}).with_columns(pl.col("attempt").cast(pl.Int32))
                  .join(a.select(pl.col("attempt").cast(pl.Int32), "last_step", "last_end"), on="attempt")
                  .filter(after).group_by("attempt")
                  .agg(tail_save_s=pl.col("duration_s").sum(), tail_save_step=pl.col("save_step").first(),
                       cut_save=(~pl.col("ok")).any() if "ok" in saves.columns else pl.lit(False))
                  if saves.height else pl.DataFrame(schema={"attempt": pl.Int32, "tail_save_s": pl.Float64,
                                                            "tail_save_step": pl.Int64, "cut_save": pl.Boolean}))
    a = a.with_columns(pl.col("attempt").cast(pl.Int32)).join(tail_saves, on="attempt", how="left").with_columns(
        startup=_secs(pl.col("first_start") - pl.col("start_ts")),
        tail=_secs(pl.col("end_ts") - pl.col("last_end")),
        restart=_secs(pl.col("next_start") - pl.col("end_ts")).fill_null(0.0))
    done = pl.col("attempt").is_in(finished or []) & pl.col("tail_save_s").is_not_null()
    a = a.with_columns(tail_checkpoint=pl.when(done).then(pl.col("tail").clip(lower_bound=0))
                       .otherwise(pl.min_horizontal("tail", pl.col("tail_save_s").fill_null(0))))
    def after_tail_save(root: str) -> pl.Expr:
        return _secs(pl.col(root) - pl.col("last_end")) - pl.col("tail_checkpoint")

    cut_short, saving = after_tail_save("_root"), after_tail_save("root_own")
    # a save the root cut short (begun, never finished, in a format that prints its finish) ran up to the root as
    # the diagnosis dates it, not up to the latest its line can have been (a filesystem that failed under the save
    # failed at its start: `diagnose.onsets.open_save_onsets`; the watchdog that says so came half an hour on); a
    # root more than a step in flight after the last step (FLIGHT_STEPS) is when the fault was noticed, not when it
    # struck: that fell in the step in flight, half of one on average; so did one dated by the last step's end itself
    # (a node lost after it, nothing of its own to say when). A hang with no deeper cause has no moment of its own:
    # its root is the last step every rank finished (campaign2's convention), and nothing of the next was work
    undated = (cut_short > FLIGHT_STEPS * baseline_s) | (cut_short.abs() < 1e-3)
    within = (pl.when(pl.col("hang").fill_null(False)).then(0.0)
              .when(pl.col("cut_save").fill_null(False)).then(saving)
              .when(undated).then(baseline_s / 2).otherwise(cut_short))
    a = a.with_columns(partial=pl.when(~done & pl.col("stepped")).then(pl.min_horizontal(
        within.clip(lower_bound=0.0).fill_null(0.0), pl.col("tail") - pl.col("tail_checkpoint"))).otherwise(0.0)
    ).drop("_root", "root_own", "cut_save", "hang", "stepped")
    return a.with_columns(hang=pl.col("tail") - pl.col("tail_checkpoint") - pl.col("partial"),
                          hang_start=pl.col("last_end") + pl.duration(microseconds=((
                              pl.col("tail_checkpoint").clip(lower_bound=0) + pl.col("partial")) * 1e6).cast(pl.Int64)))


def flagged(rows: pl.DataFrame, total_s: float, error: LedgerError) -> tuple[pl.DataFrame, str]:
    """The ledger that `check` refused, made usable: negative rows set to zero, then every category scaled down
    where the rows now exceed the run, or what they miss of it booked as `idle`, so that the categories still
    add up to the run; with the sentence that flags it. The attempts' spans were made disjoint before
    (`timeline.disjoint_spans`): this is the last resort for evidence that still contradicts itself."""
    fixed = rows.with_columns(seconds=pl.col("seconds").clip(lower_bound=0.0))
    got = fixed["seconds"].sum()
    if got > total_s > 0:  # time counted twice somewhere: every category gives up its share
        return fixed.with_columns(seconds=pl.col("seconds") * (total_s / got)), (
            f"ledger flagged: {error}; negative categories set to 0 and every category scaled by "
            f"{total_s / got:.4f} so that the ledger still adds up to the run")
    # the unplaced time belongs to no incident and no host: only its category, attempt and seconds are set
    extra = pl.DataFrame([{c: None for c in fixed.columns}], schema=fixed.schema).with_columns(
        category=pl.lit("idle"), attempt=pl.lit(fixed["attempt"].min()).cast(fixed.schema["attempt"]),
        seconds=pl.lit(total_s - got))
    return pl.concat([fixed, extra], how="vertical_relaxed"), (
        f"ledger flagged: {error}; negative categories set to 0 and {total_s - got:,.1f} s the evidence does not "
        "place booked as idle")


def check(rows: pl.DataFrame, total_s: float) -> None:
    """Raise unless every category is non-negative and they add up to the total exactly."""
    worst = rows.filter(pl.col("seconds") < -TOLERANCE * max(total_s, 1.0))
    if worst.height:
        r = worst.row(0, named=True)
        raise LedgerError(f"category {r['category']} of attempt {r['attempt']} would be {r['seconds']:.3f} s: "
                          "attempts or steps overlap in the evidence")
    got = rows["seconds"].sum()
    if abs(got - total_s) > TOLERANCE * max(total_s, 1.0):
        raise LedgerError(f"ledger adds up to {got:.6f} s of {total_s:.6f} s")

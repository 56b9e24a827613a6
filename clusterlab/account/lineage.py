"""Which of a run's steps the final model descends from: the chain of checkpoints back from the last attempt.

An attempt's work is kept up to the step the next attempt on the chain resumed from. Following the chain back from
the last attempt, each resume point was produced by the latest earlier attempt that started at or before it and
reached it; the attempts the chain skips trained nothing the run kept. This is what a lost checkpoint directory
does: a launch that found nothing trains from step 0 and throws away every earlier attempt's work, unless a later
launch finds an older checkpoint again (another cluster's copy) and the run goes on from there.
"""

from __future__ import annotations

import duckdb
import polars as pl

from clusterlab import store
from clusterlab.diagnose import incidents


def kept_steps(attempts: pl.DataFrame) -> pl.DataFrame:
    """Per attempt (`attempt, resume_step, top_step`: the step it started from, and the last it reached or saved; null
    where unknown), `chain_keep`: the last step of its work the final model descends from (-1: none), for the attempts
    before the last; null where the chain cannot say (an attempt or a resume point without steps)."""
    rows = attempts.sort("attempt").select("attempt", "resume_step", "top_step").rows()
    keep: dict[int, int | None] = {}
    bound = rows[-1][1] if rows else None
    for attempt, start, top in reversed(rows[:-1]):
        if bound is None or start is None or top is None:
            keep[attempt] = None
        elif start <= bound <= top:  # it produced the checkpoint the chain resumed from
            keep[attempt] = bound
            bound = start
        else:
            keep[attempt] = -1
    return pl.DataFrame({"attempt": list(keep), "chain_keep": list(keep.values())},
                        schema={"attempt": attempts.schema["attempt"], "chain_keep": pl.Int64})


def keep_descended(keep: pl.DataFrame, steps: pl.DataFrame, rollbacks: list[int]) -> pl.DataFrame:
    """`keep` (per attempt its `keep_step`) with the steps the final model descends from, where the chain says.

    A later launch that found its checkpoints lost (a wiped directory: it trained from step 0) threw away the work of
    every attempt before it, however many kept it in between, unless a launch after it found an older checkpoint
    again: then what that checkpoint holds is kept. An attempt a deliberate rollback came after (`rollbacks`: the team
    went back before a divergence) keeps what the next launch resumed from, DESIGN's convention for rollbacks.
    `steps`: per attempt `load_step` (the lowest it loaded), `first_step`, `last_step`, `last_save_step`."""
    chain = kept_steps(steps.select("attempt", resume_step=pl.coalesce("load_step", pl.col("first_step") - 1),
                                    top_step=pl.max_horizontal("last_step", "last_save_step")))
    before_rollback = pl.col("attempt") < (max(rollbacks) if rollbacks else -1)
    return keep.join(chain, on="attempt", how="left").with_columns(
        keep_step=pl.when(before_rollback).then("keep_step").otherwise(pl.coalesce("chain_keep", "keep_step"))
    ).drop("chain_keep")


def keep_points(att: pl.DataFrame, saves: pl.DataFrame, inc: pl.DataFrame, con: duckdb.DuckDBPyConnection,
                run: str) -> pl.DataFrame:
    """Per attempt, the last step (or time) whose work was kept: what the next attempt resumed from."""
    loads = store.frame(con, """SELECT attempt, min(step) AS load_step FROM checkpoints
                                WHERE run = ? AND action = 'load' GROUP BY attempt""", [run])
    firsts = store.frame(con, "SELECT attempt, first_step, last_step FROM attempts WHERE run = ?", [run])
    nxt = att.select("attempt").sort("attempt").with_columns(next_attempt=pl.col("attempt").shift(-1))
    # What the run resumed from: the lowest step loaded by the later attempts up to the first that trained. A launch
    # that died loading the newest save (its shards never written) resumed nothing: the one after it fell back. A
    # later launch that found its checkpoints lost (a wiped directory: it trained from step 0) threw away this
    # attempt's work after the step it resumed from too, however many attempts kept it in between (`keep_descended`
    # gives back what a launch after it found again).
    later = (nxt.select("attempt").join(
        att.select(later="attempt").join(loads.rename({"attempt": "later"}), on="later", how="left")
        .join(firsts.rename({"attempt": "later"}), on="later", how="left"), how="cross")
        .filter(pl.col("later") > pl.col("attempt")))
    trained = later.filter(pl.col("first_step").is_not_null()).group_by("attempt").agg(upto=pl.col("later").min())
    lost = inc.filter(pl.col("kind") == "checkpoint_lost")["attempt"].cast(pl.Int64).to_list()
    resumed = (later.join(trained, on="attempt", how="left")
               .filter(pl.col("upto").is_null() | (pl.col("later") <= pl.col("upto")) | pl.col("later").is_in(lost))
               .group_by("attempt").agg(keep_step=pl.coalesce("load_step", pl.col("first_step") - 1).min()))
    keep = nxt.join(resumed, on="attempt", how="left")
    ended_badly = inc.filter(pl.col("kind") == "attempt_end").select("attempt").with_columns(bad=pl.lit(True))
    # a save the job was killed in the middle of (its finish never logged) keeps nothing
    cut = store.frame(con, """SELECT attempt AS s_attempt, step AS save_step FROM checkpoints
                              WHERE run = ? AND action = 'save' GROUP BY ALL HAVING NOT bool_or(coalesce(ok, true))""",
                      [run])
    last_save = (saves.join(cut, on=["s_attempt", "save_step"], how="anti").group_by("s_attempt")
                 .agg(last_save_step=pl.col("save_step").max(), last_save_ts=pl.col("ts").max())
                 .rename({"s_attempt": "attempt"}))
    keep = keep.join(ended_badly, on="attempt", how="left").join(last_save, on="attempt", how="left")
    if lost:  # what the final model descends from
        rolled = incidents.rollbacks(con, run)["attempt"].to_list()
        keep = keep_descended(keep, att.select("attempt").join(loads, on="attempt", how="left")
                              .join(firsts, on="attempt", how="left").join(last_save, on="attempt", how="left"), rolled)
    # A final attempt that failed keeps only what it saved; one that finished keeps everything.
    final_bad = pl.col("next_attempt").is_null() & pl.col("bad").fill_null(False)
    no_steps = pl.col("last_save_step").is_null() & pl.col("last_save_ts").is_null()
    return keep.select(
        "attempt",
        keep_step=pl.when(final_bad).then(pl.when(no_steps).then(pl.lit(-1)).otherwise(pl.col("last_save_step")))
        .otherwise(pl.col("keep_step")),
        keep_ts=pl.when(final_bad).then(pl.col("last_save_ts")).otherwise(pl.lit(None, pl.Datetime("us"))),
    )

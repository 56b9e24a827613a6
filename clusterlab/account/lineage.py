"""Which of a run's steps the final model descends from: the chain of checkpoints back from the last attempt.

An attempt's work is kept up to the step the next attempt on the chain resumed from. Following the chain back from
the last attempt, each resume point was produced by the latest earlier attempt that started at or before it and
reached it; the attempts the chain skips trained nothing the run kept. This is what a lost checkpoint directory
does: a launch that found nothing trains from step 0 and throws away every earlier attempt's work, unless a later
launch finds an older checkpoint again (another cluster's copy) and the run goes on from there.
"""

from __future__ import annotations

import polars as pl


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


def keep_descended(keep: pl.DataFrame, steps: pl.DataFrame) -> pl.DataFrame:
    """`keep` (per attempt its `keep_step`) with the steps the final model descends from, where the chain says.

    A later launch that found its checkpoints lost (a wiped directory: it trained from step 0) threw away the work of
    every attempt before it, however many kept it in between, unless a launch after it found an older checkpoint
    again. `steps`: per attempt `load_step` (the lowest it loaded), `first_step`, `last_step`, `last_save_step`."""
    chain = kept_steps(steps.select("attempt", resume_step=pl.coalesce("load_step", pl.col("first_step") - 1),
                                    top_step=pl.max_horizontal("last_step", "last_save_step")))
    return keep.join(chain, on="attempt", how="left").with_columns(
        keep_step=pl.coalesce("chain_keep", "keep_step")).drop("chain_keep")

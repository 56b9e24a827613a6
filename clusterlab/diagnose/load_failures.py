"""A resume that dies reading the checkpoint it follows: that checkpoint was lost, whatever the error's class.

DeepSpeed's `load_checkpoint` following `latest` to a save whose ZeRO shards a hung writer never wrote raises
`FileNotFoundError: [Errno 2] No such file or directory: '.../global_step700/bf16_zero_pp_rank_0_..._optim_states.pt'`;
a shard cut short makes torch.load say `failed finding central directory`. Alone, either reads as the user's code
failing (a wrong path); before the attempt's first step, on a step an earlier attempt of the run saved or began to
save, it is the checkpoint that was lost (`checkpoint_lost`, ranked with node failures: `incidents.NODE_TIER`).
"""

from __future__ import annotations

import duckdb
import polars as pl

from clusterlab import store
from clusterlab.diagnose import incidents

# the step directory a path names: DeepSpeed global_step700/, Megatron iter_0000700/, torchtitan step-700/,
# HF checkpoint-700/ (a directory: a separator follows)
STEP_IN_PATH = r"[/\\](?:global_step|iter_|step[-_]?|checkpoint-|ckpt[-_]?)0*(\d+)[/\\]"
LOAD_ERROR = r"FileNotFoundError|No such file or directory|" + incidents.UNREADABLE_CHECKPOINT


def _causes(cand: pl.DataFrame) -> pl.Expr:
    """The exception types an event's traceback folded in as its causes: torch.distributed.checkpoint raises one
    CheckpointException for every rank and prints each rank's own failure (the FileNotFoundError of a missing
    `__r_0.distcp` shard) below it, so the load error is a cause, not the line the event is."""
    if "detail" not in cand.columns:
        return pl.lit("")
    return pl.col("detail").fill_null("").str.extract(r'"causes":\s*\[([^\]]*)\]', 1).fill_null("")


def lost_on_load(con: duckdb.DuckDBPyConnection, cand: pl.DataFrame) -> pl.DataFrame:
    """`cand` (`incidents.candidates`) with the load errors of a lost checkpoint made `checkpoint_lost` at the
    node tier: a missing or unreadable checkpoint file from the run's own logs, before the attempt's first step,
    of the step its path names (else the step the attempt's last load before it named), which an earlier attempt
    of the run saved or began to save. A step the run never saved stays what it was (a wrong `--load`)."""
    if not cand.height:
        return cand
    maybe = (cand.with_row_index("_i")
             .filter(pl.col("run").is_not_null(), pl.col("source") != "kernel",
                     pl.col("text").fill_null("").str.contains(LOAD_ERROR) | _causes(cand).str.contains(LOAD_ERROR))
             .select("_i", "run", "attempt", "ts", path_step=pl.col("text").str.extract(STEP_IN_PATH, 1)
                     .cast(pl.Int64, strict=False)))
    if not maybe.height:
        return cand
    lost = store.frame(con, """
        WITH m AS (
            SELECT m._i, m.run, m.attempt, m.ts, coalesce(m.path_step, (
                SELECT arg_max(c.step, c.ts) FROM checkpoints c WHERE c.action = 'load' AND c.run = m.run
                  AND c.attempt = m.attempt AND c.step IS NOT NULL AND c.ts <= m.ts)) AS step
            FROM maybe m)
        SELECT m._i FROM m JOIN attempts a USING (run, attempt)
        WHERE (a.first_step_ts IS NULL OR m.ts <= a.first_step_ts)
          AND EXISTS (SELECT 1 FROM checkpoints s WHERE s.action = 'save' AND s.run = m.run
                        AND s.attempt < m.attempt AND s.step = m.step)""", maybe=maybe)["_i"]
    if not lost.len():
        return cand
    hit = pl.int_range(pl.len(), dtype=pl.UInt32).is_in(lost.implode())
    return cand.with_columns(
        failure_mode=pl.when(hit).then(pl.lit("checkpoint_lost")).otherwise("failure_mode"),
        tier=pl.when(hit).then(pl.lit(incidents.NODE_TIER)).otherwise("tier").cast(cand.schema["tier"]))

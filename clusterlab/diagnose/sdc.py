"""Silent data corruption: one host's ranks compute non-finite numbers while their peers, on the same steps,
stay finite.

A model that diverges does so on every rank at once (the ranks all-reduce the same gradients); a GPU that
computes wrong values makes its own ranks' local loss or gradients NaN or inf first, while every other rank's
stays finite. Llama 3's report counts such silent data corruption at 1.4 % of its interruptions. The rule: an
attempt whose end was read as a diverging loss, the user's code, the user's stop or nothing, whose non-finite
losses (`loss_nonfinite` per-rank events; where an attempt has none, any `loss_divergence` line with a rank) come
from ranks of one host only, while the per-rank records of other ranks hold finite losses at or after the first
non-finite step.
"""

from __future__ import annotations

import duckdb
import polars as pl

from clusterlab import store
from clusterlab.diagnose import reattribute, timeline

MASKED_MODES = ("loss_divergence", "user_code_error", "manual_stop", "unknown", "nccl_timeout")
SDC_CONFIDENCE = 0.7  # the per-rank numbers say it; the GPU's diagnostics confirm it


def with_silent_corruption(con: duckdb.DuckDBPyConnection, inc: pl.DataFrame, ev: pl.DataFrame,
                           ev_schema: dict[str, pl.DataType], clocks: pl.DataFrame | None = None
                           ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`inc` and `ev` (root cause's attempt-end incidents and evidence) with silent data corruption re-attributed;
    `clocks` (`timeline.host_clocks`) put a rank's own record on the log's clock."""
    masked = inc.filter(pl.col("failure_mode").is_in(MASKED_MODES))
    if not masked.height or not con.execute(
            """SELECT count(*) FROM events WHERE failure_mode = 'loss_divergence' AND rank IS NOT NULL
               AND host IS NOT NULL""").fetchall()[0][0]:
        return inc, ev
    found = store.frame(con, """
        WITH bad_all AS (
            SELECT e.run, e.attempt, e.ts, e.host, e.source, e.kind, e.failure_mode, e.xid, e.rank, f.path AS file,
                   e.line, e.text, TRY_CAST(json_extract_string(e.detail, '$.step') AS BIGINT) AS step
            FROM events e JOIN ingested_files f USING (file_id)
            WHERE e.failure_mode = 'loss_divergence' AND e.rank IS NOT NULL AND e.host IS NOT NULL
              AND (e.run, e.attempt) IN (SELECT (run, attempt) FROM masked)
            -- a rank's own records outrank the trainer's log line: the loss a trainer logs (HF Trainer's
            -- gathered mean, Megatron's data-parallel average) is every rank's reduced loss, printed by one rank
            QUALIFY e.kind = 'loss_nonfinite'
                 OR NOT bool_or(e.kind = 'loss_nonfinite') OVER (PARTITION BY e.run, e.attempt)
        ),
        -- the first wrong step decides: an optimizer step taken with a NaN gradient norm makes every rank's
        -- weights NaN, so from the next step on all ranks are non-finite, whoever was wrong first
        bad AS (
            SELECT * FROM bad_all
            QUALIFY step IS NOT DISTINCT FROM min(step) OVER (PARTITION BY run, attempt)
        ),
        one_host AS (
            SELECT run, attempt, any_value(host) AS host, list(DISTINCT rank) AS ranks, min(step) AS first_step
            FROM bad GROUP BY run, attempt HAVING count(DISTINCT host) = 1
        ),
        -- other ranks' finite losses at or after the first non-finite step: their numbers stayed sound
        sound AS (
            SELECT o.run, o.attempt FROM one_host o JOIN rank_steps r ON r.run = o.run AND r.attempt = o.attempt
              AND NOT list_contains(o.ranks, r.rank) AND r.loss IS NOT NULL AND isfinite(r.loss)
              AND (o.first_step IS NULL OR r.step >= o.first_step)
            GROUP BY o.run, o.attempt
        )
        SELECT m.incident_id, b.attempt, b.ts, b.host, b.source, b.kind, b.failure_mode, b.xid, b.rank, b.file,
               b.line, b.text
        FROM masked m JOIN sound USING (run, attempt) JOIN bad b USING (run, attempt)
        QUALIFY row_number() OVER (PARTITION BY m.incident_id ORDER BY b.ts, b.file, b.line) = 1
    """, masked=masked.select("incident_id", "run", "attempt"))
    if not found.height:
        return inc, ev
    was = dict(inc.select("incident_id", "failure_mode").iter_rows())
    reasons = {r["incident_id"]: (f"rank {r['rank']} on {r['host']} went non-finite while the other ranks' losses "
                                  f"stayed finite on the same steps: its GPU's numbers, not the model "
                                  f"(was read as {was[r['incident_id']]})")
               for r in found.iter_rows(named=True)}
    inc, ev = reattribute.apply(inc, ev, found, "silent_data_corruption", SDC_CONFIDENCE, reasons, ev_schema,
                                host=pl.col("_rule_host"))
    # the attempt stopped making progress at the first wrong number, not when a guard gave up on it: the steps in
    # between trained on corrupted values (or were skipped for them), so they are the incident's, not kept work
    # NOTE: a rank's own record of the first wrong step is timed by the rank (on its host's clock): it is the root.
    # A root that won before it was read off a line that says the same later (a trainer's NaN loss dict), dated by
    # the stamped line before it when it has no stamp of its own: minutes early, it would book sound steps as lost
    first = found.with_columns(pl.col("attempt").cast(pl.Int32))
    if clocks is not None:
        first = timeline.on_log_clock(first, clocks)
    first = first.select("incident_id", _own=pl.col("kind") == "loss_nonfinite",
                         _first_ts=pl.col("ts").cast(inc.schema["root_ts"]))
    inc = inc.join(first, on="incident_id", how="left").with_columns(
        root_ts=pl.when(pl.col("_own").fill_null(False)).then("_first_ts")
        .otherwise(pl.min_horizontal("root_ts", "_first_ts"))).drop("_first_ts", "_own")
    return inc, ev

"""A ledger for a run whose evidence holds no step times: the scheduler's spans of its attempts and their incidents.

Where no trainer output survived (a log store kept only the nodes' kernel logs and the scheduler's records; a
trainer that prints no step line), nothing shows how far each attempt trained. The run still cost its GPU-hours and
its incidents still explain its attempts' ends: each attempt's time up to its root event is booked as `productive`
(unverified: no step shows progress), from the root event to its end as `hang`, and the time to the next attempt as
`restart`, each tied to the attempt's end incident; the ledger is flagged so. Without the scheduler's spans (a run
known only from a few log lines) there is no ledger at all: seconds of output say nothing of what the run held."""

from __future__ import annotations

import polars as pl

NOTE = ("ledger flagged: no step times in the run's evidence: each attempt's time up to its root event is booked as "
        "productive, unverified (no step line shows progress), after it as hang, between attempts as restart")


def rows(att: pl.DataFrame, inc: pl.DataFrame) -> pl.DataFrame:
    """Ledger rows (`category, attempt, incident_id, own_host, seconds, start_ts, end_ts`) from the attempts' spans
    (`timeline.attempt_spans`, disjoint) and their attempt-end incidents."""
    ends = (inc.filter(pl.col("kind") == "attempt_end")
            .group_by("attempt").agg(end_id=pl.col("incident_id").first(), root_ts=pl.col("root_ts").min())
            .with_columns(pl.col("attempt").cast(att.schema["attempt"])))
    a = (att.filter(pl.col("start_ts").is_not_null(), pl.col("end_ts").is_not_null()).sort("attempt")
         .join(ends, on="attempt", how="left")
         .with_columns(next_start=pl.col("start_ts").shift(-1),
                       root=pl.col("root_ts").clip(pl.col("start_ts"), pl.col("end_ts")).fill_null(pl.col("end_ts"))))
    none = pl.lit(None, pl.String)

    def part(category: str, start: str, end: str, incident: pl.Expr) -> pl.DataFrame:
        return a.filter(pl.col(end).is_not_null()).select(
            category=pl.lit(category), attempt="attempt", incident_id=incident, own_host=none,
            seconds=(pl.col(end) - pl.col(start)).dt.total_microseconds() / 1e6, start_ts=start, end_ts=end)

    parts = [part("productive", "start_ts", "root", none), part("hang", "root", "end_ts", pl.col("end_id")),
             part("restart", "end_ts", "next_start", pl.col("end_id"))]
    return pl.concat(parts, how="vertical_relaxed").filter(pl.col("seconds") > 0).sort("attempt", "start_ts")

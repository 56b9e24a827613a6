"""Re-attribution of a decided incident by a rule that reads beyond its attempt (`sticky`, `maintenance`): the
incident takes the rule's mode, the line that shows it leads its evidence, and the mode it had is kept among its
rejected candidates with the rule's reason."""

from __future__ import annotations

import polars as pl


def apply(inc: pl.DataFrame, ev: pl.DataFrame, found: pl.DataFrame, mode: str, confidence: float,
          reasons: dict[str, str], ev_schema: dict[str, pl.DataType], host: pl.Expr | None = None
          ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`inc`/`ev` with each incident of `found` (one evidence row per `incident_id`: the line that shows the rule's
    cause) given `mode`, `confidence`, its reason from `reasons`, and `host` (an expression over `inc` joined with
    `found`'s `host` as `_rule_host`) where given, and the rank of that line where it is on the incident's host."""
    hit = pl.col("incident_id").is_in(list(reasons))
    was = {r["incident_id"]: {"candidate": {"failure_mode": r["failure_mode"], "host": r["host"], "ts": None,
                                            "kind": r["kind"], "file": None, "line": None},
                              "reason": reasons[r["incident_id"]]}
           for r in inc.filter(hit).iter_rows(named=True)}
    joined = inc.join(found.select("incident_id", _rule_host="host", _rule_rank="rank"), on="incident_id", how="left")
    new_host = host if host is not None else pl.col("host")
    # the rank: the rule's line's where it names the incident's host, else the one it had where the host stays
    rank = (pl.when(new_host.eq_missing(pl.col("_rule_host"))).then(pl.col("_rule_rank"))
            .when(new_host.eq_missing(pl.col("host"))).then(pl.col("rank")))
    inc = joined.with_columns(
        failure_mode=pl.when(hit).then(pl.lit(mode)).otherwise("failure_mode"),
        confidence=pl.when(hit).then(pl.lit(confidence)).otherwise("confidence"),
        rank=pl.when(hit).then(rank.cast(pl.Int32)).otherwise(pl.col("rank")),
        host=pl.when(hit).then(new_host).otherwise("host"),
        rejected=pl.struct("incident_id", "rejected").map_elements(
            lambda r: [was[r["incident_id"]], *(r["rejected"] or [])] if r["incident_id"] in was
            else r["rejected"], return_dtype=inc.schema["rejected"]),
    ).drop("_rule_host", "_rule_rank")
    return inc, lead(inc, ev, found, ev_schema)


def lead(inc: pl.DataFrame, ev: pl.DataFrame, found: pl.DataFrame, ev_schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """`ev` with each line of `found` (one per `incident_id` of `inc`) first in its incident's evidence."""
    first = found.with_columns(rank_in_incident=pl.lit(0, pl.Int64), tier=pl.lit(None, pl.Int32)).join(
        inc.select("incident_id", "run", "attempt"), on="incident_id")
    cols = list(ev.columns)
    ev = pl.concat([first.select(cols).cast({c: t for c, t in ev_schema.items() if c in cols}), ev],
                   how="vertical_relaxed")
    return ev.sort("run", "attempt", "rank_in_incident").with_columns(
        rank_in_incident=pl.int_range(1, pl.len() + 1).over("incident_id").cast(pl.Int64))

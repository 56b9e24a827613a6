"""Human judgement on incidents: a confirmed or overridden mode, host or blame, a note, a ticket."""

from __future__ import annotations

import duckdb
import polars as pl

from clusterlab import store, taxonomy

STATUSES = ("open", "with_provider", "resolved")
BLAMES = ("provider", "user", "unknown")
FIELDS = ("failure_mode", "host", "blame", "note", "ticket", "status")


def annotate(con: duckdb.DuckDBPyConnection, incident_id: str, *, failure_mode: str | None = None,
             host: str | None = None, blame: str | None = None, note: str | None = None,
             ticket: str | None = None, status: str | None = None, author: str | None = None) -> None:
    """Record a reviewer's word on an incident; later annotations win field by field."""
    if failure_mode is not None and failure_mode not in taxonomy.MODES:
        raise ValueError(f"unknown failure mode {failure_mode!r}; known: {', '.join(taxonomy.MODES)}")
    if status is not None and status not in STATUSES:
        raise ValueError(f"status must be one of {', '.join(STATUSES)}")
    if blame is not None and blame not in BLAMES:
        raise ValueError(f"blame must be one of {', '.join(BLAMES)}")
    con.execute(
        "INSERT INTO annotations (incident_id, failure_mode, host, blame, note, ticket, status, author) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [incident_id, failure_mode, host, blame, note, ticket, status, author],
    )


def current(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Per incident, the latest non-empty value of each annotated field, and when it was last touched."""
    latest = ", ".join(f"arg_max({f}, annotated_at) FILTER (WHERE {f} IS NOT NULL) AS a_{f}" for f in FIELDS)
    return store.frame(con, f"""
        SELECT incident_id, {latest}, max(annotated_at) AS annotated_at,
               min(annotated_at) FILTER (WHERE status = 'with_provider') AS sent_at,
               min(annotated_at) FILTER (WHERE status = 'resolved') AS resolved_at
        FROM annotations GROUP BY incident_id""")


def apply(con: duckdb.DuckDBPyConnection, inc: pl.DataFrame) -> pl.DataFrame:
    """Incidents with overrides applied; the machine's answer is kept beside, and `overridden` says so."""
    ann = current(con)
    out = inc.join(ann, on="incident_id", how="left")
    overridden = (pl.col("a_failure_mode").is_not_null() & (pl.col("a_failure_mode") != pl.col("failure_mode"))) | (
        pl.col("a_host").is_not_null() & (pl.col("a_host") != pl.col("host").fill_null(""))) | pl.col(
        "a_blame").is_not_null()
    return out.with_columns(
        detected_failure_mode=pl.col("failure_mode"), detected_host=pl.col("host"),
        overridden=overridden.fill_null(False),
        failure_mode=pl.coalesce("a_failure_mode", "failure_mode"), host=pl.coalesce("a_host", "host"),
        blame=pl.col("a_blame"), note=pl.col("a_note"), ticket=pl.col("a_ticket"),
        status=pl.col("a_status").fill_null("open"),
    ).drop([f"a_{f}" for f in FIELDS])

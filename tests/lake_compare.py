"""Comparing a Spark-made lake with a DuckDB store, row for row (the Spark tests' shared checks)."""

from __future__ import annotations

import polars as pl

from clusterlab import Lab

TABLES = ["events", "steps", "rank_steps", "checkpoints", "nccl_ranks", "jobs", "facts", "unmatched_lines"]


def rows(lab: Lab, table: str) -> pl.DataFrame:
    """A table's rows, each with its file's path (a file:// URL mapped back to the path) and line (the ids are
    each store's own), in one order."""
    return lab.sql(f"SELECT regexp_replace(f.path, '^file://', '') AS file_path, t.* EXCLUDE (file_id) FROM {table} t "
                   f"JOIN ingested_files f USING (file_id)").sort(pl.all())


def assert_same_store(db: Lab, lk: Lab) -> None:
    for table in TABLES:
        a, b = rows(db, table), rows(lk, table)
        assert a.schema == b.schema and a.equals(b), f"{table}: {a.height} rows by DuckDB, {b.height} by Spark"
    assert db.table("attempts").sort(pl.all()).equals(lk.table("attempts").sort(pl.all()))
    files = "SELECT * EXCLUDE (file_id, ingested_at) REPLACE (regexp_replace(path, '^file://', '') AS path) " \
            "FROM ingested_files"
    assert db.sql(files).sort(pl.all()).equals(lk.sql(files).sort(pl.all()))

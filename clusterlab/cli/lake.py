"""`clusterlab export --parquet DIR`, and the Spark engine of `clusterlab ingest`: thin layers over
`clusterlab.scale.lake` and `clusterlab.scale.spark_ingest`."""

from __future__ import annotations

from pathlib import Path

import click

from clusterlab.cli.common import emit_json, fail, open_lab, run_ingest
from clusterlab.scale.lake import LakeError

ENGINES = ("duckdb", "spark")


@click.command("export")
@click.option("--parquet", "parquet_dir", required=True, type=click.Path(path_type=Path),
              help="Folder to write the store to as a hive-partitioned Parquet lake (created; a lake there is "
                   "replaced).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document: rows written per table.")
@click.pass_context
def export(ctx: click.Context, parquet_dir: Path, as_json: bool) -> None:
    """Write the store as a Parquet lake that Spark, Trino, pandas or `clusterlab --lake` read."""

    with open_lab(ctx, read_only=True) as lab:
        try:
            rows = lab.export_parquet(parquet_dir)
        except (LakeError, OSError) as e:
            fail(str(e))
    if as_json:
        emit_json({"lake": str(parquet_dir), "rows": rows})
        return
    click.echo(f"{parquet_dir}: " + ", ".join(f"{t} {n}" for t, n in rows.items() if n))


class SparkIngest:
    """What `cli.run_ingest` needs of a Lab, for the Spark engine: `ingest(...)` into a lake."""

    def __init__(self, lake: Path, master: str | None) -> None:
        self.lake, self.master = lake, master

    def ingest(self, *paths, inventory=None, run=None, host=None, year=None, progress=None, workers=None,
               epoch=None):
        from clusterlab.scale import spark_ingest

        if epoch is not None:  # NOTE: relative-day fault traces are read by the DuckDB engine only
            raise RuntimeError("--epoch (a fault trace's day 0) is not supported with --engine spark")

        spark = spark_ingest.spark_session(self.master)
        return spark_ingest.ingest(spark, self.lake, list(paths), inventory, run=run, host=host, year=year)


def spark_ingest_status(lake: Path | None, master: str | None, paths, inventory, run, host, year,
                        as_json: bool) -> int:
    """`clusterlab ingest --engine spark`: the exit status (2 when any input was bad)."""

    if lake is None:
        fail("--engine spark writes a Parquet lake: give --lake DIR")
    try:
        return run_ingest(SparkIngest(lake, master), paths, inventory, run, host, year, as_json)
    except (LakeError, RuntimeError) as e:
        fail(str(e))

"""`clusterlab ingest --engine spark`: pyspark in local[2] mode gives the lake the DuckDB path's rows, row for row."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from lake_compare import assert_same_store, rows

from clusterlab import Lab
from clusterlab.account.ledger import LedgerError
from clusterlab.cli import main
from clusterlab.scale import spark_ingest
from conftest import SAMPLES

pytestmark = pytest.mark.slow


def results(summary) -> list[tuple]:
    return [(f.display, f.status, f.messages, f.skipped_why) for f in summary.files]


@pytest.fixture(scope="module")
def bundle_lake(spark, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("spark") / "lake"
    summary = spark_ingest.ingest(spark, out, [SAMPLES / "bundle"])
    assert summary.counts().get("ingested", 0) > 100 and not summary.errors
    return out


def test_the_lake_holds_the_duckdb_rows_of_the_sample_bundle(bundle_db_copy: Path, bundle_lake: Path) -> None:
    with Lab(bundle_db_copy, read_only=True) as db, Lab(lake=bundle_lake) as lk:
        assert rows(db, "events").height > 100 and rows(db, "rank_steps").height > 1000
        assert_same_store(db, lk)


def test_attribution_over_the_spark_lake_is_the_duckdb_one(bundle_db_copy: Path, bundle_lake: Path) -> None:
    with Lab(bundle_db_copy, read_only=True) as db, Lab(lake=bundle_lake) as lk:
        ledgers = 0
        for run in db.runs()["run"].to_list():
            try:
                want = db.attribute(run)
            except LedgerError:
                continue
            got = lk.attribute(run)
            assert want.ledger.equals(got.ledger) and want.incidents.equals(got.incidents), run
            ledgers += 1
        assert ledgers >= 2


def test_the_lake_holds_the_duckdb_rows_of_a_simulated_fleet(spark, tmp_path: Path) -> None:
    fleet = SAMPLES / "simulated"
    summary = spark_ingest.ingest(spark, tmp_path / "lake", [fleet])
    with Lab(":memory:") as db, Lab(lake=tmp_path / "lake") as lk:
        assert results(db.ingest(fleet)) == results(summary)
        assert rows(db, "steps").height > 0
        assert_same_store(db, lk)


def _small_bundle(dest: Path) -> Path:
    """One run, its nodes' kernel logs, the inventory and the scheduler's accounting, from the sample bundle."""
    src = SAMPLES / "bundle"
    shutil.copytree(src / "runs" / "mm7b-sft", dest / "runs" / "mm7b-sft")
    for node in ("bor-001", "bor-002"):
        shutil.copytree(src / "nodes" / node, dest / "nodes" / node)
    (dest / "scheduler").mkdir()
    shutil.copy(src / "scheduler" / "sacct.txt", dest / "scheduler" / "sacct.txt")
    shutil.copy(src / "inventory.toml", dest / "inventory.toml")
    return dest


def test_a_rerun_reads_only_new_grown_or_changed_files_and_reports_bad_ones(spark, tmp_path: Path) -> None:
    src, out = _small_bundle(tmp_path / "bundle"), tmp_path / "lake"
    with Lab(tmp_path / "db.duckdb") as db:
        first = spark_ingest.ingest(spark, out, [src])
        assert results(db.ingest(src)) == results(first)
        parquet = sorted(out.rglob("*.parquet"))
        again = spark_ingest.ingest(spark, out, [src])
        assert set(again.counts()) == {"unchanged"} and sorted(out.rglob("*.parquet")) == parquet
        run = src / "runs" / "mm7b-sft"
        log = run / "attempt-2" / "bor-001.log"
        lines = log.read_text().splitlines(keepends=True)
        with open(log, "a") as f:  # grown
            f.writelines(lines[:40])
        kern = src / "nodes" / "bor-001" / "kern.log"  # changed (cut short)
        kern.write_text("".join(kern.read_text().splitlines(keepends=True)[:-2]))
        shutil.copy(run / "attempt-1" / "bor-002.log", run / "attempt-1" / "bor-002-copy.log")  # new
        (run / "attempt-1" / "bor-002").mkdir()  # the same content for the same host: a copy, not read again
        shutil.copy(run / "attempt-1" / "bor-002.log", run / "attempt-1" / "bor-002" / "again.log")
        (run / "attempt-1" / "empty.log").write_text("")
        (run / "attempt-1" / "broken.log.gz").write_bytes(gzip.compress("".join(lines).encode())[:30])
        second = spark_ingest.ingest(spark, out, [src])
        assert results(db.ingest(src)) == results(second)
        assert {s: n for s, n in second.counts().items() if s != "unchanged"} == {
            "appended": 1, "changed": 1, "ingested": 1, "skipped": 1, "error": 1}
        assert any("broken.log.gz" in m and "gzip" in m for m in second.errors)
        with Lab(lake=out) as lk:
            assert_same_store(db, lk)


def test_ingest_engine_spark_from_the_command_line(spark, tmp_path: Path) -> None:
    src, out = _small_bundle(tmp_path / "bundle"), tmp_path / "lake"
    res = CliRunner().invoke(main, ["ingest", "--engine", "spark", "--lake", str(out), "--json", str(src)])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["by_status"]["ingested"] > 5
    runs = CliRunner().invoke(main, ["--lake", str(out), "runs", "--json"])
    assert runs.exit_code == 0 and [r["run"] for r in json.loads(runs.stdout)] == ["mm7b-sft"]
    res = CliRunner().invoke(main, ["ingest", "--engine", "spark", str(src)])
    assert res.exit_code == 2 and "--lake" in res.stderr

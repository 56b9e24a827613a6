"""`clusterlab ingest --engine spark` on URLs: files listed and read through Spark's Hadoop file systems.

file:// URLs take the code path s3a://, gs:// and hdfs:// take (Hadoop's FileSystem for the root, the binaryFile
source for the listing, `binaryFiles` for the bytes); only the connector differs. The lake must hold the rows the
DuckDB path gives the same files read from disk, row for row, with each file named by its URL.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import shutil
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from lake_compare import assert_same_store, rows

from clusterlab import Lab
from clusterlab.cli import main
from clusterlab.ingest.driver import IngestSummary, walk_tasks
from clusterlab.scale import spark_ingest, spark_sources
from conftest import SAMPLES

pytestmark = pytest.mark.slow
KEPT = {"0.", "1.", "2.", "3."}  # the ranks whose step files the slice keeps
ODD_NAME = "kern,old [1] {x}.log"  # a comma, brackets and braces: Hadoop reads input paths as comma lists of globs


def _bundle(dest: Path) -> Path:
    """A slice of the sample bundle: a run's attempt (logs, per-rank steps), kernel logs (one with a boot_time),
    the scheduler's accounting, the inventory; a log in two gzip members; a copy of a log under an odd name."""
    src = SAMPLES / "bundle"
    shutil.copytree(src / "runs" / "mm7b-sft" / "attempt-2", dest / "runs" / "mm7b-sft" / "attempt-2",
                    ignore=lambda _, names: [n for n in names if n.startswith("rank-") and n[5:7] not in KEPT])
    shutil.copy(src / "runs" / "mm7b-sft" / "run.toml", dest / "runs" / "mm7b-sft" / "run.toml")
    for node in ("bor-001", "east-003"):
        shutil.copytree(src / "nodes" / node, dest / "nodes" / node)
    (dest / "scheduler").mkdir()
    shutil.copy(src / "scheduler" / "sacct.txt", dest / "scheduler" / "sacct.txt")
    shutil.copy(src / "inventory.toml", dest / "inventory.toml")
    text = (src / "runs" / "mm7b-sft" / "attempt-1" / "bor-002.log").read_bytes()
    (dest / "runs" / "mm7b-sft" / "attempt-1").mkdir()
    # NOTE: gzip files may hold several members (RFC 1952 section 2.2); zcat and Python read them as one text
    (dest / "runs" / "mm7b-sft" / "attempt-1" / "bor-002.log.gz").write_bytes(
        gzip.compress(text[: len(text) // 2]) + gzip.compress(text[len(text) // 2:]))
    (dest / "nodes" / "bor-002").mkdir()
    shutil.copy(src / "nodes" / "bor-001" / "kern.log", dest / "nodes" / "bor-002" / ODD_NAME)
    return dest


def url(path: Path) -> str:
    return f"file://{path}"


def local(text: str, src: Path) -> str:
    """What the DuckDB path says where the Spark path names a URL: a file by its path, relative to the root's
    parent in displays and messages."""
    return text.replace(url(src.parent) + "/", "")


def results(summary, src: Path | None = None) -> list[tuple]:
    fix = (lambda t: local(t, src)) if src is not None else (lambda t: t)
    return [(fix(f.display), f.status, [fix(m) for m in f.messages], f.skipped_why and fix(f.skipped_why))
            for f in summary.files]


def test_file_urls_give_the_rows_of_the_same_files_read_from_disk_and_are_read_again_only_when_listed_changed(
        spark, tmp_path: Path) -> None:
    src, out = _bundle(tmp_path / "bundle"), tmp_path / "lake"
    summary = spark_ingest.ingest(spark, out, [url(src)])
    assert {f.display for f in summary.files} >= {url(src / "nodes" / "bor-002" / ODD_NAME),
                                                  url(src / "runs" / "mm7b-sft" / "attempt-1" / "bor-002.log.gz")}
    with Lab(":memory:") as db, Lab(lake=out) as lk:
        assert results(db.ingest(src)) == results(summary, src)
        assert summary.counts() == {"ingested": 11} and rows(db, "steps").height and rows(db, "events").height
        assert rows(db, "events").filter(pl.col("file_path").str.ends_with(ODD_NAME)).height
        assert_same_store(db, lk)
        assert lk.runs()["run"].to_list() == ["mm7b-sft"] and lk.sql("SELECT * FROM nodes").height > 2
    parquet = sorted(out.rglob("*.parquet"))
    assert spark_ingest.ingest(spark, out, [url(src)]).counts() == {"unchanged": 11}
    assert sorted(out.rglob("*.parquet")) == parquet
    log = src / "runs" / "mm7b-sft" / "attempt-2" / "bor-002.log"
    before, text = log.stat(), log.read_text()
    log.write_text(text.replace("OMP", "MPI"))  # the same size: only its time says it changed
    assert log.read_text() != text and log.stat().st_size == before.st_size
    os.utime(log, ns=(before.st_atime_ns, before.st_mtime_ns))
    # NOTE: the listing is trusted, as an object store's size and time are (they change with every write)
    assert spark_ingest.ingest(spark, out, [url(src)]).counts() == {"unchanged": 11}
    os.utime(log)
    os.utime(src / "scheduler" / "sacct.txt")  # a new time, the same bytes: hashed, and found unchanged
    touched = spark_ingest.ingest(spark, out, [url(src)])  # (the rows of a changed file: the next test)
    assert {f.display: f.status for f in touched.files if f.status != "unchanged"} == {url(log): "changed"}


def test_grown_changed_new_and_broken_files_at_urls_as_the_duckdb_path_reads_them(spark, tmp_path: Path) -> None:
    src, out = _bundle(tmp_path / "bundle"), tmp_path / "lake"
    with Lab(tmp_path / "db.duckdb") as db:
        assert results(db.ingest(src)) == results(spark_ingest.ingest(spark, out, [url(src)]), src)
        run = src / "runs" / "mm7b-sft"
        log = run / "attempt-2" / "bor-001.log"
        lines = log.read_text().splitlines(keepends=True)
        with open(log, "a") as f:  # grown
            f.writelines(lines[:40])
        gz = run / "attempt-1" / "bor-002.log.gz"  # grown by one more gzip member
        gz.write_bytes(gz.read_bytes() + gzip.compress("".join(lines[:5]).encode()))
        kern = src / "nodes" / "bor-001" / "kern.log"  # changed (cut short)
        kern.write_text("".join(kern.read_text().splitlines(keepends=True)[:-2]))
        shutil.copy(run / "attempt-2" / "bor-002.log", run / "attempt-2" / "bor-002-copy.log")  # new
        (run / "attempt-2" / "empty.log").write_text("")
        (run / "attempt-2" / "broken.log.gz").write_bytes(gzip.compress("".join(lines).encode())[:30])
        second = spark_ingest.ingest(spark, out, [url(src)])
        assert results(db.ingest(src)) == results(second, src)
        assert {s: n for s, n in second.counts().items() if s != "unchanged"} == {
            "appended": 2, "changed": 1, "ingested": 1, "skipped": 1, "error": 1}
        broken = url(run / "attempt-2" / "broken.log.gz")
        assert [m for m in second.errors if "gzip" in m] and all(m.startswith(broken) for m in second.errors)
        with Lab(lake=out) as lk:
            assert_same_store(db, lk)


def test_url_files_inventories_and_bad_urls_from_the_command_line(spark, tmp_path: Path) -> None:
    src, out = _bundle(tmp_path / "bundle"), tmp_path / "lake"
    log = src / "runs" / "mm7b-sft" / "attempt-2" / "bor-001.log"
    inventory = src / "inventory.toml"
    shutil.move(inventory, tmp_path / "fleet.toml")
    res = CliRunner().invoke(main, ["ingest", "--engine", "spark", "--lake", str(out), "--json", "--inventory",
                                    url(tmp_path / "fleet.toml"), url(log), url(tmp_path / "gone"),
                                    "nosuchfs://bucket/logs"])
    assert res.exit_code == 2, res.output
    doc = json.loads(res.stdout)
    assert doc["by_status"] == {"ingested": 1, "error": 2} and doc["inventory"]["nodes"] > 2
    assert doc["problems"][0] == f"{url(tmp_path / 'gone')}: no such file or directory"
    assert doc["problems"][1].startswith("nosuchfs://bucket/logs: no Hadoop file system for this scheme")
    with Lab(lake=out) as lk:
        got = lk.sql("SELECT path, run, attempt, host FROM ingested_files").rows()
        assert got == [(url(log), "mm7b-sft", 2, "bor-001")]
        assert lk.sql("SELECT count(*) FROM nodes").item() > 2


def test_a_file_gone_between_the_listing_and_the_read_is_reported_and_the_rest_read(spark, tmp_path: Path) -> None:
    src = _bundle(tmp_path / "bundle")
    log = src / "runs" / "mm7b-sft" / "attempt-2" / "bor-001.log"
    with Lab(":memory:") as db:
        walked = [(dataclasses.replace(t, display=url(t.path)), dataclasses.replace(c, path=url(t.path)),
                   spark_sources.Listed(f"file:{t.path}", url(t.path), t.path.stat().st_size, 0))
                  for t, c in walk_tasks(db.con, [src], None, None, None, None, IngestSummary())
                  if t.path.parent == log.parent]
        results_by_order, drafts, known = spark_sources.plan(db.con, walked, {}, 0)
    log.unlink()  # gone after the listing: Hadoop refuses the whole read
    parts = spark_ingest._parse(spark, [], drafts, known, tmp_path, results_by_order)
    read = {pf.result.display: pf.result.status for _, pfs, _ in parts for pf in pfs}
    assert read == {url(log.parent / "bor-002.log"): "ingested"}
    assert [r.messages for r in results_by_order.values()] == [[f"{url(log)}: cannot read: gone since it was listed"]]

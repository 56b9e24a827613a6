"""The Parquet lake: a store exported as hive-partitioned Parquet, and read back as the same store."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pyarrow.dataset as ds
import pytest
from click.testing import CliRunner

from clusterlab import Lab
from clusterlab.account.ledger import LedgerError
from clusterlab.cli import main
from clusterlab.scale import lake

EVIDENCE = ["events", "steps", "rank_steps", "checkpoints", "nccl_ranks", "jobs", "facts", "unmatched_lines"]


@pytest.fixture(scope="module")
def exported(bundle_db_copy: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample bundle's store, exported once for the module."""
    out = tmp_path_factory.mktemp("lake") / "lake"
    with Lab(bundle_db_copy, read_only=True) as lab:
        rows = lab.export_parquet(out)
    assert rows["events"] > 0 and rows["ingested_files"] > 0
    return out


def rows_by_file_line(lab: Lab, table: str) -> pl.DataFrame:
    """A table's rows with the file's path for its id (ids are the store's own), in one order."""
    return lab.sql(f"SELECT f.path AS file_path, t.* EXCLUDE (file_id) FROM {table} t "
                   f"JOIN ingested_files f USING (file_id)").sort(pl.all())


def test_attach_gives_every_table_row_for_row(bundle_db_copy: Path, exported: Path) -> None:
    with Lab(bundle_db_copy, read_only=True) as db, Lab(lake=exported) as lk:
        for table in EVIDENCE:
            a, b = rows_by_file_line(db, table), rows_by_file_line(lk, table)
            assert a.height > 0 or table == "unmatched_lines"
            assert a.schema == b.schema and a.equals(b), table
        for table in ["attempts", "runs", "nodes", "clusters", "providers"]:
            assert db.table(table).sort(pl.all()).equals(lk.table(table).sort(pl.all())), table


def test_attribution_over_the_lake_is_the_one_over_the_database(bundle_db_copy: Path, exported: Path) -> None:
    with Lab(bundle_db_copy, read_only=True) as db, Lab(lake=exported) as lk:
        runs = db.runs()["run"].to_list()
        assert lk.runs()["run"].to_list() == runs
        for run in runs:
            try:
                want = db.attribute(run)
            except LedgerError as e:  # a run without a ledger has none over the lake either, for the same reason
                with pytest.raises(LedgerError, match=re.escape(str(e))):
                    lk.attribute(run)
                continue
            got = lk.attribute(run)
            assert want.ledger.equals(got.ledger), run
            assert want.incidents.equals(got.incidents), run
            assert want.evidence.equals(got.evidence), run
        assert db.incidents().equals(lk.incidents())


def test_the_lake_is_hive_partitioned_by_run_and_source(bundle_db_copy: Path, exported: Path) -> None:
    marker = json.loads((exported / lake.MARKER).read_text())
    assert marker["tables"]["events"] == ["run", "source"]
    assert marker["tables"]["ingested_files"] == ["run"]
    assert marker["tables"]["annotations"] == ["date"]
    assert marker["tables"]["nodes"] == []
    assert list((exported / "events" / "run=llama8b-pretrain").glob("source=*/*.parquet"))
    assert list((exported / "events" / f"run={lake.NULL_DIR}").glob("source=kernel/*.parquet"))
    # another reader (pyarrow, as pandas and Spark read Hive layouts) sees the same rows
    events = ds.dataset(exported / "events", format="parquet", partitioning="hive").to_table()
    with Lab(bundle_db_copy, read_only=True) as db:
        want = db.sql("SELECT run, source, count(*) AS n FROM events GROUP BY ALL")
    got = (pl.from_arrow(events).select(pl.col("run").cast(pl.String), pl.col("source").cast(pl.String))
           .with_columns(pl.col("run").replace(lake.NULL_DIR, None)).group_by("run", "source").len("n"))
    assert want.sort(pl.all()).equals(got.cast({"n": pl.Int64}).sort(pl.all()))


def test_run_names_survive_the_directory_names(tmp_path: Path) -> None:
    # a run named like a number stays text; slashes, spaces, = and % are escaped and come back
    names = ["007", "a/b c=d%", "ünï"]
    with Lab(":memory:") as lab:
        for i, run in enumerate(names, 1):
            lab.con.execute("INSERT INTO ingested_files (file_id, path, run) VALUES (?, ?, ?)", [i, f"/x/{i}", run])
            lab.con.execute("INSERT INTO events (file_id, source, run, line, text) VALUES (?, 'torch', ?, 1, 't')",
                            [i, run])
        lab.export_parquet(tmp_path / "lake")
    with Lab(lake=tmp_path / "lake") as lk:
        got = lk.sql("SELECT run, source, line, text FROM events ORDER BY file_id")
    assert got["run"].to_list() == names and got.schema["run"] == pl.String


def test_a_lake_is_read_not_ingested_into(exported: Path, tmp_path: Path) -> None:
    with Lab(lake=exported) as lk, pytest.raises(ValueError, match="read here, not written"):
        lk.ingest(tmp_path)


def test_export_and_lake_from_the_command_line(bundle_db_copy: Path, tmp_path: Path) -> None:
    out = tmp_path / "lake"
    res = CliRunner().invoke(main, ["--db", str(bundle_db_copy), "export", "--parquet", str(out), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["rows"]["events"] > 0
    by_db = CliRunner().invoke(main, ["--db", str(bundle_db_copy), "incidents", "--json"])
    by_lake = CliRunner().invoke(main, ["--lake", str(out), "incidents", "--json"])
    assert by_lake.exit_code == 0, by_lake.output
    assert json.loads(by_lake.stdout) == json.loads(by_db.stdout) and json.loads(by_db.stdout)


def test_a_folder_that_is_no_lake_is_one_line(bundle_db_copy: Path, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    res = CliRunner().invoke(main, ["--db", str(bundle_db_copy), "export", "--parquet", str(tmp_path)])
    assert res.exit_code == 2 and "not empty and not a clusterlab lake" in res.stderr
    assert (tmp_path / "notes.txt").read_text() == "mine"
    res = CliRunner().invoke(main, ["--lake", str(tmp_path), "runs"])
    assert res.exit_code == 2 and "not a clusterlab lake" in res.stderr and "Traceback" not in res.output


def test_one_writer_at_a_time(bundle_db_copy: Path, tmp_path: Path) -> None:
    out = tmp_path / "lake"
    out.mkdir()
    with lake.writing(out), Lab(bundle_db_copy, read_only=True) as db:
        with pytest.raises(lake.LakeError, match="another clusterlab is writing this lake"):
            db.export_parquet(out)
        assert not (out / lake.MARKER).exists()
    assert not (out / lake.LOCK).exists()


def test_reports_and_relaunch_plans_over_the_lake_are_the_database_ones(bundle_db_copy: Path, exported: Path) -> None:
    with Lab(bundle_db_copy, read_only=True) as db, Lab(lake=exported) as lk:
        run = db.runs().sort("gpus", descending=True)["run"][0]
        assert lk.relaunch_plan(run) == db.relaunch_plan(run)
        incident = db.incidents()["incident_id"][0]
        assert repr(lk.report(incident)) == repr(db.report(incident))
        lk.annotate(incident, note="seen over the lake")  # written to the lake's own database, not the files
        assert lk.sql("SELECT note FROM annotations")["note"].to_list() == ["seen over the lake"]


def test_annotate_over_a_lake_alone_says_nothing_would_keep_it(bundle_db_copy: Path, exported: Path) -> None:
    with Lab(bundle_db_copy, read_only=True) as db:
        incident = db.incidents()["incident_id"][0]
    res = CliRunner().invoke(main, ["--lake", str(exported), "annotate", incident, "--note", "x"])
    assert res.exit_code == 2 and "annotation over a lake is kept in a database" in res.stderr, res.output


def test_the_report_commands_over_a_lake_answer_as_over_the_database(bundle_db_copy: Path, exported: Path,
                                                                      tmp_path: Path) -> None:
    with Lab(bundle_db_copy, read_only=True) as db:
        incident = db.incidents()["incident_id"][0]
        run = db.runs().sort("gpus", descending=True)["run"][0]
    for source in (["--db", str(bundle_db_copy)], ["--lake", str(exported)]):
        week = CliRunner().invoke(main, [*source, "scorecard", "--week", "2026-W48", "--out", str(tmp_path / "s")])
        assert week.exit_code == 0 and "No providers" not in week.output, (source, week.output)
        rep = CliRunner().invoke(main, [*source, "report", incident, "--out", str(tmp_path / "r"), "--format", "md"])
        assert rep.exit_code == 0, (source, rep.output)
        plan = CliRunner().invoke(main, [*source, "relaunch", "--run", run, "--json"])
        assert plan.exit_code == 0 and json.loads(plan.stdout)["run"] == run, (source, plan.output)


def test_a_lake_written_before_a_column_was_added_reads_it_as_empty(exported: Path, tmp_path: Path) -> None:
    # issue 28 added the dating columns: a lake exported by the version before has none of them
    import shutil

    import pyarrow.parquet as pq

    old = tmp_path / "old"
    shutil.copytree(exported, old)
    for f in lake.files_of(old, "events"):
        t = pq.read_table(f)
        pq.write_table(t.drop_columns([c for c in ("ts_lo", "ts_hi", "dated") if c in t.column_names]), f)
    with Lab(lake=old) as lk:
        ev = lk.sql("SELECT count(*) AS n, count(ts_lo) AS lo FROM events")
        assert ev["n"][0] > 0 and ev["lo"][0] == 0
        assert lk.incidents().height  # and the analyses read it

"""The command line: documented, JSON where asked, and the same answers as the Python API."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from clusterlab import Lab
from clusterlab.cli import main
from conftest import ROOT, SAMPLES

README = (ROOT / "README.md").read_text()


@pytest.mark.parametrize("name", sorted(main.commands))
def test_every_command_has_help_and_a_line_in_the_readme(name: str) -> None:
    res = CliRunner().invoke(main, [name, "--help"])
    assert res.exit_code == 0
    assert main.commands[name].help and len(main.commands[name].help) > 20
    assert f"clusterlab {name}" in README


@pytest.mark.parametrize("group", sorted(n for n, c in main.commands.items() if hasattr(c, "commands")))
def test_a_subcommand_shows_its_help_without_a_database(group: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # no ./clusterlab.duckdb here
    for sub in main.commands[group].commands:
        res = CliRunner().invoke(main, [group, sub, "--help"])
        assert res.exit_code == 0 and "Usage:" in res.output, (group, sub, res.output)
    assert CliRunner().invoke(main, [group, sorted(main.commands[group].commands)[0]]).exit_code == 2


@pytest.fixture(scope="module")
def bundle_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("cli") / "b.duckdb"
    res = CliRunner().invoke(main, ["--db", str(db), "ingest", "--json", str(SAMPLES / "bundle")])
    assert res.exit_code == 0, res.output + res.stderr
    doc = json.loads(res.stdout)
    assert doc["files"] > 10 and doc["rows"]["events"] > 0
    return db


def test_runs_json_matches_the_api(bundle_db: Path) -> None:
    res = CliRunner().invoke(main, ["--db", str(bundle_db), "runs", "--json"])
    doc = json.loads(res.stdout)
    with Lab(bundle_db) as lab:
        assert [r["run"] for r in doc] == lab.runs()["run"].to_list()
    assert {"run", "attempts", "gpus", "wall_hours"} <= set(doc[0])


def test_events_json_has_the_documented_fields(bundle_db: Path) -> None:
    res = CliRunner().invoke(main, ["--db", str(bundle_db), "events", "--mode", "gpu_fell_off_bus", "--json"])
    doc = json.loads(res.stdout)
    assert doc, "the bundle has an Xid 79"
    assert list(doc[0]) == ["ts", "host", "source", "kind", "failure_mode", "xid", "rank", "file", "line", "text"]
    assert all(e["failure_mode"] == "gpu_fell_off_bus" for e in doc)


def test_demo_runs_on_the_embedded_samples(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["demo", "--out", str(tmp_path / "demo")])
    assert res.exit_code == 0, res.output + res.stderr
    assert "# runs" in res.output and "llama8b-pretrain" in res.output
    assert (tmp_path / "demo" / "clusterlab.duckdb").exists()
    assert (tmp_path / "demo" / ".clusterlab-generated").is_file()  # a later demo may replace it


def test_db_and_json_are_accepted_before_and_after_the_command(tmp_path: Path, bundle_db: Path) -> None:
    runner = CliRunner()
    db = tmp_path / "after.duckdb"
    res = runner.invoke(main, ["ingest", str(SAMPLES / "bundle" / "runs" / "ds1b-ablation"), "--db", str(db), "--json"])
    assert res.exit_code == 0, res.output
    assert db.exists() and json.loads(res.stdout)["files"] > 0
    after = runner.invoke(main, ["runs", "--db", str(bundle_db), "--json"])
    before = runner.invoke(main, ["--db", str(bundle_db), "--json", "runs"])
    assert after.exit_code == before.exit_code == 0, after.output + before.output
    assert json.loads(after.stdout) == json.loads(before.stdout) and json.loads(after.stdout)
    res = runner.invoke(main, ["--db", str(bundle_db), "--json", "annotate", "x:1:end"])
    assert res.exit_code == 2 and res.stderr.strip() == "error: annotate has no --json output"


@pytest.mark.parametrize("args", [["runs"], ["events"], ["incidents"], ["hosts"], ["attribute", "--run", "r"],
                                  ["annotate", "r:1:end", "--note", "n"], ["scorecard", "--week", "2026-W48"],
                                  ["report", "r:1:end"], ["relaunch", "--run", "r"],
                                  ["relaunch", "--run", "r", "--execute"]])
def test_a_reading_command_refuses_a_missing_database_and_creates_none(tmp_path: Path, args: list[str]) -> None:
    db = tmp_path / "typo.duckdb"
    for argv in (["--db", str(db), *args], [*args, "--db", str(db)]):
        res = CliRunner().invoke(main, argv)
        assert res.exit_code == 2, (argv, res.output)
        why = "no such database (check --db; `clusterlab ingest` creates one)"
        assert res.stderr.splitlines() == [f"error: {db}: {why}"]
        assert not db.exists()


@pytest.mark.parametrize("content", [b"", b"run,host\nr,h\n" * 20])
def test_a_file_that_is_not_a_duckdb_database_is_one_line_and_exit_2(tmp_path: Path, content: bytes) -> None:
    db = tmp_path / "notes.csv"
    db.write_bytes(content)
    for args in (["runs"], ["ingest", str(SAMPLES / "bundle" / "inventory.toml")], ["scorecard", "--week", "2026-W48"]):
        res = CliRunner().invoke(main, ["--db", str(db), *args])
        assert res.exit_code == 2, res.output
        assert len(res.stderr.splitlines()) == 1 and "not a DuckDB database" in res.stderr
    assert db.read_bytes() == content


def test_a_database_another_process_holds_is_one_line_naming_its_pid(tmp_path: Path) -> None:
    db = tmp_path / "held.duckdb"
    log = str(SAMPLES / "kernel" / "dmesg_iso.log")
    assert CliRunner().invoke(main, ["--db", str(db), "ingest", "--host", "h1", log]).exit_code == 0
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time\ncon = duckdb.connect(sys.argv[1])\n"
                               "print('held', flush=True)\ntime.sleep(60)", str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        for args in (["runs"], ["ingest", "--host", "h1", log]):
            res = CliRunner().invoke(main, ["--db", str(db), *args])
            assert res.exit_code == 2, res.output
            assert res.stderr.splitlines() == [f"error: {db}: another clusterlab is writing to this database "
                                               f"(pid {holder.pid})"]
    finally:
        holder.kill()
        holder.wait()


def test_events_refuses_an_unknown_mode_and_lists_the_known_ones(bundle_db: Path) -> None:
    res = CliRunner().invoke(main, ["--db", str(bundle_db), "events", "--mode", "bogus"])
    assert res.exit_code == 2 and len(res.stderr.splitlines()) == 1
    assert "bogus" in res.stderr and "gpu_fell_off_bus" in res.stderr and "nccl_timeout" in res.stderr


def test_events_says_how_many_rows_it_left_out(bundle_db: Path) -> None:
    with Lab(bundle_db, read_only=True) as lab:
        total = lab.events().height
    assert total > 50
    res = CliRunner().invoke(main, ["--db", str(bundle_db), "events"])
    assert res.exit_code == 0 and f"50 of {total} shown (--limit N, or --json for all)" in res.stdout
    # (wide enough that no column is left out: the line that says so would be one more)
    res = CliRunner().invoke(main, ["--db", str(bundle_db), "events", "--limit", "7"], env={"COLUMNS": "200"})
    lines = res.stdout.splitlines()
    assert len(lines) == 2 + 7 + 1 and lines[-1] == f"7 of {total} shown (--limit N, or --json for all)"
    res = CliRunner().invoke(main, ["--db", str(bundle_db), "events", "--limit", str(total)], env={"COLUMNS": "200"})
    assert "shown" not in res.stdout.splitlines()[-1]


@pytest.mark.parametrize("columns", [80, 160])
def test_tables_fit_the_terminal_and_never_cut_an_incident_id(bundle_db: Path, columns: int) -> None:
    with Lab(bundle_db, read_only=True) as lab:
        ids = lab.incidents()["incident_id"].to_list()
    for args in (["incidents"], ["events"], ["hosts"], ["runs"], ["attribute", "--run", "llama8b-pretrain"]):
        res = CliRunner().invoke(main, ["--db", str(bundle_db), *args], env={"COLUMNS": str(columns)})
        assert res.exit_code == 0, res.output
        lines = [ln for ln in res.stdout.splitlines() if not ln.startswith(("note: ", "llama8b-pretrain: "))]
        assert max(map(len, lines)) <= columns, (args, [ln for ln in lines if len(ln) > columns])
        if args == ["incidents"]:
            assert all(any(ln.startswith(i + " ") for ln in lines) for i in ids), res.stdout
    res = CliRunner().invoke(main, ["--db", str(bundle_db), "events", "--kind", "xid"], env={"COLUMNS": "160"})
    assert "…" in res.stdout and "not shown" not in res.stdout  # the text column is cut, no column dropped


def test_incidents_are_sorted_costliest_first(bundle_db: Path) -> None:
    doc = json.loads(CliRunner().invoke(main, ["--db", str(bundle_db), "incidents", "--json"]).stdout)
    lost = [i["gpu_hours_lost"] for i in doc]
    known = [x for x in lost if x is not None]
    assert len(known) > 3 and known == sorted(known, reverse=True) and lost[: len(known)] == known


def test_hosts_lists_the_costliest_hosts_with_their_incident_history(bundle_db: Path) -> None:
    res = CliRunner().invoke(main, ["--db", str(bundle_db), "hosts", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    with Lab(bundle_db, read_only=True) as lab:
        incidents = lab.incidents()
        assert [h["host"] for h in doc] == lab.hosts()["host"].to_list()
    top = doc[0]
    mine = incidents.filter(pl.col("host") == top["host"])
    assert top["gpu_hours_lost"] == pytest.approx(mine["gpu_hours_lost"].sum())
    assert top["incidents"] == mine.height and top["failure_modes"] == mine["failure_mode"][0]
    assert [h["gpu_hours_lost"] for h in doc] == sorted((h["gpu_hours_lost"] for h in doc), reverse=True)
    assert {"cluster", "provider", "runs", "usd_lost", "first_incident", "last_incident"} <= set(top)
    empty = CliRunner().invoke(main, ["--db", str(bundle_db), "hosts", "--week", "2026-W40", "--json"])
    assert json.loads(empty.stdout) == []
    bad = CliRunner().invoke(main, ["--db", str(bundle_db), "hosts", "--week", "soon"])
    assert bad.exit_code == 2 and len(bad.stderr.splitlines()) == 1 and "2026-W48" in bad.stderr


def test_costliest_hosts_counts_repeats_and_keeps_unknown_cost_unknown() -> None:
    from clusterlab.reports.hosts import costliest_hosts

    t = dt.datetime(2026, 11, 24, 8)
    inc = pl.DataFrame({"incident_id": ["a:1:end", "a:2:end", "b:1:end", "c:1:end", "d:1:end"],
                        "run": ["a", "a", "b", "c", "d"], "host": ["h1", "h1", "h1", "h2", None],
                        "cluster": ["c1"] * 5, "provider": ["p"] * 5,
                        "failure_mode": ["network", "gpu_fell_off_bus", "network", "nccl_timeout", "network"],
                        "gpu_hours_lost": [1.0, 2.0, 0.5, None, 9.0], "usd_lost": [2.0, 4.0, 1.0, None, 18.0],
                        "root_ts": [t, t + dt.timedelta(days=1), t + dt.timedelta(days=9), t, t]})
    out = costliest_hosts(inc).to_dicts()
    assert [h["host"] for h in out] == ["h1", "h2"]
    assert (out[0]["incidents"], out[0]["runs"], out[0]["gpu_hours_lost"]) == (3, 2, 3.5)
    assert out[0]["failure_modes"] == "network x2, gpu_fell_off_bus"
    assert out[0]["last_incident"] == t + dt.timedelta(days=9) and out[1]["gpu_hours_lost"] is None
    week = costliest_hosts(inc, "2026-W48").to_dicts()
    assert week[0]["incidents"] == 2 and week[0]["gpu_hours_lost"] == 3.0


def test_scorecard_without_out_prints_a_summary_and_where_it_wrote(bundle_db: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["--db", str(bundle_db), "scorecard", "--week", "2026-W48"])
    assert res.exit_code == 0, res.output
    assert "<" not in res.stdout and len(res.stdout) < 2000
    assert res.stdout.startswith("scorecard 2026-W48: 2 provider(s)") and "1. " in res.stdout and "score" in res.stdout
    written = tmp_path / "clusterlab-reports" / "scorecard-2026-W48.html"
    assert written.read_text().startswith("<!DOCTYPE html>")
    assert f"wrote {written.relative_to(tmp_path)} (the default --out)" in res.stdout
    res = CliRunner().invoke(main, ["--db", str(bundle_db), "scorecard", "--week", "2026-W48", "--out", "-"])
    assert res.stdout.startswith("<!DOCTYPE html>")


SMALL_SIM = ["--providers", "1", "--clusters-per-provider", "1", "--nodes-per-cluster", "2", "--days", "0.05"]


def test_simulate_refuses_a_folder_it_did_not_make_unless_forced(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work")
    res = CliRunner().invoke(main, ["simulate", "--out", str(out), *SMALL_SIM])
    assert res.exit_code == 2 and len(res.stderr.splitlines()) == 1 and "--force" in res.stderr
    assert (out / "thesis.tex").read_text() == "years of work"
    for args in ([], []):  # a folder simulate made is its own to replace, twice over
        res = CliRunner().invoke(main, ["simulate", "--out", str(tmp_path / "sim"), *SMALL_SIM, *args])
        assert res.exit_code == 0, res.output
        assert (tmp_path / "sim" / ".clusterlab-generated").is_file()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert CliRunner().invoke(main, ["simulate", "--out", str(empty), *SMALL_SIM]).exit_code == 0
    res = CliRunner().invoke(main, ["simulate", "--out", str(out), *SMALL_SIM, "--force"])
    assert res.exit_code == 0 and not (out / "thesis.tex").exists()


def test_demo_refuses_a_folder_it_did_not_make(tmp_path: Path) -> None:
    out = tmp_path / "notes"
    out.mkdir()
    (out / "keep.md").write_text("mine")
    res = CliRunner().invoke(main, ["demo", "--out", str(out)])
    assert res.exit_code == 2 and len(res.stderr.splitlines()) == 1 and "not made by clusterlab" in res.stderr
    assert (out / "keep.md").read_text() == "mine"
    res = CliRunner().invoke(main, ["demo", "--out", str(tmp_path)], catch_exceptions=False)
    assert res.exit_code == 2 and (out / "keep.md").exists()


def test_incidents_of_a_run_the_store_does_not_hold_is_one_line(tmp_path) -> None:
    db = tmp_path / "i.duckdb"
    assert CliRunner().invoke(main, ["--db", str(db), "ingest", str(SAMPLES / "bundle")]).exit_code == 0
    res = CliRunner().invoke(main, ["--db", str(db), "incidents", "--run", "llama8b"])
    assert res.exit_code == 2 and (res.exception is None or isinstance(res.exception, SystemExit)), res.output
    assert "error: no run 'llama8b' in the store; runs: ds1b-ablation, hf-eval-sweep, llama8b-pretrain" in res.stderr


def test_incidents_of_a_run_without_step_times_have_every_column(tmp_path) -> None:
    import shutil

    att = tmp_path / "b" / "runs" / "hf1" / "attempt-1"
    att.mkdir(parents=True)
    shutil.copy(SAMPLES / "hf_trainer" / "run_clm_resume.log", att / "train.log")  # a stock trainer log
    db = tmp_path / "h.duckdb"
    CliRunner().invoke(main, ["--db", str(db), "ingest", str(tmp_path / "b")])
    res = CliRunner().invoke(main, ["--db", str(db), "incidents", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert rows and all("gpu_hours_lost" in r for r in rows), rows


def test_annotating_an_incident_that_does_not_exist_is_refused(tmp_path) -> None:
    db = tmp_path / "a.duckdb"
    assert CliRunner().invoke(main, ["--db", str(db), "ingest", str(SAMPLES / "bundle")]).exit_code == 0
    for bad, why in [("nope:1:end", "no run in the store is named so"),
                     ("llama8b-pretrain:9:end", "llama8b-pretrain has")]:
        res = CliRunner().invoke(main, ["--db", str(db), "annotate", bad, "--note", "x"])
        assert res.exit_code == 2 and f"error: no incident '{bad}'; {why}" in res.stderr, res.output
    with Lab(db, read_only=True) as lab:
        assert lab.sql("SELECT count(*) AS n FROM annotations")["n"][0] == 0
    ok = CliRunner().invoke(main, ["--db", str(db), "annotate", "llama8b-pretrain:1:end", "--note", "seen"])
    assert ok.exit_code == 0 and "annotated llama8b-pretrain:1:end" in ok.output


def test_version() -> None:
    import clusterlab

    res = CliRunner().invoke(main, ["--version"])
    assert res.exit_code == 0 and res.output.strip() == f"clusterlab {clusterlab.__version__}"


def _json(res) -> object:
    assert res.exit_code == 0, res.output + res.stderr
    return json.loads(res.stdout)


def test_lake_is_accepted_before_and_after_the_command(bundle_db: Path, tmp_path: Path, monkeypatch) -> None:
    lake = tmp_path / "lake"
    assert CliRunner().invoke(main, ["--db", str(bundle_db), "export", "--parquet", str(lake)]).exit_code == 0
    monkeypatch.chdir(tmp_path)  # without --db, a lake makes no ./clusterlab.duckdb
    before = _json(CliRunner().invoke(main, ["--lake", str(lake), "incidents", "--json"]))
    assert before and before == _json(CliRunner().invoke(main, ["incidents", "--lake", str(lake), "--json"]))
    assert before == _json(CliRunner().invoke(main, ["incidents", "--json", "--lake", str(lake)]))
    runs = _json(CliRunner().invoke(main, ["runs", "--json", "--lake", str(lake)]))
    assert {r["run"] for r in runs} >= {"llama8b-pretrain", "mm7b-sft"}
    res = CliRunner().invoke(main, ["annotate", "llama8b-pretrain:1:end", "--lake", str(lake), "--note", "x"])
    assert res.exit_code == 2 and "give one (--db FILE) beside --lake" in res.stderr  # as before the command
    assert not (tmp_path / "clusterlab.duckdb").exists()


def test_a_command_group_takes_db_before_its_subcommand_too(bundle_db: Path, tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    shutil.copy(bundle_db, db)
    res = CliRunner().invoke(main, ["change", "--db", str(db), "add", "--cluster", "acme-east", "--at",
                                    "2026-11-24T12:00", "--what", "NCCL_IB_TIMEOUT=22"])
    assert res.exit_code == 0, res.output + res.stderr
    listed = _json(CliRunner().invoke(main, ["change", "--db", str(db), "list", "--json"]))
    assert [c["what"] for c in listed] == ["NCCL_IB_TIMEOUT=22"]
    assert listed == _json(CliRunner().invoke(main, ["change", "list", "--db", str(db), "--json"]))
    res = CliRunner().invoke(main, ["ticket", "--db", str(db), "add", "T-1", "opened", "--at", "2026-11-24T09:00",
                                    "--provider", "acme"])
    assert res.exit_code == 0, res.output + res.stderr
    missing = CliRunner().invoke(main, ["change", "--db", str(tmp_path / "typo.duckdb"), "list"])
    assert missing.exit_code == 2 and "no such database" in missing.stderr
    assert not (tmp_path / "typo.duckdb").exists()


def test_ticket_list_prints_json(bundle_db: Path, tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    shutil.copy(bundle_db, db)
    for step, at in (("opened", "2026-11-24T09:00"), ("acknowledged", "2026-11-24T11:30")):
        res = CliRunner().invoke(main, ["--db", str(db), "ticket", "add", "ACME-1", step, "--at", at,
                                        "--provider", "acme"])
        assert res.exit_code == 0, res.output + res.stderr
    doc = _json(CliRunner().invoke(main, ["--db", str(db), "ticket", "list", "--json"]))
    assert [t["ticket"] for t in doc] == ["ACME-1"] and doc[0]["provider"] == "acme"
    assert doc == _json(CliRunner().invoke(main, ["--db", str(db), "--json", "ticket", "list"]))


def test_incidents_json_names_each_field_as_the_table_does(bundle_db: Path) -> None:
    doc = _json(CliRunner().invoke(main, ["--db", str(bundle_db), "incidents", "--json"]))
    res = CliRunner().invoke(main, ["--db", str(bundle_db), "incidents"], env={"COLUMNS": "400"})
    header = res.stdout.splitlines()[0].split()
    assert header and set(header) <= set(doc[0]), set(header) - set(doc[0])
    assert {"incident_id", "root_ts", "exit_ts"} <= set(doc[0]) and not {"id", "start", "end"} & set(doc[0])
    attributed = _json(CliRunner().invoke(main, ["--db", str(bundle_db), "attribute", "--run", "llama8b-pretrain",
                                                 "--json"]))["incidents"]
    assert {i["incident_id"] for i in attributed} <= {i["incident_id"] for i in doc}


@pytest.mark.parametrize("columns", [80, 120, 160])
def test_a_failure_mode_is_never_cut_beside_long_incident_ids(columns: int) -> None:
    from clusterlab.cli.app import INCIDENT_TABLE_COLUMNS
    from clusterlab.cli.common import format_table

    t = dt.datetime(2026, 6, 1, 5, 24)
    ids = ["pretrain-borealis-1:2:straggler:bor1-010:3245", "pretrain-acme-2:2:checkpoint-lost:2070"]
    frame = pl.DataFrame({"incident_id": ids, "gpu_hours_lost": [20.684, 56.99],
                          "failure_mode": ["gpu_fell_off_bus", "checkpoint_lost"], "blame": ["provider"] * 2,
                          "host": ["bor1-010", None], "provider": ["borealis", "acme"],
                          "cluster": ["borealis-1", "acme-2"], "root_ts": [t, t], "exit_ts": [t, t],
                          "evidence_count": [3, 1], "overridden": [False, False], "status": ["open", "open"],
                          "run": ["pretrain-borealis-1", "pretrain-acme-2"], "attempt": [2, 2]})
    lines, _ = format_table(frame.select(INCIDENT_TABLE_COLUMNS), columns)
    assert max(map(len, lines)) <= columns
    assert "failure_mode" in lines[0].split()
    assert "gpu_fell_off_bus" in lines[2].split() and "checkpoint_lost" in lines[3].split(), lines


def test_unmatched_cuts_a_path_from_the_left_and_keeps_its_file_name(bundle_db: Path) -> None:
    doc = _json(CliRunner().invoke(main, ["--db", str(bundle_db), "unmatched", "--json"]))
    res = CliRunner().invoke(main, ["--db", str(bundle_db), "unmatched"], env={"COLUMNS": "100"})
    rows = res.stdout.splitlines()[2:]
    assert len(rows) == len(doc) and max(map(len, rows)) <= 100
    assert any("…" in r for r in rows)  # the paths had to be cut at 100 columns
    for r, u in zip(rows, doc, strict=True):
        cell = r.split()[-2]  # file, then line
        assert cell.endswith("/" + u["file"].rsplit("/", 1)[-1]) and u["file"].endswith(cell.lstrip("…")), r


@pytest.mark.parametrize("make", ["empty folder", "missing path", "missing beside a good file"])
def test_ingest_of_nothing_is_refused_and_creates_no_database(tmp_path: Path, make: str) -> None:
    db = tmp_path / "new.duckdb"
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)  # folders, but no file
    paths = {"empty folder": [empty], "missing path": [tmp_path / "nope"],
             "missing beside a good file": [SAMPLES / "kernel" / "dmesg_iso.log", tmp_path / "nope"]}[make]
    res = CliRunner().invoke(main, ["--db", str(db), "ingest", "--host", "h1", *map(str, paths)])
    assert res.exit_code == 2, res.output
    why = "no evidence files found (no files)" if make == "empty folder" else "no such file or directory"
    assert res.stderr.splitlines() == [f"error: {paths[-1]}: {why}; nothing ingested"]
    assert "files: 0" not in res.output and not db.exists()


def test_the_readme_command_lines_paste_as_written() -> None:
    """A ```bash block holds commands to paste (optional arguments in [..] go in a ```text block)."""
    import re
    import shlex

    blocks = re.findall(r"```bash\n(.*?)```", README, re.S)
    lines = [ln.split("#")[0].strip() for b in blocks for ln in b.splitlines()]
    commands = [ln[ln.index("clusterlab ") + len("clusterlab "):] for ln in lines if "clusterlab " in ln]
    assert any(c.startswith("demo") for c in commands)
    for c in commands:
        res = CliRunner().invoke(main, [*shlex.split(c), "--help"])  # parsed first: a stray word is exit 2
        assert res.exit_code == 0, (c, res.output)

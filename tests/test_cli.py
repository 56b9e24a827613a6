"""The command line: documented, JSON where asked, and the same answers as the Python API."""

from __future__ import annotations

import json
from pathlib import Path

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

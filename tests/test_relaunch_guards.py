"""Relaunch guards: nothing to relaunch after a completed run, an unreachable scheduler stops the relaunch,
hosts from log text reach a scheduler command only when the scheduler lists them, and one incident is
launched once even from concurrent executions."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_relaunch import lab_of, write_bundle

from clusterlab import Lab
from clusterlab.cli import main
from clusterlab.relaunch import execute, relaunch_plan
from clusterlab.relaunch.cli import relaunch
from clusterlab.relaunch.execute import RelaunchRefused
from conftest import SAMPLES

main.add_command(relaunch)


@pytest.fixture(scope="module")
def bundle_db_path(tmp_path_factory) -> str:
    db = tmp_path_factory.mktemp("bundle") / "db.duckdb"
    with Lab(db) as lab:
        lab.ingest(SAMPLES / "bundle")
    return str(db)


# ---------------------------------------------------------------- a completed run has nothing to relaunch

def test_a_completed_sample_run_is_not_relaunched(tmp_path: Path, bundle_db_path: str) -> None:
    db = tmp_path / "db.duckdb"
    shutil.copy(bundle_db_path, db)  # --execute writes its audit row: a copy of the sample's store
    res = CliRunner().invoke(main, ["--db", str(db), "relaunch", "--run", "mm7b-sft"])
    assert res.exit_code == 0
    assert "nothing to relaunch: run mm7b-sft completed: attempt 2" in res.output and "command: (none)" in res.output
    res = CliRunner().invoke(main, ["--db", str(db), "relaunch", "--run", "mm7b-sft", "--execute"])
    assert res.exit_code == 2 and "relaunch refused: nothing to relaunch" in res.output
    with Lab(db, read_only=True) as lab:
        rows = lab.sql("SELECT incident_id, result, detail FROM relaunches")
    assert rows["result"].to_list() == ["refused"] and "reached step 600 of the run's 600" in rows["detail"][0]


def test_completion_needs_the_total_reached_and_no_failure(tmp_path: Path) -> None:
    with lab_of(write_bundle(tmp_path / "done", steps=12, total=12, xid=False), tmp_path / "a.duckdb") as lab:
        plan = relaunch_plan(lab.con, "tiny")
        assert plan.command == [] and plan.drain == []
        assert "reached step 12 of the run's 12" in plan.nothing_to_relaunch
        with pytest.raises(RelaunchRefused, match="nothing to relaunch"):
            execute(lab.con, plan)
        assert lab.sql("SELECT result FROM relaunches")["result"].to_list() == ["refused"]
    # the total reached, but the attempt ended on an Xid 79: that failure is what a relaunch answers
    with lab_of(write_bundle(tmp_path / "xid", steps=12, total=12), tmp_path / "b.duckdb") as lab:
        plan = relaunch_plan(lab.con, "tiny")
        assert plan.nothing_to_relaunch is None and plan.command[0] == "sbatch"
    # no failure on record, but short of the total: not completed, and the plan says it cannot tell
    with lab_of(write_bundle(tmp_path / "short", steps=12, total=20, xid=False), tmp_path / "c.duckdb") as lab:
        plan = relaunch_plan(lab.con, "tiny")
        assert plan.nothing_to_relaunch is None and plan.command[0] == "sbatch"
        assert any("nothing says it completed" in w for w in plan.warnings)

"""The ledger exported as ml-goodput-measurement's buckets and Meta's ETTR: every GPU-hour once, 100 % in all."""

from __future__ import annotations

import json
import math

import polars as pl
import pytest
from click.testing import CliRunner
from timelines import Attempt, write_events, write_run

from clusterlab import Lab
from clusterlab.account.goodput import BADPUT_TYPES, BUCKETS, goodput
from clusterlab.account.ledger import CATEGORIES
from clusterlab.cli import main


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """Run r, two attempts: saves, a 300 s hang after step 30 resumed from step 20, a requeue, one slow step.
    Run t, one attempt: a save after step 10, 30 steps, then 200 s without a step until the time limit."""
    path = tmp_path_factory.mktemp("goodput") / "g.duckdb"
    with Lab(path) as lab:
        write_run(lab.con, "r", 8, [Attempt(0, 30, [2.0] * 14 + [9.0] + [2.0] * 15, saves={10: 5.0, 20: 5.0},
                                            tail_s=300),
                                    Attempt(1200, 40, [2.0] * 20, first_step=21, load_step=20)])
        write_run(lab.con, "t", 8, [Attempt(0, 30, [2.0] * 30, saves={10: 5.0}, tail_s=200)])
        write_events(lab.con, [{"t": 265, "source": "slurm", "kind": "slurm_time_limit", "failure_mode": "time_limit",
                                "host": "h-001", "text": "slurmstepd: error: *** JOB 7 ON h-001 CANCELLED AT "
                                "2026-01-01T00:04:25 DUE TO TIME LIMIT ***"}], run="t", attempt=1)
    return path


def test_every_category_lands_in_one_bucket_and_they_add_up_to_100(db) -> None:
    assert set(BUCKETS) == set(CATEGORIES)
    assert set(BUCKETS.values()) - {"GOODPUT"} <= set(BADPUT_TYPES)
    with Lab(db, read_only=True) as lab:
        a = lab.attribute("r")
    doc = goodput(a)
    led = dict(a.ledger.select("category", "gpu_hours").iter_rows())
    assert list(doc["badput_percent"]) == BADPUT_TYPES
    assert math.isclose(doc["sum_percent"], 100.0, rel_tol=1e-9)
    assert math.isclose(doc["badput_percent"]["WASTED_PROGRESS_FROM_DISRUPTION"],
                        100 * led["recompute"] / a.gpu_hours, rel_tol=1e-9)
    assert doc["badput_percent"]["INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION"] > 0
    # the slow step is goodput there, and said so
    assert led["slowdown"] > 0
    assert doc["differences"]["slowdown"]["percent"] == pytest.approx(100 * led["slowdown"] / a.gpu_hours)
    assert doc["goodput_percent"] > doc["clusterlab_productive_percent"]
    assert math.isclose(doc["ettr"], doc["goodput_percent"] / 100, rel_tol=1e-9)


def test_attribute_format_goodput_prints_the_export(db) -> None:
    res = CliRunner().invoke(main, ["--db", str(db), "attribute", "--run", "r", "--format", "goodput"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["format"] == "ml-goodput-measurement" and 0 < doc["ettr"] < 1


def test_a_hang_before_a_restart_is_infrastructure_recovery_there(db) -> None:
    """ml-goodput-measurement counts the time from the last step to the restart as infrastructure recovery: the
    300 s hang of attempt 1 goes there with the requeue, none of it to OTHER."""
    with Lab(db, read_only=True) as lab:
        a = lab.attribute("r")
    doc = goodput(a)
    led = dict(a.ledger.select("category", "gpu_hours").iter_rows())
    assert led["hang"] > 0
    assert doc["badput_percent"]["INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION"] == pytest.approx(
        100 * (led["hang"] + led["restart"]) / a.gpu_hours)
    assert doc["badput_percent"]["OTHER"] == 0.0
    assert doc["differences"]["hang"]["percent"] == pytest.approx(100 * led["hang"] / a.gpu_hours)
    assert "INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION" in doc["differences"]["hang"]["how"]


def test_the_runs_end_is_named_where_no_restart_follows(db) -> None:
    """A time limit after 200 s without a step ends run t: here the 40 s of steps after the save of step 10 are
    thrown away (recompute), with half the 2 s step in flight when the job fell silent (the kill came too late to
    date it), and the rest of the 200 s is hang; there no restart is seen, so those steps are goodput and the
    silence is of unknown source. `differences` names both, with their shares, and the export still sums to 100."""
    with Lab(db, read_only=True) as lab:
        a = lab.attribute("t")
    doc = goodput(a)
    led = dict(a.rows.group_by("category").agg(pl.col("seconds").sum()).iter_rows())
    assert (led["recompute"], led["hang"]) == (pytest.approx(41.0), pytest.approx(198.5))
    total_s = a.gpu_hours * 3600 / a.gpus
    assert doc["goodput_percent"] == pytest.approx(100 * (led["productive"] + led["recompute"]) / total_s)
    assert doc["badput_percent"]["WASTED_PROGRESS_FROM_DISRUPTION"] == 0.0
    assert doc["badput_percent"]["OTHER"] == pytest.approx(100 * led["hang"] / total_s)
    diff = doc["differences"]
    assert diff["recompute_at_end"]["percent"] == pytest.approx(100 * 41.0 / total_s)
    assert "after the last save" in diff["recompute_at_end"]["how"]
    assert diff["hang_at_end"]["percent"] == pytest.approx(100 * 198.5 / total_s) and diff["hang"]["percent"] == 0
    assert math.isclose(doc["sum_percent"], 100.0, rel_tol=1e-9)
    assert doc["ettr"] == pytest.approx(led["productive"] / total_s)  # Meta's ETTR counts the lost work as lost

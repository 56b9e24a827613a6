"""The ledger exported as ml-goodput-measurement's buckets and Meta's ETTR: every GPU-hour once, 100 % in all."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner
from timelines import Attempt, write_run

from clusterlab import Lab
from clusterlab.account.goodput import BADPUT_TYPES, BUCKETS, goodput
from clusterlab.account.ledger import CATEGORIES
from clusterlab.cli import main


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """Two attempts: saves, a failure after step 30 resumed from step 20, a 600 s requeue, one slow step."""
    path = tmp_path_factory.mktemp("goodput") / "g.duckdb"
    with Lab(path) as lab:
        write_run(lab.con, "r", 8, [Attempt(0, 30, [2.0] * 14 + [9.0] + [2.0] * 15, saves={10: 5.0, 20: 5.0},
                                            tail_s=300),
                                    Attempt(1200, 40, [2.0] * 20, first_step=21, load_step=20)])
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
    assert led["slowdown"] > 0 and doc["differences"]["slowdown"] == pytest.approx(100 * led["slowdown"] / a.gpu_hours)
    assert doc["goodput_percent"] > doc["clusterlab_productive_percent"]
    assert math.isclose(doc["ettr"], doc["goodput_percent"] / 100, rel_tol=1e-9)


def test_attribute_format_goodput_prints_the_export(db) -> None:
    res = CliRunner().invoke(main, ["--db", str(db), "attribute", "--run", "r", "--format", "goodput"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["format"] == "ml-goodput-measurement" and 0 < doc["ettr"] < 1

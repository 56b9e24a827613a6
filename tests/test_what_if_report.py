"""Where people see the what-if: the scorecard's tables, the incident report's settings, the Explorer's tab."""

from __future__ import annotations

import datetime as dt
import math

import polars as pl
import pytest
from test_what_if import _three_attempts
from timelines import T0

from clusterlab import Lab
from clusterlab.reports import incident_report, render
from clusterlab.reports.scorecard import week_of


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """The three-attempt run (a hung Xid, a second Xid, a time limit) with a change recorded between."""
    with Lab(tmp_path_factory.mktemp("what-if-report") / "w.duckdb") as lab:
        _three_attempts(lab)
        lab.change("c1", T0 + dt.timedelta(seconds=1000), "replaced h-001's riser")
        yield lab


@pytest.fixture(scope="module")
def attributed(lab: Lab):
    return lab.attribute("r")


def test_scorecard_prices_the_week_under_each_policy_and_lists_its_changes(lab: Lab) -> None:
    sc = lab.scorecard(week_of(T0))
    hang = sc.what_if.filter(pl.col("policy") == "hang_timeout").row(0, named=True)
    (alone,) = lab.what_if("r", ["hang_timeout"]).pricings
    assert math.isclose(hang["gpu_hours_saved"], alone.gpu_hours_saved, rel_tol=1e-9) and hang["runs_priced"] == 1
    assert (sc.what_if["gpu_hours_saved"] >= 0).all() and (sc.what_if["gpu_hours_extra"] >= 0).all()
    (change,) = sc.changes.to_dicts()
    assert change["what"] == "replaced h-001's riser" and "too small to tell" in change["effect"]
    md = render.render_scorecard(sc, "md")
    assert "## What this week would have cost with..." in md and "replaced h-001's riser" in md


def test_incident_report_recommends_real_settings_with_their_saving(lab: Lab, attributed) -> None:
    a = attributed
    hung = incident_report(lab.con, "r:1:end", attributed=a)
    (p,) = lab.what_if("r", ["hang_timeout=60"]).pricings  # the default detector of a 5 s step: 60 s
    mine = p.rows.filter(pl.col("incident_id") == "r:1:end")
    saved = float((mine["seconds"] - mine["what_if_s"]).sum()) * a.gpus / 3600
    (line,) = [g for g in hung.guidance if g.startswith("Detect the hang sooner")]
    assert "timeout=timedelta(seconds=60)" in line and "TORCH_NCCL_ASYNC_ERROR_HANDLING" in line
    assert f"{saved:.2f} GPU-hours" in line
    assert any("--max-restarts" in g for g in hung.guidance)
    limited = incident_report(lab.con, "r:3:end", attributed=a)
    assert any("sbatch --signal=B:USR1@120" in g for g in limited.guidance)
    assert not any("Detect the hang" in g for g in limited.guidance)  # a 5 s tail: nothing to save


def test_what_if_panel_prices_every_policy_then_one_typed_in(lab: Lab, attributed) -> None:
    from clusterlab.widgets.what_if import WhatIfPanel

    panel = WhatIfPanel(lab, "r", attributed)
    assert panel.frame["policy"].to_list()[0] == "actual" and panel.frame.height == 7
    panel.price("hang_timeout=30")
    assert panel.frame.height == 8 and panel.frame.row(0, named=True)["policy"] == "hang_timeout"
    assert "30 s after the last step" in panel.frame.row(0, named=True)["setting"]
    panel.price("hang_timout=30")
    assert "unknown policy" in panel.status.value and panel.frame.height == 8

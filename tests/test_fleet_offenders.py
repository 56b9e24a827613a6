"""The repeat-offender rule scored on a fault history: precision, recall, lift, and the default it chose."""

from __future__ import annotations

import datetime as dt
import importlib.util
from pathlib import Path

import polars as pl
import pytest

from clusterlab.account.offenders import base_rate, faults, score
from clusterlab.relaunch.plan import PlanSettings

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT.parent / "shared" / "datasets" / "infinitehbd-trace" / "fault_trace.json"


def _history(days: dict[str, list[float]]) -> pl.DataFrame:
    t0 = dt.datetime(2026, 1, 1)
    return pl.DataFrame([{"host": h, "ts": t0 + dt.timedelta(days=d)} for h, ds in days.items() for d in ds])


def test_starts_within_an_hour_are_one_fault() -> None:
    f = faults(_history({"a": [0.0, 0.01, 5.0], "b": [0.5]}))
    assert sorted(f.filter(pl.col("host") == "a")["day"].to_list()) == [0.0, 5.0]


def test_a_flag_is_right_when_the_host_faults_again_within_the_horizon() -> None:
    # a: faults on days 0, 10, 20 (flagged at 10 and at 20 with k=2, W=30; 20 is followed by 45: wrong)
    # b: one fault on day 100 (never flagged); the history spans 100 days
    f = faults(_history({"a": [0.0, 10.0, 20.0, 45.0], "b": [100.0]}))
    s = score(f, k=2, window_days=30, fleet_size=10, horizon_days=30)
    # flags judged (a whole horizon left): days 10, 20, 45 (45 + 30 <= 100); right: day 10 (then 20), day 20 (then
    # 45, within 30 days); wrong: day 45 (nothing after it)
    assert s["flags"] == 3
    assert s["precision"] == pytest.approx(2 / 3)
    # faults with 30 days of history before them: a@45, b@100; a@45 had a flag on day 20 (25 days before)
    assert s["recall"] == pytest.approx(1 / 2)
    assert s["flagged_hosts"] == 1


def test_base_rate_counts_every_host_of_the_fleet() -> None:
    f = faults(_history({"a": [0.0, 40.0, 80.0]}))
    # days 0..50 (a whole horizon after them): host a's next fault comes within 30 days from days 10..39 (at 40)
    # and from day 50 (at 80), 31 days of 51; one host of four
    rate = base_rate(f, fleet_size=4, horizon_days=30)
    assert rate == pytest.approx(31 / 51 / 4)


@pytest.mark.skipif(not TRACE.exists(), reason="the InfiniteHBD trace is not in ../shared/datasets/")
def test_the_relaunch_default_is_the_rule_the_trace_chose_and_beats_the_base_rate() -> None:
    spec = importlib.util.spec_from_file_location("repeat_offenders", ROOT / "benchmarks" / "repeat_offenders.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    table = bench.run(TRACE, dt.date(2024, 3, 30), 400, [1, 2, 3, 4, 5], [7, 14, 30, 60, 90, 365], 30.0)
    best = bench.choose(table)
    ps = PlanSettings()
    assert (best["k"], best["window_days"]) == (ps.repeat_after, ps.history_days)
    # the margin the README states: the precision's 95 % lower bound at least 4x the fleet's base rate
    assert best["precision_lo"] >= 4 * best["base_rate"]
    # and better than flagging a host after any one fault
    one = table.filter(pl.col("k") == 1, pl.col("window_days") == ps.history_days).row(0, named=True)
    assert best["precision"] > one["precision"]

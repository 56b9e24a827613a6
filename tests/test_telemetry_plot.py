"""The Explorer's telemetry figure: a host's step time, clocks, heat and throughput over an incident's window."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
from test_telemetry_attribution import _step_start_s, _steps, run_on, write_gpu_telemetry, write_throughput
from timelines import T0

from clusterlab import Lab
from clusterlab.plots import telemetry as telemetry_plot


def test_the_window_holds_the_hosts_telemetry_and_draws_one_stacked_figure(tmp_path: Path) -> None:
    step_s = _steps(range(21, 31), 7.0)
    lo, hi, end = _step_start_s(step_s, 21), _step_start_s(step_s, 31), _step_start_s(step_s, 101)
    with Lab(tmp_path / "db.duckdb") as lab:
        run_on(lab.con, "r", ["h-001", "h-002"], step_s)
        write_gpu_telemetry(lab.con, "h-002", end, {3: (lo, hi, {"sm_clock_mhz": 1200.0, "throttle_reasons": 0x40})})
        write_throughput(lab.con, "h-002", end, (lo, hi), 2.4e9)
        inc = pl.DataFrame({"incident_id": ["r:1:slowdown:21"], "root_ts": [T0 + dt.timedelta(seconds=lo)],
                            "exit_ts": [T0 + dt.timedelta(seconds=hi)]})
        win = telemetry_plot.window(lab.con, "h-002", T0 + dt.timedelta(seconds=lo), T0 + dt.timedelta(seconds=hi),
                                    "r")
        shown = telemetry_plot.host_html(lab.con, "h-002", inc, "r:1:slowdown:21", "r")
        none = telemetry_plot.host_html(lab.con, "h-001", inc, "r:1:slowdown:21", "r")
    assert win.gpus["gpu"].n_unique() == 8 and win.steps.height > 50
    throttled = win.gpus.filter(pl.col("throttle_reasons") == 0x40)
    assert set(throttled["gpu"]) == {3} and set(throttled["sm_clock_mhz"]) == {1200.0}
    assert win.throughput["bytes_s"].max() == 2.4e9
    assert shown.startswith("<b>Telemetry over the incident</b>") and "data:image/png;base64," in shown
    assert none == ""  # h-001 has no telemetry: nothing shown


def test_a_hostile_host_name_is_drawn_as_plain_text(tmp_path: Path) -> None:
    with Lab(tmp_path / "db.duckdb") as lab:
        write_gpu_telemetry(lab.con, "$\\frac{a}{b}$<script>", 120, {})
        win = telemetry_plot.window(lab.con, "$\\frac{a}{b}$<script>", T0, T0 + dt.timedelta(seconds=120))
    assert telemetry_plot.png(win).startswith(b"\x89PNG")

"""Figures a person reads: no two labels overlap and nothing is cut off at the edge, at the sizes the
scorecard and the Explorer draw them (checked on the drawn text boxes, as an eye would)."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest
from figure_layout import layout_problems
from matplotlib.figure import Figure

from clusterlab import Lab
from clusterlab.plots import charts as plots
from clusterlab.reports import figures
from clusterlab.widgets import frames

T0 = dt.datetime(2026, 11, 24, 8)


@pytest.fixture(scope="module")
def demo(bundle_db_copy) -> Lab:
    with Lab(bundle_db_copy, read_only=True) as lab:
        yield lab


def _figure(size: tuple[float, float]) -> Figure:
    return Figure(figsize=size, dpi=80, layout="constrained")


@pytest.mark.parametrize("run", ["llama8b-pretrain", "mm7b-sft", "ds1b-ablation"])
def test_waterfalls_of_the_scorecard_and_the_explorer_have_no_colliding_labels(demo: Lab, run: str) -> None:
    a = demo.attribute(run)
    assert layout_problems(figures.waterfall(a), pad_px=-0.5) == []
    fig = _figure((6, 3.6))  # the Explorer's size
    plots.ledger_waterfall(a.ledger, a.steady_mfu, a.gpu_hours, a.run, ax=fig.subplots())
    assert layout_problems(fig, pad_px=-0.5) == []


def test_a_crowded_timeline_puts_its_labels_in_lanes_and_keeps_its_legend(demo: Lab) -> None:
    attempts = pl.DataFrame({"attempt": [1, 2], "start_ts": [T0, T0 + dt.timedelta(hours=3)],
                             "end_ts": [T0 + dt.timedelta(hours=2, minutes=50), T0 + dt.timedelta(hours=6)]})
    # eight incidents within 40 minutes, long labels, some near the right edge
    modes = ["gpu_fell_off_bus", "filesystem_io", "network", "straggler", "nccl_timeout", "time_limit",
             "pcie_error", "gpu_memory_ecc"]
    starts = [T0 + dt.timedelta(minutes=m) for m in (100, 104, 108, 112, 116, 120, 345, 350)]
    incidents = pl.DataFrame({"incident_id": [f"r:1:{i}" for i in range(8)], "root_ts": starts,
                              "exit_ts": [s + dt.timedelta(minutes=3) for s in starts], "failure_mode": modes,
                              "host": [f"gpu-node-{i:03d}" for i in range(8)],
                              "gpu_hours_lost": [8.0 - i for i in range(8)]})
    checkpoints = pl.DataFrame({"attempt": [1, 1, 2], "ts": [T0 + dt.timedelta(hours=1), T0 + dt.timedelta(hours=2),
                                                              T0 + dt.timedelta(hours=3, minutes=5)],
                                "action": ["save", "save", "load"], "ok": [True, False, True]})
    fig = _figure((7.5, 2.7))
    ax = fig.subplots()
    plots.run_timeline(attempts, incidents, checkpoints, ax=ax)
    assert layout_problems(fig) == []
    labels = [t.get_text() for t in ax.texts]
    assert len(labels) >= 6  # lanes keep most labels rather than dropping them
    assert {t.get_text() for t in ax.get_legend().get_texts()} == {"save", "load", "failed save"}


def test_the_demo_timelines_and_the_slow_stretch_plot_are_legible(demo: Lab) -> None:
    for run in demo.runs()["run"]:
        att = demo.attempts(run)
        fig = _figure((7.5, min(1.8 + 0.45 * att.height, 9)))
        plots.run_timeline(att, demo.incidents(run), demo.table("checkpoints").filter(pl.col("run") == run),
                           ax=fig.subplots())
        assert layout_problems(fig) == [], run
    series = frames.host_step_series(demo.con, "llama8b-pretrain", ["east-005", "east-002"])
    fig = _figure((7.5, 2.6))
    plots.step_time_over_time(series, ["east-005"], None, ax=fig.subplots())
    assert layout_problems(fig) == []


def test_the_explorers_fixed_layouts_fit_their_labels(demo: Lab) -> None:
    # the two figures every run switch redraws skip the measured layout (for speed): their margins must hold
    from clusterlab.widgets import explorer as ex

    for run in ("llama8b-pretrain", "mm7b-sft", "ds1b-ablation"):
        a = demo.attribute(run)
        fig = ex.figure(lambda ax, a=a: plots.ledger_waterfall(a.ledger, a.steady_mfu, a.gpu_hours, a.run, ax=ax),
                        ex.LEDGER_SIZE, ex.LEDGER_MARGINS)
        assert layout_problems(fig, pad_px=-0.5) == [], run
        fig = ex.figure(lambda ax, a=a: plots.ledger_waterfall(a.ledger, None, a.gpu_hours, a.run, ax=ax),
                        ex.LEDGER_SIZE, ex.LEDGER_MARGINS)  # no MFU known: GPU-hours
        assert layout_problems(fig, pad_px=-0.5) == [], run
    attempts = pl.DataFrame({"attempt": list(range(1, 13)),
                             "start_ts": [T0 + dt.timedelta(hours=k) for k in range(12)],
                             "end_ts": [T0 + dt.timedelta(hours=k, minutes=50) for k in range(12)]})
    checkpoints = pl.DataFrame({"attempt": [1, 2, 3], "ts": [T0 + dt.timedelta(minutes=m) for m in (20, 80, 140)],
                                "action": ["save", "load", "save"], "ok": [True, True, False]})
    incidents = pl.DataFrame({"incident_id": ["r:1:end"], "root_ts": [T0 + dt.timedelta(minutes=45)],
                              "exit_ts": [T0 + dt.timedelta(minutes=50)], "failure_mode": ["gpu_fell_off_bus"],
                              "host": ["gpu-node-0001"]})
    for n in (1, 3, 12):
        fig = ex.figure(lambda ax, n=n: plots.run_timeline(attempts.head(n), incidents, checkpoints, ax=ax),
                        ex.timeline_size(n), ex.TIMELINE_MARGINS)
        assert layout_problems(fig) == [], n


def test_the_scorecards_failure_mode_mix_keeps_its_colour_key_inside_the_png(demo: Lab) -> None:
    from clusterlab.reports.scorecard import scorecard

    fig = figures.failure_modes(scorecard(demo.con, "2026-W48").failure_modes)
    assert layout_problems(fig) == []
    assert {t.get_text() for t in fig.legends[0].get_texts()} >= {"provider's fault", "user's fault"}


def test_the_explorers_failure_mix_keeps_a_long_legend_inside_the_png() -> None:
    from clusterlab import taxonomy
    from clusterlab.widgets import explorer as ex

    modes = list(taxonomy.MODES)[:14]
    mix = pl.DataFrame({"provider": ["acme"] * len(modes), "failure_mode": modes,
                        "gpu_hours_lost": [float(len(modes) - i) for i in range(len(modes))]})
    fig = ex.figure(lambda ax: plots.failure_mix(mix, ax=ax), (7.5, 1.6 + 0.5))  # the Explorer's size, one provider
    assert layout_problems(fig) == []

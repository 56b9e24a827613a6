"""Small samples: exact Poisson intervals on rates and MTBF, a minimum-exposure guard, one definition of failure."""

from __future__ import annotations

import importlib
import math

import polars as pl
import pytest

from clusterlab import Lab
from clusterlab.account import rates
from clusterlab.reports import figures, render, scorecard

WEEK = "2026-W48"
SCORECARD = importlib.import_module("clusterlab.reports.scorecard")  # the package exports its function by that name


@pytest.fixture(scope="module")
def sc(bundle_db_copy):
    with Lab(bundle_db_copy) as lab:
        yield scorecard(lab.con, WEEK)


def _row(frame: pl.DataFrame, **eq) -> dict:
    for k, v in eq.items():
        frame = frame.filter(pl.col(k) == v)
    assert frame.height == 1, eq
    return frame.row(0, named=True)


def _pmf(i: int, mu: float) -> float:
    return math.exp(-mu + i * math.log(mu) - math.lgamma(i + 1))


# --- the intervals -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("k", "lo", "hi"), [(0, 0.0, 3.689), (1, 0.0253, 5.572), (2, 0.242, 7.225),
                                              (5, 1.623, 11.668), (10, 4.795, 18.390)])
def test_exact_poisson_interval_matches_the_published_table(k: int, lo: float, hi: float) -> None:
    """Garwood's 95% limits for a Poisson mean, as tabulated (e.g. Ulm 1990, Am J Epidemiol 131:373)."""
    got_lo, got_hi = rates.count_interval(k)
    assert math.isclose(got_lo, lo, abs_tol=6e-4) and math.isclose(got_hi, hi, abs_tol=6e-4)
    assert math.isclose(rates.count_interval(0)[1], -math.log(0.025), rel_tol=1e-9)  # no event: e^-mu = 2.5%


@pytest.mark.parametrize("k", [1, 3, 17, 60, 400])
def test_interval_ends_leave_two_and_a_half_percent_in_each_tail(k: int) -> None:
    """The defining property, checked with an independent pmf sum (no shared code with rates)."""
    lo, hi = rates.count_interval(k)
    assert math.isclose(math.fsum(_pmf(i, hi) for i in range(k + 1)), 0.025, abs_tol=1e-7)  # P(X <= k | hi)
    assert math.isclose(1 - math.fsum(_pmf(i, lo) for i in range(k)), 0.025, abs_tol=1e-7)  # P(X >= k | lo)
    assert rates.gamma_ppf(0.5, k) < k + 1  # the own implementation, also where scipy is installed


def test_rates_and_mtbf_intervals_scale_with_exposure() -> None:
    point, lo, hi = rates.rate_interval(2, 48.0, per=1000.0)
    assert point == pytest.approx(2 / 48 * 1000) and lo < point < hi
    m, mlo, mhi = rates.mtbf_interval(2, 48.0)
    assert m == 24.0 and mlo == pytest.approx(48.0 / rates.count_interval(2)[1]) and mhi > m
    assert rates.mtbf_interval(0, 48.0)[0] is None and math.isinf(rates.mtbf_interval(0, 48.0)[2])
    assert rates.rate_interval(1, 0.0) == (None, None, None)


# --- the scorecard -------------------------------------------------------------------------------------------

def test_one_preemption_on_a_few_gpu_hours_is_not_a_bare_rate(sc) -> None:
    run = _row(sc.runs, run="ds1b-ablation")  # one preemption on 1.6 GPU-hours: "14,831 per 1,000 GPU-days"
    assert run["failures"] == 1 and run["gpu_hours"] < 2
    assert run["failures_per_1k_gpu_days"] is None and run["mtbf_gpu_days"] is None and run["mtbf_hours"] is None
    assert run["failures_per_1k_gpu_days_lo"] < 14_831 < run["failures_per_1k_gpu_days_hi"]
    assert run["reliability_note"] == f"too little exposure to tell: {run['gpu_hours']:,.1f} GPU-hours, 1 failure"
    acme = _row(sc.providers, provider="acme")
    assert acme["enough_exposure"] is False and acme["failures_per_1k_gpu_days"] is None
    for doc in (render.render_scorecard(sc, "html", images={}), render.render_scorecard(sc, "md", images={})):
        assert acme["reliability_note"] in doc and "95% CI" in doc
        assert "14,831" not in doc and "1,256" not in doc  # the old bare rates of ds1b-ablation and acme


def test_enough_exposure_gives_the_figure_with_its_interval() -> None:
    frame = pl.DataFrame({"failures": [4], "gpu_hours": [24_000.0]}, schema={"failures": pl.UInt32,
                                                                              "gpu_hours": pl.Float64})
    r = SCORECARD.with_intervals(frame).row(0, named=True)
    assert r["enough_exposure"] and r["reliability_note"] is None
    assert r["failures_per_1k_gpu_days"] == pytest.approx(4.0) and r["mtbf_gpu_days"] == pytest.approx(250.0)
    lo, hi = rates.count_interval(4)
    assert r["failures_per_1k_gpu_days_hi"] == pytest.approx(hi) and r["mtbf_gpu_days_lo"] == pytest.approx(1000 / hi)
    fig, span = render.fmt.interval(r, "failures_per_1k_gpu_days", "rate0")
    assert fig == "4" and span == f"95% CI {lo:,.0f}–{hi:,.0f}"


def test_a_users_oom_is_not_a_cluster_failure(sc) -> None:
    """mm7b-sft on bor-1 ended in rank 5's CUDA OOM (blame: user): nothing for the cluster's MTBF or advice."""
    inc = _row(sc.incidents, incident_id="mm7b-sft:1:end")
    assert (inc["failure_mode"], inc["blame"]) == ("cuda_oom", "user")
    adv = _row(sc.checkpoint_advice, run="mm7b-sft")
    assert adv["failures"] == 0 and adv["mtbf_job_hours"] is None and adv["optimal_interval_s"] is None
    assert adv["advice"].startswith("no cluster failure in")
    assert _row(sc.runs, run="mm7b-sft")["failures"] == 0 and _row(sc.providers, provider="borealis")["failures"] == 0
    east = _row(sc.checkpoint_advice, run="llama8b-pretrain")  # Xid 79 and an IB link: the cluster's
    assert east["failures"] == 2 and east["mtbf_job_hours_lo"] < east["mtbf_job_hours"] < east["mtbf_job_hours_hi"]
    assert east["advice"].startswith("too little exposure to tell: ")


def test_routine_time_is_not_drawn_as_unknown(sc) -> None:
    none = sc.failure_modes.filter(pl.col("failure_mode") == "none")
    assert none.height and (none["gpu_hours_lost"] > 0).all()
    fig = figures.failure_modes(sc.failure_modes)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    rows = sc.failure_modes.filter(pl.col("gpu_hours_lost") > 0).sort(["provider", "gpu_hours_lost"],
                                                                      descending=[False, True])
    for label, bar, r in zip(labels, ax.patches, rows.iter_rows(named=True), strict=True):
        color = figures.BLAME_COLORS[r["blame"]]
        assert bar.get_facecolor()[:3] == pytest.approx(tuple(int(color[i:i + 2], 16) / 255 for i in (1, 3, 5)))
        if r["failure_mode"] == "none":
            assert "routine checkpoint and startup" in label and color != figures.BLAME_COLORS["unknown"]
    key = [t.get_text() for lg in fig.legends for t in lg.get_texts()]  # the colour key, a legend inside the PNG
    assert not any("unattributed" in k for k in key) and any("no incident" in k for k in key)
    html = render.render_scorecard(sc, "html", images={})
    assert "no incident (routine checkpoint and startup time)" in html

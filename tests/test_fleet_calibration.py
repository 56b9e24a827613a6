"""The simulator's fleet failure model fitted to a real fleet (InfiniteHBD-Trace) reproduces it."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from clusterlab.lab import Lab
from clusterlab.simulator import calibrated
from clusterlab.simulator.failure_model import llama3_rates

TRACE = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "infinitehbd-trace" / "fault_trace.json"
FLEET = 400  # servers in the trace's cluster (231 of them faulted)
P_MIN = 0.05  # the two-sample Kolmogorov-Smirnov test must not reject at this level
SEEDS = range(10)

pytestmark = pytest.mark.skipif(not TRACE.exists(), reason="the InfiniteHBD trace is not in ../shared/datasets/")


@pytest.fixture(scope="module")
def trace() -> pl.DataFrame:
    lab = Lab(":memory:")
    lab.ingest(TRACE, epoch=dt.date(2024, 3, 30), workers=1)
    return lab.sql("SELECT * FROM fault_episodes")


def _per_host(frame: pl.DataFrame, fleet: int) -> np.ndarray:
    counts = frame.group_by("host").len()["len"].to_numpy()
    return np.concatenate([counts, np.zeros(fleet - len(counts))])


def test_fit_names_its_source_and_finds_the_heavy_tail(trace: pl.DataFrame) -> None:
    fit = calibrated.fit(trace, FLEET, calibrated.INFINITEHBD)
    assert "InfiniteHBD" in fit.source
    assert fit.mean_faults == pytest.approx(584 / 400)
    assert 0.5 < fit.shape < 2  # far from Poisson (infinite shape): a few nodes fault again and again
    rates = fit.rates_per_gpu_hour(gpus_per_node=8)
    assert set(rates) <= set(llama3_rates())  # the simulator can take them as they are
    assert sum(rates.values()) == pytest.approx(584 / (FLEET * 8 * fit.days * 24))


def test_class_mix_within_five_points(trace: pl.DataFrame) -> None:
    """Each class's share within 5 points of the trace's, in ten fleets' worth of episodes (about 5,800: one fleet's
    580 draws of 22 classes stray up to 6 points by chance alone, which says nothing of the model)."""
    fit = calibrated.fit(trace, FLEET, calibrated.INFINITEHBD)
    truth = trace.with_columns(k=calibrated.class_key(trace)).group_by("k").len()
    truth = dict(zip(truth["k"], (truth["len"] / trace.height).to_list(), strict=True))
    for seed in SEEDS:
        s = calibrated.sample(fit, np.random.default_rng(seed), fleet_size=10 * FLEET)
        got = s.group_by("fault_class").len()
        got = dict(zip(got["fault_class"], (got["len"] / s.height).to_list(), strict=True))
        worst = max(abs(got.get(k, 0.0) - v) for k, v in truth.items())
        assert worst <= 0.05, (seed, worst)


def test_per_host_fault_counts_pass_a_two_sample_ks_test(trace: pl.DataFrame) -> None:
    """Two-sample Kolmogorov-Smirnov on the 400 servers' episode counts: the calibrated model is not rejected at
    p = 0.05 on any of ten seeds, while the same mean spread evenly over the nodes (Poisson) is, at p = 0.001."""
    fit = calibrated.fit(trace, FLEET, calibrated.INFINITEHBD)
    even = dataclasses.replace(fit, shape=math.inf)
    real = _per_host(trace, FLEET)
    for seed in SEEDS:
        _, p = calibrated.ks_2samp(real, _per_host(calibrated.sample(fit, np.random.default_rng(seed)), FLEET))
        assert p > P_MIN, (seed, p)
        _, p_even = calibrated.ks_2samp(real, _per_host(calibrated.sample(even, np.random.default_rng(seed)), FLEET))
        assert p_even < 0.001, (seed, p_even)


def test_repair_times_keep_the_trace_median(trace: pl.DataFrame) -> None:
    fit = calibrated.fit(trace, FLEET, calibrated.INFINITEHBD)
    real = trace.select(h=(pl.col("end_ts") - pl.col("ts")).dt.total_microseconds() / 3.6e9)["h"].median()
    s = calibrated.sample(fit, np.random.default_rng(0), fleet_size=10 * FLEET)
    got = float(np.median((s["end_day"] - s["start_day"]).to_numpy() * 24))
    assert got == pytest.approx(real, rel=0.15)


def test_ks_statistic_of_identical_samples_is_zero() -> None:
    d, p = calibrated.ks_2samp(np.array([0, 1, 1, 2, 5]), np.array([5, 2, 1, 1, 0]))
    assert d == 0 and p == 1.0


def test_ks_p_value_matches_the_kolmogorov_table() -> None:
    # P(K > 1.36) = 0.049 and P(K > 1.63) = 0.0098: the critical values of the 5 % and 1 % tests
    assert calibrated._kolmogorov_q(1.36) == pytest.approx(0.0494, abs=5e-4)
    assert calibrated._kolmogorov_q(1.63) == pytest.approx(0.0098, abs=5e-4)
    assert calibrated._kolmogorov_q(0.5) == pytest.approx(0.9639, abs=5e-4)

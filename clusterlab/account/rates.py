"""Failure counts over exposure: exact Poisson confidence intervals and a minimum-exposure guard.

A week of one cluster sees a handful of failures at most, so a rate or an MTBF is a guess with
wide error bars. Every rate the reports print comes with its exact (Garwood) interval, and with too
little exposure the reports say so instead of printing a bare number.

The exact interval for k events: lower = χ²(α/2; 2k)/2, upper = χ²(1 − α/2; 2k + 2)/2 (Garwood
1936). χ²(p; 2a)/2 is the p-quantile of a Gamma(a, 1), and for a whole a the Gamma's CDF is the
Poisson tail, P(a, x) = P(Poisson(x) ≥ a), so the quantile is found by bisection on that sum when
scipy is not installed.
"""

from __future__ import annotations

import math

CONFIDENCE = 0.95
# Below this exposure a rate per 1,000 GPU-days is an extrapolation by more than 24x, and one failure
# more or less moves it by over 24: the reports give the interval and say there is too little to tell.
MIN_EXPOSURE_GPU_HOURS = 1000.0


def poisson_sf(k: int, mu: float) -> float:
    """P(Poisson(mu) ≥ k), summed in log space (no overflow at large mu)."""
    if k <= 0:
        return 1.0
    if mu <= 0:
        return 0.0
    logs = [-mu + i * math.log(mu) - math.lgamma(i + 1) for i in range(k)]
    top = max(logs)
    below = math.exp(top) * math.fsum(math.exp(v - top) for v in logs)  # P(X ≤ k - 1)
    return min(1.0, max(0.0, 1.0 - below))


def gamma_ppf(p: float, shape: int) -> float:
    """The p-quantile of Gamma(shape, 1) for a whole shape ≥ 1 (= χ²(p; 2·shape)/2), by bisection."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), not {p}")
    if shape < 1:
        raise ValueError(f"shape must be a whole number ≥ 1, not {shape}")
    lo, hi = 0.0, float(shape) + 10.0 * math.sqrt(shape) + 10.0
    while poisson_sf(shape, hi) < p:  # the Gamma CDF at hi
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if poisson_sf(shape, mid) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2


def _gamma_ppf(p: float, shape: int) -> float:
    try:
        from scipy.stats import gamma  # exact to machine precision where installed
    except ImportError:
        return gamma_ppf(p, shape)
    return float(gamma.ppf(p, shape))


def count_interval(k: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The exact two-sided interval for the mean of a Poisson count observed as k."""
    if k < 0:
        raise ValueError(f"a count cannot be negative: {k}")
    alpha = 1.0 - confidence
    lower = 0.0 if k == 0 else _gamma_ppf(alpha / 2, k)
    return lower, _gamma_ppf(1.0 - alpha / 2, k + 1)


def rate_interval(k: int, exposure: float, per: float = 1.0,
                  confidence: float = CONFIDENCE) -> tuple[float | None, float | None, float | None]:
    """Events per `per` units of exposure: (point, lower, upper); all None without exposure."""
    if exposure is None or not exposure > 0:
        return None, None, None
    lo, hi = count_interval(int(k), confidence)
    return k / exposure * per, lo / exposure * per, hi / exposure * per


def mtbf_interval(k: int, exposure: float,
                  confidence: float = CONFIDENCE) -> tuple[float | None, float | None, float | None]:
    """Exposure per event: (point, lower, upper); the point is None with no event, the upper is inf."""
    if exposure is None or not exposure > 0:
        return None, None, None
    lo, hi = count_interval(int(k), confidence)
    return (exposure / k if k else None), exposure / hi, (exposure / lo if lo > 0 else math.inf)


def enough_exposure(gpu_hours: float | None) -> bool:
    """Whether a rate over this many GPU-hours is worth printing as a number."""
    return gpu_hours is not None and gpu_hours >= MIN_EXPOSURE_GPU_HOURS


def too_little(gpu_hours: float | None, k: int) -> str:
    """The words that replace a rate measured over too little exposure."""
    hours = f"{gpu_hours:,.1f} GPU-hours" if gpu_hours is not None else "GPU-hours unknown"
    return f"too little exposure to tell: {hours}, {k} failure{'' if k == 1 else 's'}"

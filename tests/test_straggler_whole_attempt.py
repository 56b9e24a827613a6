"""A GPU slow for the whole attempt (BLOOM's ~5 % slower GPU; own campaign bloom_opt attempt 7: a replacement node's
GPU 6.5 % slow from the first step to the time limit) is the slowest rank at every step: the run's usual lead is its
own, so the noise must be read where no slow host moves it, the fastest rank's trail behind its peers."""

from __future__ import annotations

import datetime as dt
import random

import polars as pl

from clusterlab.diagnose import incidents


def _profile(slow_factor: float, first: int, last: int, *, jitter: float = 0.004, hosts: int = 16,
             seed: int = 5) -> pl.DataFrame:
    """`incidents.step_profile` rows of 300 steps, `hosts` hosts' compute (30 s, `jitter` noise); h0 `slow_factor`
    slower on steps `first`..`last`."""
    rng = random.Random(seed)
    rows = []
    for step in range(1, 301):
        c = {f"h{i}": 30.0 * (1 + rng.gauss(0, jitter)) for i in range(hosts)}
        if first <= step <= last:
            c["h0"] *= slow_factor
        slowest = max(c, key=c.get)
        rows.append({"run": "r", "attempt": 7, "step": step,
                     "ts": dt.datetime(2026, 12, 2, 5, 44) + dt.timedelta(seconds=31 * step),
                     "avg_c": sum(c.values()) / hosts, "min_c": min(c.values()), "max_c": c[slowest], "n_c": hosts,
                     "slow_host": slowest})
    return pl.DataFrame(rows, schema_overrides={"attempt": pl.Int32})


def _found(profile: pl.DataFrame) -> pl.DataFrame:
    s = incidents.Settings()
    return incidents.straggler_incidents(incidents.slow_steps(profile, s), s)


def test_a_gpu_slow_from_the_first_step_to_the_last_is_a_straggler() -> None:
    inc = _found(_profile(1.065, 1, 300))
    assert inc.select("host", "first_step", "last_step").rows() == [("h0", 1, 300)]


def test_a_healthy_run_and_a_noisy_one_have_none() -> None:
    assert not _found(_profile(1.0, 1, 300)).height
    assert not _found(_profile(1.0, 1, 300, jitter=0.03)).height


def test_a_slow_stretch_inside_the_attempt_is_still_found() -> None:
    inc = _found(_profile(1.065, 100, 180))
    assert inc["host"].to_list() == ["h0"] and inc["first_step"][0] == 100 and inc["last_step"][0] == 180

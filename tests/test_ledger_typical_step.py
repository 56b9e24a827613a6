"""The first step record of an attempt that prints no step time is dated back by the attempt's typical time per step,
counted per step, not per record: per-rank timings of a slow stretch (one record a step) beside a log line every ten
steps would make the slow pace typical, and the first record would start seconds before the first step did (its
steps' excess booked as slowdown, the startup short). Own campaign gpu_health_twoprov: 0.33 GPU-h of slowdown and
startup short by as much at every seed."""

from __future__ import annotations

import datetime as dt

import polars as pl

from clusterlab.account import ledger

T0 = dt.datetime(2025, 2, 9, 11, 0, 0)
PACE, SLOW = 4.2, 4.9


def test_the_first_record_starts_at_the_typical_pace_per_step() -> None:
    first_step_at = T0 + dt.timedelta(seconds=300)
    rows, t = [], first_step_at
    for step in range(610, 2010, 10):  # a log line every 10 steps from the resumed step 600
        t += dt.timedelta(seconds=10 * PACE)
        rows.append((step, t, None if step == 610 else PACE))
    for step in range(2001, 2401):  # then per-rank records, one a step, of a slow stretch
        t += dt.timedelta(seconds=SLOW)
        rows.append((step, t, SLOW))
    steps = pl.DataFrame({"attempt": [3] * len(rows), "step": [r[0] for r in rows], "ts": [r[1] for r in rows],
                          "step_s": [r[2] for r in rows], "data_s": [None] * len(rows)},
                         schema={"attempt": pl.Int32, "step": pl.Int64, "ts": pl.Datetime("us"),
                                 "step_s": pl.Float64, "data_s": pl.Float64})
    attempts = pl.DataFrame({"attempt": [3], "start_ts": [T0], "end_ts": [t + dt.timedelta(seconds=60)],
                             "resume_step": [600]},
                            schema={"attempt": pl.Int32, "start_ts": pl.Datetime("us"), "end_ts": pl.Datetime("us"),
                                    "resume_step": pl.Int64})
    tl = ledger.timeline(steps, attempts)
    first = tl.sort("step").row(0, named=True)
    assert first["n"] == 10
    assert abs((first["start"] - first_step_at).total_seconds()) < 1e-3, first

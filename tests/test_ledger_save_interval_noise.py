"""An interval that holds a save is judged on its steps' time, as every other interval: its steps' jitter within
the run's noise is productive, the save's time checkpoint, and nothing is left over as slowdown. Before, a log
every 50 batches whose saves fall between two records (Composer's console logger) booked each save interval's
jitter as slowdown (own campaign composer_pyxis: 0.5-0.6 GPU-h of slowdown where there was none)."""

from __future__ import annotations

import datetime as dt

import polars as pl

from clusterlab.account import ledger

T0 = dt.datetime(2026, 8, 3, 4, 0, 0)
BASE = 6.0
N = 20  # steps a record covers
# records of 20 steps whose time per step wanders by a few per mille around the baseline; a 45 s save after step 100
PER_STEP = [6.0, 6.012, 5.991, 6.006, 5.994, 6.015, 5.988, 6.003, 6.018, 5.997]
SAVE = 45.0


def _wide() -> pl.DataFrame:
    steps = [N * (i + 1) for i in range(len(PER_STEP))]
    intervals = [N * p + (SAVE if s == 120 else 0.0) for p, s in zip(PER_STEP, steps, strict=True)]
    ends = [T0 + dt.timedelta(seconds=x) for x in pl.Series(intervals).cum_sum().to_list()]
    tl = pl.DataFrame({"attempt": [1] * len(ends), "step": steps, "n": [N] * len(ends), "start": [T0, *ends[:-1]],
                       "end": ends, "interval_s": intervals, "step_s": PER_STEP, "data_s": [0.0] * len(ends),
                       "err_s": [0.0] * len(ends)}).with_columns(pl.col("attempt").cast(pl.Int32))
    saves = pl.DataFrame({"s_attempt": [1], "save_step": [100], "ts": [ends[4]], "duration_s": [SAVE]},
                         schema={"s_attempt": pl.Int32, "save_step": pl.Int64, "ts": pl.Datetime("us"),
                                 "duration_s": pl.Float64})
    slow = pl.DataFrame(schema={"attempt": pl.Int32, "step": pl.Int64, "host": pl.String})
    keep = pl.DataFrame(schema={"attempt": pl.Int32, "keep_step": pl.Int64, "keep_ts": pl.Datetime("us")})
    return ledger.split_intervals(tl, saves, slow, keep, BASE)


def test_a_save_interval_jitter_is_productive_not_slowdown() -> None:
    w = _wide()
    saved = w.filter(pl.col("step") == 120).row(0, named=True)
    assert saved["checkpoint"] == SAVE, saved
    assert saved["slowdown"] == 0.0, saved
    assert abs(saved["productive"] - N * PER_STEP[5]) < 1e-9, saved
    assert w["slowdown"].sum() == 0.0
    assert abs(w["productive"].sum() + w["checkpoint"].sum() - w["interval_s"].sum()) < 1e-9

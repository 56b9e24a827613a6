"""A save stalls every rank for longer than its engine's lines span: the state is gathered before the first line and
the ranks wait at a barrier after the last (DeepSpeed logs `[Torch] Checkpoint ... is about to be saved!` and
`... is ready now!` around its file writes only). The few tenths of a second an interval holding a save runs over
beyond the logged span are the save's (checkpoint), not a slowdown of its steps. Before, every save of a DeepSpeed
run left that edge as slowdown (own campaign gpu_health_twoprov: 0.68 GPU-h of slowdown where there was none,
checkpoint 0.4 GPU-h short); a real slowdown beside a save, slow steps before it and a straggler's interval keep
theirs."""

from __future__ import annotations

import datetime as dt

import polars as pl

from clusterlab.account import ledger

T0 = dt.datetime(2025, 6, 17, 9, 30, 0)
BASE = 3.5
N = 25  # steps a record covers, every step at the baseline (no jitter: the noise tolerance is zero)
LOGGED = 79.2  # the save's span between its first and last line


def _wide(overrun_s: float, slow_host: str | None = None, slow_before_s: float = 0.0) -> pl.DataFrame:
    steps = [N * (i + 1) for i in range(6)]
    intervals = [N * BASE + (LOGGED + overrun_s if s == 75 else slow_before_s if s == 50 else 0.0) for s in steps]
    ends = [T0 + dt.timedelta(seconds=x) for x in pl.Series(intervals).cum_sum().to_list()]
    tl = pl.DataFrame({"attempt": [2] * 6, "step": steps, "n": [N] * 6, "start": [T0, *ends[:-1]], "end": ends,
                       "interval_s": intervals, "step_s": [BASE] * 6, "data_s": [0.0] * 6, "err_s": [0.0] * 6}
                      ).with_columns(pl.col("attempt").cast(pl.Int32))
    saves = pl.DataFrame({"s_attempt": [2], "save_step": [50], "ts": [ends[1]], "duration_s": [LOGGED]},
                         schema={"s_attempt": pl.Int32, "save_step": pl.Int64, "ts": pl.Datetime("us"),
                                 "duration_s": pl.Float64})
    slow = pl.DataFrame({"attempt": [2], "step": [75], "host": [slow_host]} if slow_host else None,
                        schema={"attempt": pl.Int32, "step": pl.Int64, "host": pl.String})
    keep = pl.DataFrame(schema={"attempt": pl.Int32, "keep_step": pl.Int64, "keep_ts": pl.Datetime("us")})
    return ledger.split_intervals(tl, saves, slow, keep, BASE).filter(pl.col("step") == 75)


def test_the_unlogged_edges_of_a_save_are_checkpoint() -> None:
    row = _wide(0.41).row(0, named=True)
    assert row["slowdown"] == 0.0, row
    assert abs(row["checkpoint"] - (LOGGED + 0.41)) < 1e-9, row
    assert abs(row["productive"] - N * BASE) < 1e-9, row


def test_a_real_slowdown_beside_a_save_stays_slowdown() -> None:
    row = _wide(30.0).row(0, named=True)
    assert row["slowdown"] > 25.0, row
    assert row["checkpoint"] <= LOGGED + ledger.SAVE_EDGE_MAX_S + 1e-9, row


def test_a_straggler_interval_keeps_its_excess() -> None:
    row = _wide(2.0, slow_host="gx-17").row(0, named=True)
    assert row["checkpoint"] == LOGGED, row
    assert abs(row["straggler"] - 2.0) < 1e-9, row


def test_beside_slow_steps_the_overrun_is_the_steps() -> None:
    # the record before the save ran 1.5 s over its steps (an unexplained slow stretch): the save's interval runs
    # over for the same reason, not for the save's edges
    row = _wide(0.41, slow_before_s=1.5).row(0, named=True)
    assert row["checkpoint"] == LOGGED, row
    assert abs(row["slowdown"] - 0.41) < 1e-9, row

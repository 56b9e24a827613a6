"""Thrown-away time is recompute, whatever slowed it (issue 29, the outsiders' ledger convention): from the last
durable save of a failed attempt to its root event everything is `recompute`, a straggling host's or a slowdown's
excess on those steps too; straggler, slowdown and data stall count only on the steps the next attempt kept. Before,
a thrown-away step's excess was booked by its cause (own campaign bloom_opt attempt 7: its straggling after the last
save was straggler)."""

from __future__ import annotations

import datetime as dt

import polars as pl

from clusterlab.account import ledger

T0 = dt.datetime(2026, 12, 6, 9, 0, 0)
BASE = 10.0
# steps 1-8 at the baseline; 9 and 10 slowed by host n3 (13 s); 11 slowed for no one host's fault (12 s), with a
# data wait of 1 s above the others'
INTERVALS = [BASE] * 8 + [13.0, 13.0, 12.0]
DATA = [0.1] * 10 + [1.1]


def _wide(keep_step: int | None) -> pl.DataFrame:
    ends = [T0 + dt.timedelta(seconds=s) for s in pl.Series(INTERVALS).cum_sum().to_list()]
    tl = pl.DataFrame({"attempt": [1] * len(ends), "step": list(range(1, len(ends) + 1)), "n": [1] * len(ends),
                       "start": [T0, *ends[:-1]], "end": ends, "interval_s": INTERVALS, "step_s": INTERVALS,
                       "data_s": DATA, "err_s": [0.0] * len(ends)}).with_columns(pl.col("attempt").cast(pl.Int32))
    saves = pl.DataFrame(schema={"s_attempt": pl.Int32, "save_step": pl.Int64, "ts": pl.Datetime("us"),
                                 "duration_s": pl.Float64})
    slow = pl.DataFrame({"attempt": [1, 1], "step": [9, 10], "host": ["n3", "n3"]}).with_columns(
        pl.col("attempt").cast(pl.Int32))
    keep = pl.DataFrame({"attempt": [1], "keep_step": [keep_step], "keep_ts": [None]},
                        schema={"attempt": pl.Int32, "keep_step": pl.Int64, "keep_ts": pl.Datetime("us")})
    return ledger.thrown_is_recompute(ledger.split_intervals(tl, saves, slow, keep, BASE))


def _sums(w: pl.DataFrame) -> dict[str, float]:
    return {c: float(w[c].sum()) for c in ("productive", "straggler", "slowdown", "data_stall", "recompute",
                                             "checkpoint")}


def test_thrown_away_steps_are_recompute_whole() -> None:
    got = _sums(_wide(keep_step=9))  # the next attempt resumed from step 9: steps 10 and 11 thrown away
    assert got["straggler"] == 3.0, got  # step 9's excess only: it was kept
    assert got["slowdown"] == 0.0 and got["data_stall"] == 0.0, got  # step 11's, thrown away
    assert got["recompute"] == 13.0 + 12.0, got  # all the wall time of steps 10 and 11
    assert got["productive"] == 9 * BASE, got
    assert abs(sum(got.values()) - sum(INTERVALS)) < 1e-9, got


def test_kept_steps_keep_their_causes() -> None:
    got = _sums(_wide(keep_step=None))  # nothing thrown away
    assert got["straggler"] == 6.0 and got["recompute"] == 0.0, got
    assert abs(got["data_stall"] - 1.0) < 1e-9 and abs(got["slowdown"] - 1.0) < 1e-9, got

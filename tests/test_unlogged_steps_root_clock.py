"""A log that prints every N steps is silent for the steps between its records; a fault shortly before the next
record was due stopped a job that had trained those steps (`ledger.with_unlogged_steps`). The fault's line is on its
own host's clock and the records on the log's: clocks a few seconds apart each way put a fault 3 s before the record
was due 8 s past it. Within the hosts' clock tolerance it is still the step under way; a root a minute late (a
watchdog) says nothing of how long the steps went on."""

from __future__ import annotations

import datetime as dt

import polars as pl

from clusterlab.account import ledger

T0 = dt.datetime(2026, 12, 5, 3, 0, 0)
STEP_S, EVERY = 6.4, 5


def _tl() -> pl.DataFrame:
    """Ten records of five 6.4 s steps each: the last (step 50) ends 320 s after T0."""
    ends = [T0 + dt.timedelta(seconds=STEP_S * EVERY * k) for k in range(1, 11)]
    return pl.DataFrame({"attempt": [1] * 10, "step": [EVERY * k for k in range(1, 11)], "n": [EVERY] * 10,
                         "start": [e - dt.timedelta(seconds=STEP_S * EVERY) for e in ends], "end": ends,
                         "interval_s": [STEP_S * EVERY] * 10, "step_s": [STEP_S] * 10}).with_columns(
        pl.col("attempt").cast(pl.Int32))


def _added(after_s: float, skew_s: float) -> int:
    roots = pl.DataFrame({"attempt": [1], "root_ts": [T0 + dt.timedelta(seconds=320 + after_s)]}).with_columns(
        pl.col("attempt").cast(pl.Int32))
    got = ledger.with_unlogged_steps(_tl(), roots, STEP_S, skew_s)
    return int(got["step"].max()) - 50


def test_a_root_past_the_due_record_within_the_clock_tolerance_adds_the_unlogged_steps() -> None:
    # due at 32 s (33.6 s with the slack); the AER line reads 39 s on a clock 10 s off the log's
    assert _added(39.0, skew_s=10.0) == EVERY - 1
    assert _added(39.0, skew_s=0.0) == 0  # on one clock, no record came when one was due: progress had stopped


def test_a_late_root_adds_nothing_whatever_the_clocks() -> None:
    assert _added(70.0, skew_s=10.0) == 0
    assert _added(20.0, skew_s=10.0) == 3  # before the record was due: the whole steps it ran, as always

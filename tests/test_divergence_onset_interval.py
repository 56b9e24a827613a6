"""The onset of a divergence is the start of the spike's step, on logs that print a record every step and on logs
that print one every N steps (HF Trainer's `logging_steps`, a loop's `log_interval`): such a record's step began one
step's time before it was logged, not at the record before it (`onsets.spike_onsets`, a pure rule on frames)."""

from __future__ import annotations

import datetime as dt

import polars as pl

from clusterlab.diagnose import onsets

T0 = dt.datetime(2026, 3, 1, 12, 0, 0)


def _logged(steps: list[int], secs: list[float], step_s: list[float | None]) -> pl.DataFrame:
    return pl.DataFrame({"attempt": [3] * len(steps), "step": steps,
                         "ts": [T0 + dt.timedelta(seconds=s) for s in secs], "step_s": step_s},
                        schema={"attempt": pl.Int32, "step": pl.Int64, "ts": pl.Datetime("us"),
                                "step_s": pl.Float64})


def _onset(logged: pl.DataFrame, step: int) -> dt.datetime:
    spikes = pl.DataFrame({"run": ["r"], "attempt": [3], "step": [step]}, schema={
        "run": pl.String, "attempt": pl.Int32, "step": pl.Int64})
    (got,) = onsets.spike_onsets(logged, spikes)["onset"].to_list()
    return got


def test_a_record_every_ten_steps_dates_the_onset_one_step_before_the_spike_record() -> None:
    # a record every 10 steps, 76 s apart; a save of 53 s fell between the last good record and the spike's
    logged = _logged([3780, 3790, 3800, 3810, 3820], [0, 76, 152, 281, 357], [None] * 5)
    assert _onset(logged, 3810) == T0 + dt.timedelta(seconds=281 - 12.9)


def test_a_record_every_step_dates_it_at_the_record_before() -> None:
    logged = _logged([40, 41, 42, 43], [0, 7.6, 15.2, 22.8], [None] * 4)
    assert _onset(logged, 42) == T0 + dt.timedelta(seconds=7.6)


def test_a_printed_step_time_wins() -> None:
    # Megatron's `elapsed time per iteration (ms)`: the record's own step time, whatever the interval
    logged = _logged([100, 200, 300], [0, 760, 1520], [7.5, 7.5, 7.5])
    assert _onset(logged, 300) == T0 + dt.timedelta(seconds=1520 - 7.5)

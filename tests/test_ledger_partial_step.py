"""The work a failure cut short is `recompute`; `hang` runs from the root event to the exit (DESIGN's ledger, and the
outsiders' campaigns: "recompute = end of the last durable save -> root event, i.e. the thrown-away steps plus the
partial step in flight"). On 100 s steps (BLOOM's were about that) the step in flight is up to 100 s x every GPU per
failure, several GPU-hours on a few hundred GPUs: booked as hang, the split is wrong by more than a category's bar.

What the evidence cannot date is estimated, never guessed as zero: a root more than a step in flight after the last
step, or dated by the last step's end itself, is when the fault was noticed; the fault fell in the step in flight,
half of one on average. A hang with no deeper cause has no moment of its own: its root is the last step every rank
finished, and nothing of the next one was work."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterlab import Lab
from clusterlab.account import ledger
from clusterlab.simulator import simulate
from clusterlab.simulator.score import score

T0 = dt.datetime(2026, 12, 7, 9, 0, 0)
STEP_S = 100.0
LAST_END = 10 * STEP_S  # ten steps of 100 s, the last ending here
EXIT = LAST_END + 900.0  # the attempt's exit: a watchdog's timeout later


def _at(s: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=s)


def _tails(root_s: float | None, hang: bool = False, saves: pl.DataFrame | None = None,
           stepped: bool = True) -> dict:
    n = 10 if stepped else 0
    tl = pl.DataFrame({"attempt": [1] * n, "step": list(range(1, n + 1)),
                       "start": [_at(STEP_S * i) for i in range(n)], "end": [_at(STEP_S * (i + 1)) for i in range(n)]},
                      schema={"attempt": pl.Int32, "step": pl.Int64, "start": pl.Datetime("us"),
                              "end": pl.Datetime("us")})
    att = pl.DataFrame({"attempt": [1, 2], "start_ts": [_at(-60), _at(EXIT + 120)],
                        "end_ts": [_at(EXIT), _at(EXIT + 999)]},
                       schema={"attempt": pl.Int32, "start_ts": pl.Datetime("us"), "end_ts": pl.Datetime("us")})
    roots = pl.DataFrame({"attempt": [1], "root_ts": [None if root_s is None else _at(root_s)], "hang": [hang]},
                         schema={"attempt": pl.Int32, "root_ts": pl.Datetime("us"), "hang": pl.Boolean})
    sv = saves if saves is not None else pl.DataFrame(schema={"s_attempt": pl.Int32, "save_step": pl.Int64,
                                                              "ts": pl.Datetime("us"), "duration_s": pl.Float64,
                                                              "ok": pl.Boolean})
    return ledger.tails(tl, att, sv, [2], roots, STEP_S).filter(pl.col("attempt") == 1).row(0, named=True)


def test_the_step_a_dated_root_cut_short_is_recompute_and_hang_runs_from_the_root() -> None:
    t = _tails(LAST_END + 40)  # an Xid 40 s into the step in flight
    assert t["partial"] == pytest.approx(40.0)
    assert t["hang"] == pytest.approx(EXIT - LAST_END - 40)
    assert t["partial"] + t["hang"] + t["tail_checkpoint"] == pytest.approx(t["tail"])  # nothing made or lost


def test_a_root_noticed_long_after_the_last_step_books_half_a_step() -> None:
    # a peer's transport timeout five minutes on: no step that long, so the fault struck inside the one in flight
    t = _tails(LAST_END + 300)
    assert t["partial"] == pytest.approx(STEP_S / 2)
    assert t["hang"] == pytest.approx(EXIT - LAST_END - STEP_S / 2)


def test_a_root_dated_by_the_last_step_itself_books_half_a_step() -> None:
    assert _tails(LAST_END)["partial"] == pytest.approx(STEP_S / 2)


def test_a_root_before_the_last_step_ended_cut_nothing() -> None:
    # a second-resolution stamp a little before the step's end: the step finished, the fault stopped the next at once
    assert _tails(LAST_END - 0.6)["partial"] == 0.0


def test_a_hang_with_no_deeper_cause_has_no_partial_step() -> None:
    t = _tails(LAST_END + 40, hang=True)
    assert t["partial"] == 0.0 and t["hang"] == pytest.approx(EXIT - LAST_END)


def test_a_save_the_root_cut_short_is_work_thrown_away_up_to_the_root() -> None:
    # step 10's save began at the step's end and never said it was done; the GPU failed 250 s into it
    saves = pl.DataFrame({"s_attempt": [1], "save_step": [10], "ts": [_at(LAST_END)], "duration_s": [0.0],
                          "ok": [False]}, schema={"s_attempt": pl.Int32, "save_step": pl.Int64,
                                                  "ts": pl.Datetime("us"), "duration_s": pl.Float64, "ok": pl.Boolean})
    assert _tails(LAST_END + 250, saves=saves)["partial"] == pytest.approx(250.0)
    # the same save, finished (its format printed no finish line: ok unknown): a root that late is noticed, not struck
    assert _tails(LAST_END + 250, saves=saves.with_columns(ok=pl.lit(None, pl.Boolean)))["partial"] == pytest.approx(
        STEP_S / 2)


def test_an_attempt_that_never_stepped_has_no_partial_step() -> None:
    t = _tails(300.0, stepped=False)
    assert t["partial"] == 0.0


def test_no_root_no_partial() -> None:
    assert _tails(None)["partial"] == 0.0


@settings(max_examples=60, deadline=None)
@given(root=st.one_of(st.none(), st.floats(LAST_END - 30, EXIT + 60)), hang=st.booleans(), saving=st.booleans())
def test_the_tail_is_split_never_made_or_lost(root: float | None, hang: bool, saving: bool) -> None:
    """Wherever the root falls, whatever its kind: partial, hang and the tail's save add up to the tail; the partial
    is never negative, never more than a step in flight unless a save was cut short, and none for a hang."""
    saves = pl.DataFrame({"s_attempt": [1], "save_step": [10], "ts": [_at(LAST_END)], "duration_s": [0.0],
                          "ok": [False]}, schema={"s_attempt": pl.Int32, "save_step": pl.Int64,
                                                  "ts": pl.Datetime("us"), "duration_s": pl.Float64, "ok": pl.Boolean})
    t = _tails(root, hang=hang, saves=saves if saving else None)
    assert t["partial"] + t["hang"] + t["tail_checkpoint"] == pytest.approx(t["tail"])
    assert 0.0 <= t["partial"] <= t["tail"] - t["tail_checkpoint"] + 1e-9
    if hang or root is None:
        assert t["partial"] == 0.0
    elif not saving:
        assert t["partial"] <= ledger.FLIGHT_STEPS * STEP_S


@pytest.mark.slow
def test_round_trip_on_long_steps_books_the_step_in_flight_as_recompute(tmp_path: Path) -> None:
    """60 s steps on 8 GPUs: half a step per failure is 4 GPU-minutes, beyond the split's allowance per failure
    (`score.ROOT_DATING_S`); hang booked from the last step's end fails this."""
    simulate(tmp_path, seed=5, providers=1, clusters_per_provider=1, nodes_per_cluster=4, gpus_per_node=2, days=0.25,
             step_s=60.0, save_every_s=1200, rates={"gpu_memory_ecc": 0.1, "gpu_fell_off_bus": 0.1, "host_hw": 0.1},
             scenarios=False)
    with Lab(":memory:") as lab:
        assert lab.ingest(tmp_path).problems == []
        result = score(lab, tmp_path)
    assert result.incidents >= 2 and not result.missed, result.report()
    assert not result.off, result.report()

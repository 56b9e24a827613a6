"""A diverged loss's onset read off the step clock is where the spike's step began, even when the log stamps one
iteration line in ten (Megatron-DeepSpeed prints `elapsed time per iteration` on every line and a time on few): the
ledger's hang runs from it to the exit. The later stamp bounds only a row the step clock could not date; taking it
for the root booked up to nine diverged iterations as recompute instead of hang."""

from __future__ import annotations

import json

import polars as pl
from timelines import Attempt, write_events, write_run

from clusterlab import Lab

STEP_S, SPIKE, LAST, TAIL = 8.0, 64, 90, 20.0  # the spike at iteration 64, between the stamps of 61 and 71


# iteration times jitter by a few ms (stamps with milliseconds, not whole seconds from one start)
TIMES = [STEP_S + 0.011 * (i % 5) for i in range(LAST)]


def _at(step: int) -> float:
    """Seconds after T0 at which iteration `step` ends (the first begins 40 s in)."""
    return 40 + sum(TIMES[:step])


def test_the_hang_of_a_diverged_job_runs_from_the_spikes_step_not_the_next_stamp() -> None:
    with Lab(":memory:") as lab:
        write_run(lab.con, "r", 8, [Attempt(0, 40, TIMES, hosts=["dv-001"], tail_s=TAIL)])
        # one line in ten carries a stamp; the others were dated on the step clock between the stamps around them
        lab.con.execute("""
            UPDATE steps SET ts_lo = a.ts, ts_hi = b.ts, dated = CASE WHEN b.ts IS NULL THEN 'after' ELSE 'between' END
            FROM steps a LEFT JOIN steps b ON b.step = a.step + 10
            WHERE steps.step % 10 <> 1 AND a.step = steps.step - (steps.step - 1) % 10""")
        spike = {"step": SPIKE, "outcome": "diverged"}
        write_events(lab.con, [
            {"t": _at(SPIKE), "source": "training_health", "kind": "loss_spike", "failure_mode": "loss_divergence",
             "detail": json.dumps(spike), "text": f"loss 7.5 at step {SPIKE} is 3.2x the lower quartile"},
            {"t": _at(LAST), "source": "training_health", "kind": "loss_not_recovered",
             "failure_mode": "loss_divergence", "detail": json.dumps({"step": LAST, "spike_step": SPIKE,
                                                                      "outcome": "diverged"}),
             "text": f"the loss never came back before the log ends at step {LAST}"}], run="r", attempt=1)
        att = lab.attribute("r")
        end = att.incidents.filter(pl.col("kind") == "attempt_end").row(0, named=True)
        hang_s = att.rows.filter(pl.col("category") == "hang")["seconds"].sum()
    assert end["failure_mode"] == "loss_divergence", end
    # the spike's step began at the end of the one before and stays a step (the clocks' slack); the hang follows
    want = TAIL + sum(TIMES[SPIKE:])
    assert abs(hang_s - want) <= 1.0, (hang_s, want, end["root_ts"])

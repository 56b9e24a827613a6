"""A loss that diverged and never came back began at its spike (`root_cause._divergence_onsets`), on hand-made
tables: training_health restates it at the log's last step row so that nothing steps past it, and that restatement
won the attempt's end, so the root was the last step (own campaign bloom_opt attempt 5: the operators let the
diverged job run 25 min before their scancel; hang 0.6 GPU-h instead of 62.7, recompute 49 GPU-h too many)."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from clusterlab import Lab
from clusterlab.diagnose import root_cause

T0 = dt.datetime(2026, 12, 1, 20, 0)
STEP_S = 30.0


@pytest.fixture()
def lab():
    with Lab(":memory:") as lab:
        lab.con.execute("INSERT INTO ingested_files (file_id, path) VALUES (1, 'runs/r/attempt-1/train.log')")
        # attempt 1 steps 1-100 from 20:01 (30 s each), then a second attempt
        lab.con.execute("INSERT INTO attempts VALUES ('r', 1, ?, ?, ?, 1, 100, ['h1'], 1), "
                        "('r', 2, ?, ?, ?, 61, 70, ['h1'], 1)",
                        [T0, _end(100) + dt.timedelta(seconds=20), _end(1), T0 + dt.timedelta(hours=2),
                         T0 + dt.timedelta(hours=3), T0 + dt.timedelta(hours=2, minutes=5)])
        lab.con.executemany("INSERT INTO steps (file_id, source, run, attempt, line, ts, step, step_s, loss) VALUES "
                            "(1, 'megatron', 'r', 1, ?, ?, ?, ?, ?)",
                            [[k, _end(k), k, STEP_S, 2.3 if k < 60 else 7.5] for k in range(1, 101)])
        yield lab


def _end(step: int) -> dt.datetime:
    return T0 + dt.timedelta(seconds=60 + STEP_S * step)


def _health(lab: Lab, kind: str, step: int, detail: dict) -> None:
    lab.con.execute("INSERT INTO events (file_id, source, run, attempt, line, ts, kind, failure_mode, severity, text, "
                    "detail) VALUES (1, 'training_health', 'r', 1, ?, ?, ?, 'loss_divergence', 'error', ?, ?)",
                    [step, _end(step), kind, f"{kind} at step {step}", json.dumps(detail)])


def test_a_diverged_loss_roots_at_the_start_of_its_spike_step(lab: Lab) -> None:
    _health(lab, "loss_spike", 60, {"step": 60, "outcome": "diverged"})
    _health(lab, "loss_not_recovered", 100, {"step": 100, "spike_step": 60, "outcome": "diverged"})
    inc, _ = root_cause.attempt_end_incidents(lab.con, "r")
    end = inc.filter(inc["attempt"] == 1).row(0, named=True)
    assert end["failure_mode"] == "loss_divergence"
    assert end["root_ts"] == _end(59)


def test_an_attempt_ended_by_something_else_keeps_its_root(lab: Lab) -> None:
    _health(lab, "loss_spike", 60, {"step": 60, "outcome": "recovered"})  # healed: no onset to move to
    lab.con.execute("INSERT INTO events (file_id, source, run, attempt, line, ts, kind, failure_mode, severity, text, "
                    "detail) VALUES (1, 'torch', 'r', 1, 101, ?, 'cuda_error', 'cuda_error', 'error', 'CUDA error', "
                    "'{}')", [_end(100) + dt.timedelta(seconds=5)])
    inc, _ = root_cause.attempt_end_incidents(lab.con, "r")
    end = inc.filter(inc["attempt"] == 1).row(0, named=True)
    assert (end["failure_mode"], end["root_ts"]) == ("cuda_error", _end(100) + dt.timedelta(seconds=5))

"""Attempts that are the job steps of one allocation (a batch script relaunching `srun` inside it, HyperPod's
auto-resume) take their own step's span; one attempt in a job, or attempts that do not each begin in a step of their
own, keep the job's."""

from __future__ import annotations

import datetime as dt

import polars as pl

from clusterlab import Lab
from clusterlab.diagnose import job_steps

T0 = dt.datetime(2026, 12, 2, 3, 10)


def _h(hours: float) -> dt.datetime:
    return T0 + dt.timedelta(hours=hours)


def _spans(rows: list[tuple[int, float, float]], job: str = "1187") -> pl.DataFrame:
    """Attempts sharing job `job` (the first starting at the job's start, the last ending at its end)."""
    return pl.DataFrame([{"attempt": a, "start_ts": _h(s), "end_ts": _h(e), "ev_start_ts": _h(s), "ev_end_ts": _h(e),
                          "job_id": job, "resume_step": None, "start_by": "its logs", "end_by": "its logs"}
                         for a, s, e in rows])


def _with_steps(spans: pl.DataFrame, steps: list[tuple[str, float, float]]) -> pl.DataFrame:
    with Lab(":memory:") as lab:
        for job_id, s, e in [("1187", -0.01, 19.3), ("1187.batch", -0.01, 19.3), *steps]:
            lab.con.execute("INSERT INTO jobs (job_id, start_ts, end_ts) VALUES (?, ?, ?)", [job_id, _h(s), _h(e)])
        return job_steps.with_step_spans(lab.con, spans)


def test_each_attempt_in_a_step_of_its_own_takes_that_steps_span() -> None:
    spans = _spans([(1, 0.0, 5.27), (2, 5.68, 8.17), (3, 8.65, 19.3)])
    got = _with_steps(spans, [("1187.0", 0.0, 5.28), ("1187.1", 5.67, 8.17), ("1187.2", 8.64, 19.1)])
    rows = got.sort("attempt").rows(named=True)
    assert rows[0]["start_ts"] == _h(0.0) and rows[0]["end_ts"] == _h(5.28) and rows[0]["end_by"] == "sacct 1187.0"
    assert (rows[1]["start_ts"], rows[1]["end_ts"], rows[1]["start_by"]) == (_h(5.67), _h(8.17), "sacct 1187.1")
    # the last step ended before the allocation did (a person cancelled it later): that tail is no attempt's
    assert rows[2]["end_ts"] == _h(19.1)


def test_attempts_not_each_in_a_step_of_their_own_keep_their_spans() -> None:
    spans = _spans([(1, 0.0, 5.27), (2, 5.68, 8.17)])
    # one step for both (torchrun restarting its workers inside one srun)
    assert _with_steps(spans, [("1187.0", 0.0, 19.2)]).equals(spans)
    # a single attempt in its job
    one = _spans([(1, 0.0, 19.3)])
    assert _with_steps(one, [("1187.0", 0.0, 19.1)]).equals(one)

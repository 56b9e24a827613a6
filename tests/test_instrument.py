"""Step instrumentation: records that ingest cleanly, lazy (CUDA-style) resolution, crash safety."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from clusterlab import Lab
from clusterlab.torchtools.instrument import StepRecorder, WallClock


def _lines(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text().splitlines()]


def test_records_have_the_documented_fields_and_ingest_cleanly(tmp_path: Path, lab: Lab) -> None:
    path = tmp_path / "runs" / "r" / "attempt-1" / "steps" / "rank-3.jsonl"
    with StepRecorder(path, rank=3, host="node7") as rec:
        for step in range(1, 4):
            with rec.step(step) as s:
                with s.data():
                    time.sleep(0.002)
                with s.compute():
                    time.sleep(0.004)
                with s.comm():
                    time.sleep(0.001)
                s.tokens, s.loss = 512, torch.tensor(2.5 - step / 10)
    rows = _lines(path)
    assert [r["step"] for r in rows] == [1, 2, 3]
    assert list(rows[0]) == ["ts", "rank", "host", "step", "step_s", "data_s", "compute_s", "comm_s", "tokens", "loss"]
    r = rows[0]
    assert r["data_s"] >= 0.002 and r["compute_s"] >= 0.004 and r["step_s"] >= r["data_s"] + r["compute_s"]
    assert r["ts"].endswith("+00:00") and (r["rank"], r["host"], r["tokens"]) == (3, "node7", 512)
    summary = lab.ingest(tmp_path)
    assert summary.rows["rank_steps"] == 3 and summary.to_dict()["unparsed_lines"] == 0, summary.problems
    got = lab.sql("SELECT run, attempt, host, rank, step, loss FROM rank_steps ORDER BY step").rows()
    assert got[0] == ("r", 1, "node7", 3, 1, pytest.approx(2.4))


def test_compute_is_the_rest_of_the_step_when_only_data_and_comm_are_marked(tmp_path: Path) -> None:
    with StepRecorder(tmp_path / "r.jsonl", rank=0, host="h") as rec, rec.step(1) as s:
        with s.comm():
            time.sleep(0.003)
        time.sleep(0.005)
    r = _lines(tmp_path / "r.jsonl")[0]
    assert r["compute_s"] == pytest.approx(r["step_s"] - r["comm_s"], abs=1e-5) and r["compute_s"] >= 0.005
    assert "data_s" not in r


def test_unmarked_steps_claim_no_breakdown_and_nan_losses_are_said_not_written(tmp_path: Path) -> None:
    with StepRecorder(tmp_path / "r.jsonl", rank=0, host="h") as rec, rec.step(1) as s:
        s.loss = float("nan")
    # JSON has no NaN: the record says the loss was not finite (silent data corruption compares ranks on it)
    rec = _lines(tmp_path / "r.jsonl")[0]
    assert set(rec) == {"ts", "rank", "host", "step", "step_s", "loss_nonfinite"} and rec["loss_nonfinite"] is True


def test_a_step_that_raises_is_not_written(tmp_path: Path) -> None:
    with StepRecorder(tmp_path / "r.jsonl", rank=0, host="h") as rec:
        with rec.step(1):
            pass
        with pytest.raises(ZeroDivisionError), rec.step(2):
            _ = 1 / 0
    assert [r["step"] for r in _lines(tmp_path / "r.jsonl")] == [1]


def test_host_template_emulates_one_node_per_rank(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CLUSTERLAB_HOST", "node{rank}")
    with StepRecorder(tmp_path / "r.jsonl", rank=5) as rec:
        assert rec.host == "node5"


class LazyClock(WallClock):
    """Marks that complete only when the test says the 'GPU' got there: CUDA events' contract."""

    def __init__(self) -> None:
        super().__init__()
        self.done_upto = -1  # index of the last completed mark
        self.n = 0
        self.waits = 0

    def mark(self) -> tuple[int, float]:
        self.n += 1
        return self.n - 1, super().mark()

    def ready(self, mark) -> bool:
        return mark[0] <= self.done_upto

    def wait(self, mark) -> None:
        self.waits += 1
        self.done_upto = max(self.done_upto, mark[0])

    def seconds(self, start, end) -> float:
        assert self.ready(end), "read before it completed: that would be a synchronisation"
        return end[1] - start[1]

    def wall(self, mark) -> float:
        return super().wall(mark[1])


def test_lazy_marks_are_written_only_once_complete_and_in_order(tmp_path: Path) -> None:
    clock, path = LazyClock(), tmp_path / "r.jsonl"
    rec = StepRecorder(path, rank=0, host="h", clock=clock, lag=2, max_pending=4)
    for step in range(1, 4):
        with rec.step(step) as s, s.comm():
            s.loss = float(step)
    assert not path.read_text() and clock.waits == 0  # nothing ready, nothing waited for
    clock.done_upto = clock.n - 1  # the GPU catches up
    with rec.step(4):
        pass
    assert [r["step"] for r in _lines(path)] == [1, 2, 3]  # step 4 is still in flight
    for step in range(5, 10):  # the GPU falls behind for good: past max_pending the oldest is waited for
        with rec.step(step):
            pass
    assert clock.waits >= 1 and len(rec._pending) <= 4
    rec.close()
    rows = _lines(path)
    assert [r["step"] for r in rows] == list(range(1, 10)) and rows[0]["loss"] == 1.0 and "comm_s" in rows[0]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_events_time_gpu_work_without_synchronising(tmp_path: Path) -> None:
    x = torch.randn(2048, 2048, device="cuda")
    with StepRecorder(tmp_path / "r.jsonl", rank=0, host="h", device="cuda") as rec:
        for step in range(1, 6):
            with rec.step(step) as s:
                with s.compute():
                    y = x @ x
                with s.comm():
                    y = y.sum()
                s.loss = y
    rows = _lines(tmp_path / "r.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 3, 4, 5]
    assert all(r["compute_s"] > 0 and r["step_s"] >= r["compute_s"] for r in rows) and "loss" in rows[0]


KILLED = textwrap.dedent("""
    import sys, time
    from clusterlab.torchtools.instrument import StepRecorder
    rec = StepRecorder(sys.argv[1], rank=0, host="h")
    step = 0
    while True:
        step += 1
        with rec.step(step) as s:
            with s.compute():
                time.sleep(0.0005)
            s.tokens, s.loss = 4096, 1.0 / step
""")


def test_sigkill_mid_run_leaves_every_written_step_complete(tmp_path: Path) -> None:
    path = tmp_path / "rank-0.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(path)])
    try:
        deadline = time.monotonic() + 30
        while (not path.exists() or path.stat().st_size < 20_000) and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    text = path.read_text()
    assert text.endswith("\n"), "a record was cut off"
    steps = [json.loads(ln)["step"] for ln in text.splitlines()]
    assert len(steps) > 100 and steps == list(range(1, len(steps) + 1))


def test_a_step_left_open_gets_one_stall_record_and_quick_steps_none(tmp_path: Path) -> None:
    path = tmp_path / "rank-3.jsonl"
    rec = StepRecorder(path, rank=3, host="h3", stall_min_s=0.3)
    for step in range(1, 6):
        with rec.step(step):
            time.sleep(0.005)
    s = rec.begin(6)  # the rank waits in step 6's collective: a peer never began it
    s.begin("comm")
    time.sleep(1.2)
    rec.close()
    records = [json.loads(line) for line in path.read_text().splitlines()]
    stalls = [r for r in records if "stalled_s" in r]
    assert [r["step"] for r in records if "step_s" in r] == [1, 2, 3, 4, 5]
    assert len(stalls) == 1 and stalls[0]["step"] == 6 and stalls[0]["region"] == "comm"
    assert stalls[0]["stalled_s"] >= 0.3 and stalls[0]["rank"] == 3
    with Lab(":memory:") as lab:
        lab.ingest(path)
        ev = lab.sql("SELECT kind, rank, host, failure_mode, detail FROM events").row(0, named=True)
        assert lab.sql("SELECT count(*) AS n FROM rank_steps")["n"][0] == 5
    assert (ev["kind"], ev["rank"], ev["host"], ev["failure_mode"]) == ("step_stalled", 3, "h3", None)
    assert json.loads(ev["detail"])["step"] == 6

"""The example job: a real `torchrun --nproc-per-node=2` on CPU, instrumented, checkpointed and told to fail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clusterlab import Lab
from conftest import ROOT

TRAIN = ROOT / "examples" / "train_tiny_gpt.py"


def _torchrun(*args: str, log: Path, timeout: float = 120) -> int:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", str(TRAIN), *args]
    # NOTE: both ranks run here; the host template gives each its own node name, as two nodes would.
    env = {**os.environ, "CLUSTERLAB_HOST": "node{rank}"}
    with open(log, "wb") as out:
        return subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, env=env).returncode


def _records(attempt: Path, rank: int) -> list[dict]:
    return [json.loads(ln) for ln in (attempt / "steps" / f"rank-{rank}.jsonl").read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.parametrize(("fault", "first_slow"), [(["--slow-rank", "1"], 1),
                                                   (["--fail-at-step", "4", "--fail-mode", "slow"], 4)])
def test_a_slowed_rank_is_found_as_the_straggler(tmp_path: Path, fault: list[str], first_slow: int) -> None:
    attempt = tmp_path / "bundle" / "runs" / "tiny" / "attempt-1"
    # NOTE: 3x and 12 steps: a margin against a busy 2-core machine making a healthy rank look slow once
    rc = _torchrun("--steps", "12", "--save-every", "5", "--out", str(attempt), *fault, "--slow-factor", "3",
                   log=tmp_path / "train.log")
    assert rc == 0, (tmp_path / "train.log").read_text()[-3000:]
    (attempt / "train.log").write_bytes((tmp_path / "train.log").read_bytes())
    r0, r1 = _records(attempt, 0), _records(attempt, 1)
    assert [r["step"] for r in r0] == [r["step"] for r in r1] == list(range(1, 13))
    assert {"data_s", "compute_s", "comm_s", "tokens", "loss"} <= set(r0[0])
    assert r0[-1]["loss"] == r1[-1]["loss"] < r0[0]["loss"]  # the mean loss, the same on every rank, falling
    assert sorted(p.name for p in (attempt / "checkpoints").iterdir()) == ["step-10", "step-5"]
    with Lab(tmp_path / "db.duckdb") as lab:
        summary = lab.ingest(tmp_path / "bundle")
        assert summary.rows["rank_steps"] == 24 and summary.to_dict()["unparsed_lines"] == 0, summary.problems
        assert summary.rows["steps"] == 12 and summary.rows["checkpoints"] == 2  # rank 0's torchtitan lines
        inc = lab.incidents("tiny")
    strag = inc.filter(kind="straggler")
    assert strag["host"].to_list() == ["node1"], (inc, [r["compute_s"] for r in r0], [r["compute_s"] for r in r1])
    assert strag["first_step"][0] in (first_slow, first_slow + 1)  # the first slowed step may still look usual


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["exit", "hang"])
def test_a_failing_rank_leaves_the_steps_before_it(tmp_path: Path, mode: str) -> None:
    out = tmp_path / "bundle" / "runs" / "tiny" / "attempt-1"
    rc = _torchrun("--steps", "6", "--out", str(out), "--fail-at-step", "4", "--fail-mode", mode,
                   "--pg-timeout-s", "5", log=tmp_path / "log")
    log = (tmp_path / "log").read_text()
    assert rc != 0, log[-3000:]
    assert [r["step"] for r in _records(out, 1)] == [1, 2, 3]
    assert [r["step"] for r in _records(out, 0)] == [1, 2, 3]  # rank 0 cannot finish step 4 without rank 1
    if mode == "exit":
        assert "injected failure on rank 1 before step 4" in log
    else:  # the postmortem names rank 1, which stopped, never rank 0, which timed out waiting for it
        (out / "train.log").write_text(log)
        with Lab(tmp_path / "db.duckdb") as lab:
            lab.ingest(tmp_path / "bundle")
            [inc] = lab.incidents("tiny").filter(kind="attempt_end").iter_rows(named=True)
            top = lab.evidence(inc["incident_id"]).row(0, named=True)
        assert (inc["failure_mode"], inc["host"]) == ("nccl_timeout", "node1"), (inc, log[-3000:])
        assert (top["kind"], top["rank"]) == ("stopped_first", 1), top

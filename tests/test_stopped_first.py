"""Progress first: in a hang, the rank whose step records end behind every other rank's is the suspect, and
what the waiting ranks print afterwards does not move the blame; records that say nothing about the end
(a healthy job killed mid-step, a file covering part of an attempt) name nobody."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from clusterlab import Lab

T0 = dt.datetime(2026, 12, 1, 6, 0, 0, tzinfo=dt.UTC)
STEP_S, STEPS, RUN = 4.0, 60, "hangrun"
HOSTS = {"g-001": range(0, 4), "g-002": range(4, 8)}


def _bundle(root: Path, *, behind: dict[int, int], kill_after_s: float, waiting_error: bool = False) -> Path:
    """8 ranks on 2 hosts step together; rank r's records end `behind[r]` steps early; the time limit comes
    `kill_after_s` after the job's last step."""
    (root / "runs" / RUN / "attempt-1").mkdir(parents=True)
    (root / "inventory.toml").write_text(
        '[providers.p]\nusd_per_gpu_hour = 2.0\n[clusters.c]\nprovider = "p"\ngpu = "H100-SXM"\n'
        'gpus_per_node = 4\nnodes = "g-[001-002]"\n')
    (root / "runs" / RUN / "run.toml").write_text('cluster = "c"\ngpus = 8\n')
    att = root / "runs" / RUN / "attempt-1"
    lines = []
    for host, ranks in HOSTS.items():
        for rank in ranks:
            for step in range(1, STEPS + 1 - behind.get(rank, 0)):
                ts = (T0 + dt.timedelta(seconds=10 + step * STEP_S)).timestamp()
                lines.append(json.dumps({"ts": ts, "rank": rank, "host": host, "step": step, "step_s": STEP_S,
                                         "compute_s": 3.5, "comm_s": 0.4, "data_s": 0.1, "tokens": 8192}))
    (att / "steps.jsonl").write_text("\n".join(lines) + "\n")
    end = T0 + dt.timedelta(seconds=10 + STEPS * STEP_S + kill_after_s)
    stamp = end.strftime("%Y-%m-%dT%H:%M:%S")
    out = [f"slurmstepd: error: *** JOB 7001 ON g-001 CANCELLED AT {stamp} DUE TO TIME LIMIT ***"]
    (att / "slurm-7001.out").write_text("\n".join(out) + "\n")
    if waiting_error:  # the waiting ranks' watchdogs give up while the job hangs: symptoms, on both hosts
        at = end - dt.timedelta(seconds=60)
        for host, ranks in HOSTS.items():
            (att / f"{host}.log").write_text("".join(
                f"[rank{r}]:[E{at:%m%d %H:%M:%S}.{r:06d}000 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught "
                f"collective operation timeout: WorkNCCL(SeqNum=612, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, "
                f"Timeout(ms)=1140000) ran for 1140013 milliseconds before timing out.\n"
                for r in ranks if r != 5))
    return root


def _end(tmp_path: Path, **kw) -> dict:
    root = _bundle(tmp_path / "bundle", **kw)
    with Lab(tmp_path / "h.duckdb") as lab:
        lab.ingest(root)
        inc = lab.incidents(RUN).filter(kind="attempt_end")
    assert inc.height == 1, inc
    return inc.row(0, named=True)


def test_the_rank_behind_every_other_in_a_hang_is_the_suspect(tmp_path: Path) -> None:
    inc = _end(tmp_path, behind={5: 1}, kill_after_s=1200)
    assert (inc["failure_mode"], inc["host"]) == ("nccl_timeout", "g-002")


def test_what_the_waiting_ranks_print_afterwards_does_not_move_the_blame(tmp_path: Path) -> None:
    inc = _end(tmp_path, behind={5: 1}, kill_after_s=1200, waiting_error=True)
    assert inc["host"] == "g-002", inc


@pytest.mark.parametrize("case", [
    {"behind": {}, "kill_after_s": 1200},  # every rank at the same step: a hang with no suspect
    {"behind": {5: 1}, "kill_after_s": 2.0},  # a healthy job killed mid-step: ranks part by a step at the kill
    {"behind": {5: 40}, "kill_after_s": 1200},  # a file that covers part of the attempt
    {"behind": {1: 1, 5: 1}, "kill_after_s": 1200},  # ranks of two hosts behind: no single suspect
])
def test_records_that_say_nothing_about_the_end_name_nobody(tmp_path: Path, case: dict) -> None:
    inc = _end(tmp_path, **case)
    assert inc["failure_mode"] != "nccl_timeout" or inc["host"] is None, inc


def _timeouts(root: Path, seqs: dict[int, int | None], at: dt.datetime) -> None:
    """Each rank in `seqs` prints a watchdog timeout of that collective (None: it prints none)."""
    att = root / "runs" / RUN / "attempt-1"
    for host, ranks in HOSTS.items():
        (att / f"{host}.log").write_text("".join(
            f"[rank{r}]:[E{at:%m%d %H:%M:%S}.{r:06d}000 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught "
            f"collective operation timeout: WorkNCCL(SeqNum={seqs[r]}, OpType=ALLREDUCE, NumelIn=1024, "
            f"NumelOut=1024, Timeout(ms)=600000) ran for 600013 milliseconds before timing out.\n"
            for r in ranks if seqs.get(r) is not None))


@pytest.mark.parametrize("seqs, host", [
    ({r: 612 for r in range(8) if r != 6}, "g-002"),  # rank 6 is missing from the flood: it was not waiting
    ({r: 611 if r == 2 else 612 for r in range(8)}, "g-001"),  # rank 2 is stuck one collective earlier
])
def test_the_rank_the_timeout_flood_singles_out_is_the_suspect(tmp_path: Path, seqs: dict, host: str) -> None:
    # the records agree (the hung rank stopped between steps); the waiting ranks' timeouts tell
    root = _bundle(tmp_path / "bundle", behind={}, kill_after_s=1200)
    _timeouts(root, seqs, T0 + dt.timedelta(seconds=10 + STEPS * STEP_S + 600))
    with Lab(tmp_path / "h.duckdb") as lab:
        lab.ingest(root)
        inc = lab.incidents(RUN).filter(kind="attempt_end").row(0, named=True)
    assert (inc["failure_mode"], inc["host"]) == ("nccl_timeout", host), inc


def test_a_flood_from_every_rank_of_the_same_collective_names_nobody(tmp_path: Path) -> None:
    root = _bundle(tmp_path / "bundle", behind={}, kill_after_s=1200)
    _timeouts(root, dict.fromkeys(range(8), 612), T0 + dt.timedelta(seconds=10 + STEPS * STEP_S + 600))
    with Lab(tmp_path / "h.duckdb") as lab:
        lab.ingest(root)
        inc = lab.incidents(RUN).filter(kind="attempt_end").row(0, named=True)
    assert not [r for r in inc["rejected"] if r["candidate"]["kind"] == "stopped_first"]
    assert inc["host"] is None or inc["confidence"] <= 0.3, inc  # a bare symptom at most


def _stalls(root: Path, ranks: list[int], step: int, at: dt.datetime) -> None:
    """Stall records (`StepRecorder`'s) of `ranks`, each still in `step` at `at`."""
    with (root / "runs" / RUN / "attempt-1" / "steps.jsonl").open("a") as f:
        for host, hr in HOSTS.items():
            for r in (r for r in hr if r in ranks):
                f.write(json.dumps({"ts": at.isoformat(), "rank": r, "host": host, "step": step,
                                    "stalled_s": 40.0, "region": "comm"}) + "\n")


def test_the_rank_that_never_began_the_step_the_others_stall_in_is_the_suspect(tmp_path: Path) -> None:
    # every rank's records end at the same step: only the stall records tell rank 6 (g-002) from the rest
    root = _bundle(tmp_path / "bundle", behind={}, kill_after_s=1200)
    _stalls(root, [r for r in range(8) if r != 6], STEPS + 1, T0 + dt.timedelta(seconds=10 + STEPS * STEP_S + 44))
    with Lab(tmp_path / "h.duckdb") as lab:
        lab.ingest(root)
        end = lab.incidents(RUN).filter(kind="attempt_end").row(0, named=True)
        stalls = lab.sql("SELECT count(*) AS n FROM events WHERE kind = 'step_stalled'")["n"][0]
    assert stalls == 7
    assert (end["host"], end["rank"]) == ("g-002", 6), end


@pytest.mark.parametrize("stalled", [list(range(8)), [0, 1, 2]], ids=["everyone-stalls", "most-never-began"])
def test_stall_records_that_single_out_nobody_name_nobody(tmp_path: Path, stalled: list[int]) -> None:
    root = _bundle(tmp_path / "bundle", behind={}, kill_after_s=1200)
    _stalls(root, stalled, STEPS + 1, T0 + dt.timedelta(seconds=10 + STEPS * STEP_S + 44))
    assert _end_of(tmp_path, root)["rank"] is None


def _end_of(tmp_path: Path, root: Path) -> dict:
    with Lab(tmp_path / "h.duckdb") as lab:
        lab.ingest(root)
        return lab.incidents(RUN).filter(kind="attempt_end").row(0, named=True)

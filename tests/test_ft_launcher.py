"""ft_launcher (NVIDIA Resiliency Extension): its lines, and in-job restarts as sub-attempts of the ledger."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl
import pytest

from clusterlab import Lab
from clusterlab.collectors import ft_launcher
from clusterlab.collectors._base import Context

T0 = dt.datetime(2026, 11, 24, 10, 0, 0)


def _stamp(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}"


def _iters(first: int, last: int, start: dt.datetime) -> list[str]:
    """Megatron iteration lines every 10 iterations of 1 s each, the first ending 10 s after `start`."""
    out = []
    for n, it in enumerate(range(first, last + 1, 10), start=1):
        t = start + dt.timedelta(seconds=10 * n)
        out.append(f"[{t:%Y-%m-%d %H:%M:%S.%f}] iteration {it:>8}/   20000 | consumed samples: {it * 64:>12} | "
                   "elapsed time per iteration (ms): 1000.0 | learning rate: 2.000000E-04 | global batch size:    64 "
                   "| lm loss: 2.412201E+00 | loss scale: 1.0 | grad norm: 0.311 | number of skipped iterations:   0 "
                   "| number of nan iterations:   0 |")
    return out


HANG = T0 + dt.timedelta(minutes=12)  # the rank monitor's heartbeat timeout: the failure
RESTART = HANG + dt.timedelta(seconds=1)  # the launcher restarts its worker group
RESUMED = RESTART + dt.timedelta(minutes=2)  # the restarted training's first interval begins


def _launcher_lines(host: str = "gpu-018") -> list[str]:
    hdr = f"[{host}] [workload:?(?) infra:1(1)]"
    return [
        f"{_stamp(T0)} [INFO] {hdr} launcher.py:655 [default] starting workers for entrypoint: python",
        f"{_stamp(HANG)} [WARNING] [{host}] [workload:?(5) infra:1(5)] rank_monitor_server.py:498 [Cycle 0] "
        "Did not get subsequent heartbeat. Waited 600.00 seconds.",
        f"{_stamp(RESTART)} [INFO] {hdr} launcher.py:636 [default] Worker group FAILED. 3/3 attempts left; "
        "will restart worker group",
        f"{_stamp(RESTART)} [INFO] {hdr} launcher.py:1002 Stopping workers... Timeout = 30 sec.",
    ]


def _training_lines() -> list[str]:
    # steps 10..100 from T0, a hang, then steps 60..120 again after the restart (resumed from step 50)
    return _iters(10, 100, T0) + _iters(60, 120, RESUMED)


def _check_split(lab: Lab, run: str) -> None:
    att = lab.sql(f"SELECT * FROM attempts WHERE run = '{run}' ORDER BY attempt")
    assert att["attempt"].to_list() == [1, 2]
    first, second = att.row(0, named=True), att.row(1, named=True)
    assert first["end_ts"] == HANG  # the failed part ends at the failure
    assert first["last_step"] == 100 and second["first_step"] == 60
    assert second["start_ts"] == RESTART
    ev = lab.sql(f"SELECT attempt, kind FROM events WHERE run = '{run}' AND source = 'ft_launcher'")
    assert ev.filter(pl.col("kind") == "heartbeat_timeout")["attempt"].to_list() == [1]
    assert ev.filter(pl.col("kind") == "restart")["attempt"].to_list() == [2]
    a = lab.attribute(run)
    led = a.rows.group_by("category", "attempt").agg(pl.col("seconds").sum())

    def secs(cat: str, attempt: int) -> float:
        got = led.filter(pl.col("category") == cat, pl.col("attempt") == attempt)["seconds"]
        return float(got.sum())

    # (whole-second stamps: a step's end is known to within a second, see timeline.refine_coarse_stamps)
    last_step_end = T0 + dt.timedelta(seconds=100)
    assert secs("hang", 1) == pytest.approx((HANG - last_step_end).total_seconds(), abs=1)
    assert secs("restart", 1) == pytest.approx((RESTART - HANG).total_seconds())
    assert secs("startup", 2) == pytest.approx((RESUMED - RESTART).total_seconds(), abs=1)
    inc = a.incidents.filter(pl.col("kind") == "attempt_end", pl.col("attempt") == 1)
    # a hang is a symptom: every rank of a stuck collective stops heartbeating, so it blames no host
    assert inc["failure_mode"].to_list() == ["nccl_timeout"] and inc["host"].to_list() == [None]
    # the hang, the work thrown away (steps 60-100), the restart and the start-up are that incident's
    charged = a.rows.filter(pl.col("incident_id") == inc["incident_id"][0])["category"].unique().sort().to_list()
    assert charged == ["hang", "recompute", "restart", "startup"]


def test_separate_launcher_log_splits_the_attempt_at_the_failure(tmp_path: Path) -> None:
    d = tmp_path / "runs" / "ftrun" / "attempt-1"
    d.mkdir(parents=True)
    (d / "train.log").write_text("\n".join(_training_lines()) + "\n")
    (d / "ft_launcher.log").write_text("\n".join(_launcher_lines()) + "\n")
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        _check_split(lab, "ftrun")
        # a later ingest refreshes the attempts: the split is made anew, not twice
        (tmp_path / "runs" / "ftrun" / "attempt-1" / "notes.log").write_text(
            f"[{T0:%Y-%m-%d %H:%M:%S.%f}] iteration       10/   20000 | consumed samples:          640 |\n")
        lab.ingest(tmp_path)
        assert lab.sql("SELECT count(*) AS n FROM attempts WHERE run = 'ftrun'")["n"][0] == 2


def test_one_unsplit_log_with_launcher_and_training_lines(tmp_path: Path) -> None:
    d = tmp_path / "runs" / "ftone"
    d.mkdir(parents=True)
    train = _training_lines()
    launcher = _launcher_lines()
    lines = [launcher[0], *train[:10], launcher[1], launcher[2], launcher[3], *train[10:]]
    (d / "train.log").write_text("\n".join(lines) + "\n")
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        _check_split(lab, "ftone")


def test_a_restart_before_the_first_step_splits_nothing(tmp_path: Path) -> None:
    d = tmp_path / "runs" / "ftearly" / "attempt-1"
    d.mkdir(parents=True)
    launcher = _launcher_lines()
    (d / "ft_launcher.log").write_text("\n".join(launcher) + "\n")
    (d / "train.log").write_text("\n".join(_iters(10, 100, RESUMED)) + "\n")
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        assert lab.sql("SELECT attempt FROM attempts WHERE run = 'ftearly'")["attempt"].to_list() == [1]


def _parse(lines: list[str]) -> pl.DataFrame:
    schema = {"line": pl.Int64, "text": pl.String}
    frame = pl.DataFrame({"line": range(1, len(lines) + 1), "text": lines}, schema=schema)
    parsed = ft_launcher.parse(frame.filter(pl.col("text").str.contains(ft_launcher.PATTERN)), Context(path="x"))
    return parsed.tables.get("events", pl.DataFrame())


def test_the_failure_summary_gives_one_event_per_terminated_rank() -> None:
    ev = _parse([
        "2026-11-24 11:43:05,440 [ERROR] [gpu-017] [workload:?(?) infra:0(0)] launcher.py:3653 Some rank(s) exited "
        "with non-zero exit code: {6: ProcessFailure(local_rank=6, pid=51877, exitcode=-9, error_file='<N/A>', "
        "error_file_data={'message': '<NONE>'}, message='Signal 9 (SIGKILL) received by PID 51877', "
        "timestamp=1795520585), 15: ProcessFailure(local_rank=7, pid=51878, exitcode=1, error_file='<N/A>', "
        "error_file_data={'message': '<NONE>'}, message='x', timestamp=1795520584)}. Agent's exit code = 1"])
    assert ev["kind"].to_list() == ["rank_terminated", "rank_terminated"]
    assert ev["rank"].to_list() == [6, 15] and ev["host"].to_list() == ["gpu-017", "gpu-017"]
    details = [json.loads(d) for d in ev["detail"]]
    assert details[0]["signal"] == "SIGKILL" and details[1]["exitcode"] == 1 and "signal" not in details[1]


def test_restart_numbers_and_lines_of_other_programs() -> None:
    ev = _parse([
        "[2025-03-17 15:40:57,015] [INFO] [ft_launcher48102@gpu-021] [default] Worker group FAILED. 1/3 attempts "
        "left; will restart worker group",
        "[2025-03-20 06:30:02,118] [INFO] [ft_launcher7310@gpu-081] 2/3 restart attempts left; restarting worker "
        "group...",
        # plain torchrun's restart line is torch's, not ft_launcher's
        "[2026-11-25 14:52:43,955] torch.distributed.elastic.agent.server.api: [INFO] [default] Worker group "
        "FAILED. 2/3 attempts left; will restart worker group",
    ])
    assert ev["kind"].to_list() == ["restart", "restart"]
    assert [json.loads(d)["restart"] for d in ev["detail"]] == [3, 2]
    assert ev["failure_mode"].null_count() == 2


def test_the_jobs_final_state_goes_to_the_last_part_of_a_restarted_launch(tmp_path: Path) -> None:
    # the job is not named after the run, and only the first part's lines name its id: the part after the
    # in-job restart shares the log, so it shares the job and gets the scheduler's verdict
    d = tmp_path / "runs" / "ftjob"
    d.mkdir(parents=True)
    train, launcher = _training_lines(), _launcher_lines()
    lines = ["srun: job 777 has been allocated resources", launcher[0], *train[:10], *launcher[1:], *train[10:]]
    (d / "train.log").write_text("\n".join(lines) + "\n")
    (tmp_path / "scheduler").mkdir()
    end = RESUMED + dt.timedelta(seconds=130)
    (tmp_path / "scheduler" / "sacct.txt").write_text(
        "JobID|JobName|State|ExitCode|Start|End|NNodes|NodeList\n"
        f"777|pretrain-x|TIMEOUT|0:0|{T0 - dt.timedelta(seconds=20):%Y-%m-%dT%H:%M:%S}|{end:%Y-%m-%dT%H:%M:%S}|1|"
        "gpu-018\n")
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        inc = lab.incidents("ftjob").filter(pl.col("kind") == "attempt_end").sort("attempt")
    assert inc["attempt"].to_list() == [1, 2]
    assert inc["failure_mode"].to_list() == ["nccl_timeout", "time_limit"]


def test_torchrun_restarting_its_workers_in_one_allocation_ends_an_attempt(tmp_path: Path) -> None:
    # torchrun --max-restarts=3, no ft_launcher: a worker fails, the agent restarts the group in the same job
    # (torch/distributed/elastic/agent/server/api.py logs the restart at INFO in c10's format)
    d = tmp_path / "runs" / "trrun" / "attempt-1"
    d.mkdir(parents=True)
    fail = HANG
    lines = [*_iters(10, 100, T0),
             "[rank3]: Traceback (most recent call last):",
             '[rank3]:   File "pretrain_gpt.py", line 210, in <module>',
             "[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered",
             f"E{fail:%m%d %H:%M:%S}.000000 2219 torch/distributed/elastic/multiprocessing/api.py:869] failed "
             "(exitcode: 1) local_rank: 3 (pid: 2234) of binary: /usr/bin/python3",
             f"I{RESTART:%m%d %H:%M:%S}.000000 2219 torch/distributed/elastic/agent/server/api.py:704] [default] "
             "Worker group FAILED. 2/3 attempts left; will restart worker group",
             *_iters(60, 120, RESUMED)]
    (d / "train.log").write_text("\n".join(lines) + "\n")
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        att = lab.sql("SELECT * FROM attempts WHERE run = 'trrun' ORDER BY attempt")
        assert att["attempt"].to_list() == [1, 2]
        assert att["last_step"][0] == 100 and att["first_step"][1] == 60
        assert att["start_ts"][1] == RESTART  # the restarted group's attempt begins with the restart
        a = lab.attribute("trrun")
        inc = a.incidents.filter(pl.col("kind") == "attempt_end", pl.col("attempt") == 1)
        assert inc["failure_mode"].to_list() == ["cuda_error"]

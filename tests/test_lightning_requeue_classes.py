"""Classes of defect a PyTorch Lightning + DeepSpeed job on Slurm showed (tests/campaigns/lightning_slurm.py), each on
a hand-written case of its own: saves that name no step number, Lightning's checkpoint directories, its auto-requeue
notice before the time limit, a host OOM kill among its peers' NET/IB errors, and a NaN loss stepped on for an hour."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl

from clusterlab import Lab

T0 = dt.datetime(2026, 10, 3, 9, 0, 0, 237000)
HOSTS = ["gx-01", "gx-02", "gx-03", "gx-04"]
STEP_S = 3.0


def _ds(t: dt.datetime, where: str, msg: str) -> str:
    return f"[{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}] [INFO] [{where}] {msg}"


def _bundle(tmp: Path, steps: int, save_every: int = 0, save_path=None, extra=None) -> tuple[Path, dt.datetime]:
    """A rank-0 DeepSpeed log: `step=` lines every 10 steps of STEP_S, a 50 s save every `save_every` steps (its
    directory `save_path(step)`), then `extra(t_last)`'s lines; an NCCL init log naming the four hosts."""
    run = tmp / "b" / "runs" / "r1" / "attempt-1"
    run.mkdir(parents=True)
    lines, t = [_ds(T0, "logging.py:128:log_dist", "[Rank 0] DeepSpeed info: version=0.15.4, git-hash=unknown, "
                                                   "git-branch=unknown")], T0 + dt.timedelta(seconds=30)
    for n in range(1, steps + 1):
        t += dt.timedelta(seconds=STEP_S)
        if n % 10 == 0:
            lines.append(_ds(t, "logging.py:128:log_dist", f"[Rank 0] step={n}, skipped=0, lr=[1.0e-05], "
                                                           "mom=[(0.9, 0.95)]"))
        if save_every and n % save_every == 0:
            d, t = save_path(n), t + dt.timedelta(milliseconds=11)
            lines += [_ds(t, "logging.py:128:log_dist", "[Rank 0] [Torch] Checkpoint checkpoint is about to be saved!"),
                      _ds(t, "logging.py:128:log_dist",
                          f"[Rank 0] Saving model checkpoint: {d}/mp_rank_00_model_states.pt")]
            t += dt.timedelta(seconds=50)
            lines.append(_ds(t, "torch_checkpoint_engine.py:33:commit", "[Torch] Checkpoint checkpoint is ready now!"))
    lines += (extra(t) if extra else [])
    (run / "slurm-77.out").write_text("\n".join(lines) + "\n")
    (run / "nccl.log").write_text("\n".join(
        f"{h}:{100 + i}:{100 + i} [0] NCCL INFO comm 0x55aa{i} rank {i} nranks 4 cudaDev 0 nvmlDev 0 busId 18000 "
        f"commId 0x1 - Init COMPLETE" for i, h in enumerate(HOSTS)) + "\n")
    (tmp / "b" / "runs" / "r1" / "run.toml").write_text("gpus = 4\ntokens_per_step = 16384\nflops_per_token = 1e9\n")
    return tmp / "b", t


def _requeued(t: dt.datetime) -> list[str]:
    return [f"slurmstepd: error: *** JOB 77 ON gx-01 CANCELLED AT {t + dt.timedelta(seconds=5):%Y-%m-%dT%H:%M:%S} "
            "DUE TO JOB REQUEUE ***", "srun: error: gx-01: tasks 0: Killed"]


def test_saves_that_name_no_step_each_count_as_checkpoint(tmp_path: Path) -> None:
    # a ModelCheckpoint filename without `step=` (`last-v3.ckpt`) under DeepSpeed's fixed tag: four saves of 50 s,
    # not one (all of an attempt's saves without a step were one save, the rest booked as slowdown)
    b, _ = _bundle(tmp_path, 400, 100, lambda n: f"/ck/last-v{n // 100}.ckpt/checkpoint")
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(b)
        rows = lab.attribute("r1").rows
    secs = dict(rows.group_by("category").agg(pl.col("seconds").sum()).iter_rows())
    assert secs.get("checkpoint", 0.0) >= 3 * 50 - 1  # (seconds of the job: the last save ends the log)
    assert secs.get("slowdown", 0.0) < 1


def test_a_lightning_checkpoint_directory_names_its_step(tmp_path: Path) -> None:
    b, _ = _bundle(tmp_path, 200, 100, lambda n: f"/ck/epoch=0-step={n}.ckpt/checkpoint")
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(b)
        steps = lab.sql("SELECT DISTINCT step FROM checkpoints WHERE action = 'save' AND step IS NOT NULL")["step"]
    assert sorted(steps.to_list()) == [100, 200]


def test_lightnings_auto_requeue_notice_is_the_time_limit(tmp_path: Path) -> None:
    # `--signal=SIGUSR1@90`: Lightning saves, requeues the job itself; Slurm's banner and sacct say only REQUEUE
    b, _ = _bundle(tmp_path, 300, extra=lambda t: ["Handling auto-requeue signal: 10", "requeing job 77...",
                                                   "Requeued SLURM job: 77", *_requeued(t)])
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(b)
        inc = lab.incidents("r1").filter(pl.col("kind") == "attempt_end")
    assert inc.select("failure_mode", "host").rows() == [("time_limit", None)]


def test_a_host_oom_kill_outranks_the_peers_net_ib_errors(tmp_path: Path) -> None:
    def peers(t: dt.datetime) -> list[str]:
        out = []
        for i, h in ((1, "gx-02"), (3, "gx-04")):
            warn = (f"NET/IB : Got completion from peer 10.1.0.3<5{i}123> with status=12 opcode=0 len=0 vendor err "
                    f"129 (Recv) localGid fe80::1:{i} remoteGids fe80::1:3")
            out += [f"{h}:{900 + i}:{950 + i} [4] transport/net_ib.cc:1696 NCCL WARN {warn}",
                    f"[rank{i}]:[E1003 {t:%H:%M:%S}.500000123 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID "
                    f"0(default_pg) Rank {i}] Process group watchdog thread terminated with exception: NCCL error: "
                    "remote process exited or there was a network error, NCCL version 2.21.5"]
        return [*out, "srun: error: gx-02: task 1: Aborted (core dumped)"]

    b, t = _bundle(tmp_path, 300, extra=peers)
    d = b / "nodes" / "gx-03"
    d.mkdir(parents=True)
    at = t + dt.timedelta(seconds=2)
    (d / "dmesg.log").write_text(
        f"{at:%Y-%m-%dT%H:%M:%S},100000+00:00 Out of memory: Killed process 4242 (pt_main_thread) "
        "total-vm:912345678kB, anon-rss:812345678kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:1234567kB "
        "oom_score_adj:0\n")
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(b)
        inc = lab.incidents("r1").filter(pl.col("kind") == "attempt_end")
    assert inc.select("failure_mode", "host").rows() == [("host_oom", "gx-03")]


def test_a_nan_loss_stepped_on_for_an_hour_began_at_its_first_line(tmp_path: Path, relaunch: bool = False) -> None:
    # the bar says `train_loss=nan` from step 600 on (about 70 minutes before the person stopped the job); the
    # DeepSpeed step lines carry no loss: the onset is the bar's first NaN, not one the candidates' window holds
    first_nan: list[dt.datetime] = []

    def nan_bars(t_end: dt.datetime) -> list[str]:
        if not relaunch:
            return _requeued(t_end)
        # a last bar after the kill notice, dated only up to the relaunch's first stamp 45 minutes later
        later = t_end + dt.timedelta(minutes=45)
        return [*_requeued(t_end), "Epoch 0: 100%|██████████| 2000/2000 [1:40:00<00:00,  0.33it/s, v_num=0, "
                "train_loss=nan]", _ds(later, "logging.py:128:log_dist", "[Rank 0] DeepSpeed info: version=0.15.4, "
                                                                         "git-hash=unknown, git-branch=unknown")]

    b, t_end = _bundle(tmp_path, 2000, extra=nan_bars)
    log = b / "runs" / "r1" / "attempt-1" / "slurm-77.out"
    out = []
    for ln in log.read_text().splitlines():
        out.append(ln)
        if "] step=" in ln:
            n = int(ln.split("step=")[1].split(",")[0])
            if n >= 600 and n % 50 == 0:
                ts = dt.datetime.strptime(ln[1:20], "%Y-%m-%d %H:%M:%S")
                first_nan.append(ts)
                out.append(f"Epoch 0:  {n // 20:2d}%|███       | {n}/2000 [1:00:00<1:00:00,  0.33it/s, v_num=0, "
                           "train_loss=nan]")
    log.write_text("\n".join(out) + "\n")
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(b)
        inc = lab.incidents("r1").filter(pl.col("kind") == "attempt_end")
    assert inc["failure_mode"].to_list() == ["loss_divergence"]
    root = inc["root_ts"][0]
    assert abs((root - first_nan[0]).total_seconds()) <= 60, (root, first_nan[0], t_end)


def test_the_controllers_preemption_of_the_job_dates_the_end_though_it_names_no_node(tmp_path: Path) -> None:
    # PreemptMode=REQUEUE: the controller's line names the job, not a node; Lightning bypasses the SIGTERM and the
    # ranks step on for half a minute until SIGKILL, so sacct's End is no date for the preemption
    def preempted(t: dt.datetime) -> list[str]:
        out = _requeued(t)
        for k in range(1, 11):  # the steps after the kill notice, stamped like the others
            tt = t + dt.timedelta(seconds=5 + STEP_S * k)
            n = 300 + k
            if n % 10 == 0:
                out.append(_ds(tt, "logging.py:128:log_dist", f"[Rank 0] step={n}, skipped=0, lr=[1.0e-05], "
                                                              "mom=[(0.9, 0.95)]"))
        return out

    b, t = _bundle(tmp_path, 300, extra=preempted)
    kill = t + dt.timedelta(seconds=5)
    (b / "scheduler").mkdir()
    (b / "scheduler" / "slurmctld.log").write_text(
        f"[{kill:%Y-%m-%dT%H:%M:%S}.004] preempted JobId=77 has been requeued to reclaim resources for JobId=99\n")
    end = kill + dt.timedelta(seconds=33)
    (b / "scheduler" / "sacct.txt").write_text(
        "JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList\n"
        f"77|lit|gpu|ml|32|PREEMPTED|0:0|{T0:%Y-%m-%dT%H:%M:%S}|{T0:%Y-%m-%dT%H:%M:%S}|{end:%Y-%m-%dT%H:%M:%S}|"
        f"00:{(end - T0).seconds // 60:02d}:{(end - T0).seconds % 60:02d}|4|gx-[01-04]\n")
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(b)
        inc = lab.incidents("r1").filter(pl.col("kind") == "attempt_end")
    assert inc["failure_mode"].to_list() == ["preemption"]
    assert abs((inc["root_ts"][0] - kill).total_seconds()) < 2, (inc["root_ts"][0], kill, end)


def test_a_filesystem_failure_in_a_save_that_never_finished_began_with_the_save(tmp_path: Path) -> None:
    # the save of step 300 begins and never says it is done; the Lustre client's first timeout comes 40 s into it
    started: list[dt.datetime] = []

    def stalled(t: dt.datetime) -> list[str]:
        s = t + dt.timedelta(milliseconds=9)
        started.append(s)
        d = "/ck/epoch=0-step=300.ckpt/checkpoint"
        return [_ds(s, "logging.py:128:log_dist", "[Rank 0] [Torch] Checkpoint checkpoint is about to be saved!"),
                _ds(s, "logging.py:128:log_dist", f"[Rank 0] Saving model checkpoint: {d}/mp_rank_00_model_states.pt"),
                "[rank0]: OSError: [Errno 5] Input/output error",
                "srun: error: gx-01: task 0: Exited with exit code 1"]

    b, t = _bundle(tmp_path, 300, extra=stalled)
    for i, h in enumerate(HOSTS[:3]):
        d = b / "nodes" / h
        d.mkdir(parents=True)
        at = started[0] + dt.timedelta(seconds=40 + i)
        (d / "dmesg.log").write_text(
            f"{at:%Y-%m-%dT%H:%M:%S},000000+00:00 LustreError: 11-0: fs1-OST0003-osc-ffff9a: operation ost_write to "
            "node 10.9.0.3@o2ib failed: rc = -107\n")
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(b)
        inc = lab.incidents("r1").filter(pl.col("kind") == "attempt_end")
    assert inc["failure_mode"].to_list() == ["filesystem_io"]
    assert abs((inc["root_ts"][0] - started[0]).total_seconds()) < 2, (inc["root_ts"][0], started[0])


def test_the_time_limits_root_is_the_kill_after_the_warning_and_its_save(tmp_path: Path) -> None:
    # SIGUSR1 90 s before the limit: Lightning saves hpc_ckpt_1 (20 s), requeues, and Slurm kills the job: the
    # cancellation is the root (the job was healthy until it), not the warning before the save
    kill: list[dt.datetime] = []

    def warned(t: dt.datetime) -> list[str]:
        s, d = t + dt.timedelta(seconds=1), "/ck/hpc_ckpt_1.ckpt/checkpoint"
        k = s + dt.timedelta(seconds=22)
        kill.append(k)
        return ["Handling auto-requeue signal: 10",
                _ds(s, "logging.py:128:log_dist", "[Rank 0] [Torch] Checkpoint checkpoint is about to be saved!"),
                _ds(s, "logging.py:128:log_dist", f"[Rank 0] Saving model checkpoint: {d}/mp_rank_00_model_states.pt"),
                _ds(s + dt.timedelta(seconds=20), "torch_checkpoint_engine.py:33:commit",
                    "[Torch] Checkpoint checkpoint is ready now!"),
                "requeing job 77...", "Requeued SLURM job: 77",
                f"slurmstepd: error: *** JOB 77 ON gx-01 CANCELLED AT {k:%Y-%m-%dT%H:%M:%S} DUE TO JOB REQUEUE ***"]

    b, _ = _bundle(tmp_path, 300, extra=warned)
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(b)
        inc = lab.incidents("r1").filter(pl.col("kind") == "attempt_end")
    assert inc["failure_mode"].to_list() == ["time_limit"]
    assert abs((inc["root_ts"][0] - kill[0].replace(microsecond=0)).total_seconds()) < 1, (inc["root_ts"][0], kill)


def test_the_steps_a_coarse_record_logged_after_the_root_are_hang(tmp_path: Path) -> None:
    # the preemption's kill at t+5 s, sacct's End at t+38 s; the next record (ten steps, t .. t+35 s) straddles the
    # kill: its steps after the kill are hang (about 33 s), not a kept record of steps
    test_the_controllers_preemption_of_the_job_dates_the_end_though_it_names_no_node(tmp_path)
    with Lab(tmp_path / "db.duckdb") as lab:
        rows = lab.attribute("r1").rows
    hang = rows.filter(pl.col("category") == "hang")["seconds"].sum()
    assert 30 <= hang <= 36, hang


def test_a_nan_line_dated_only_up_to_the_relaunch_does_not_break_the_run_of_them(tmp_path: Path) -> None:
    test_a_nan_loss_stepped_on_for_an_hour_began_at_its_first_line(tmp_path, relaunch=True)

"""Defect classes found by the megatron_hangs campaign (tests/campaigns/megatron_hangs.py), on hand-made evidence."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl

from clusterlab import Lab
from clusterlab.collectors import kernel
from clusterlab.collectors._base import Context


def _frame(lines: list[str]) -> pl.DataFrame:
    f = pl.DataFrame({"line": pl.Series(range(1, len(lines) + 1), dtype=pl.Int64), "text": lines})
    return f.filter(pl.col("text").str.contains(kernel.PATTERN))


def test_a_task_hung_in_a_fuse_read_is_a_filesystem_stall() -> None:
    lines = ["2026-10-02T11:20:07.551201+00:00 tr-n07 kernel: INFO: task pt_data_worker:88123 blocked for more than "
             "122 seconds.",
             "2026-10-02T11:20:07.551230+00:00 tr-n07 kernel: task:pt_data_worker  state:D stack:0     pid:88123  "
             "tgid:88123 ppid:88011 flags:0x00004002",
             "2026-10-02T11:20:07.551240+00:00 tr-n07 kernel: Call Trace:",
             "2026-10-02T11:20:07.551250+00:00 tr-n07 kernel:  schedule+0x33/0x110",
             "2026-10-02T11:20:07.551260+00:00 tr-n07 kernel:  request_wait_answer+0x11f/0x2a0 [fuse]",
             "2026-10-02T11:20:07.551270+00:00 tr-n07 kernel:  fuse_simple_request+0x1b4/0x310 [fuse]"]
    (r,) = kernel.parse(_frame(lines), Context(path="x")).tables["events"].to_dicts()
    assert (r["kind"], r["failure_mode"]) == ("hung_task", "filesystem_io")
    assert json.loads(r["detail"])["blocked_in"] == "fuse"


def test_a_task_hung_in_the_gpu_driver_stays_unknown() -> None:
    lines = ["[Fri Oct  2 11:20:07 2026] INFO: task pt_main_thread:7001 blocked for more than 122 seconds.",
             "[Fri Oct  2 11:20:07 2026]  rm_ioctl+0x63/0xb0 [nvidia]"]
    (r,) = kernel.parse(_frame(lines), Context(path="x")).tables["events"].to_dicts()
    assert r["failure_mode"] == "unknown"


T0 = dt.datetime(2026, 10, 5, 14, 0, 0)
_ITER = (" iteration {n:8d}/    5000 | consumed samples: {s:12d} | elapsed time per iteration (ms): {ms:.1f} | "
         "learning rate: 1.000000E-04 | global batch size:    64 | lm loss: 2.500000E+00 | loss scale: 1.0 | grad "
         "norm: 0.300 | number of skipped iterations:   0 | number of nan iterations:   0 |")


def _unstamped_bundle(root: Path) -> Path:
    """A Megatron launch whose iteration lines carry no time (an older image): 12 s a step, a line every 5 steps,
    a 30 s save at step 50; only the milestone lines and the job's end are stamped."""
    run = root / "runs" / "r9"
    run.mkdir(parents=True)
    (run / "run.toml").write_text("gpus = 8\ntokens_per_step = 16384\nflops_per_token = 1e9\n")
    first = T0 + dt.timedelta(seconds=90)
    out = [f"[after dataloaders are built] datetime: {T0 + dt.timedelta(seconds=80):%Y-%m-%d %H:%M:%S} ",
           f"[before the start of training step] datetime: {first:%Y-%m-%d %H:%M:%S} "]
    for n in range(5, 101, 5):
        out.append(_ITER.format(n=n, s=n * 64, ms=12000.0))
        if n == 50:
            out += ["saving checkpoint at iteration      50 to /ckpt/r9 in torch_dist format",
                    "  successfully saved checkpoint from iteration      50 to /ckpt/r9 [ t 1/1, p 1/1 ]",
                    "(min, max) time across ranks (ms):",
                    "    save-checkpoint ................................: (29990.00, 30000.00)"]
    end = first + dt.timedelta(seconds=100 * 12 + 30 + 5)
    out.append(f"[after training is done] datetime: {end:%Y-%m-%d %H:%M:%S} ")
    (run / "slurm-77.out").write_text("\n".join(out) + "\n")
    return root


def test_unstamped_iteration_lines_are_dated_by_the_step_clock(tmp_path: Path) -> None:
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(_unstamped_bundle(tmp_path / "b"))
        got = dict(lab.con.execute("SELECT step, ts FROM steps WHERE run = 'r9'").fetchall())
        ckpt = lab.con.execute("SELECT ts FROM checkpoints WHERE run = 'r9' AND action = 'save'").fetchall()
    first = T0 + dt.timedelta(seconds=90)
    # each line ends its step: 12 s a step from the first step's start, the save's 30 s after step 50
    assert abs((got[5] - first).total_seconds() - 60) < 0.01
    assert abs((got[50] - first).total_seconds() - 600) < 0.01
    assert abs((got[55] - first).total_seconds() - 690) < 0.01
    assert abs((got[100] - first).total_seconds() - 1230) < 0.01
    assert ckpt and abs((ckpt[0][0] - first).total_seconds() - 600) < 0.01


def test_an_unkillable_step_ranks_below_the_hung_task_that_made_it_unkillable() -> None:
    """slurmstepd's `STEPD TERMINATED ... DUE TO JOB NOT ENDING WITH SIGNALS` says the step's processes would not
    die (stuck in the kernel), like slurmctld's `Kill task failed` drain: it names where, not why."""
    import duckdb

    from clusterlab.diagnose import incidents as inc

    con = duckdb.connect()
    con.execute("CREATE TABLE e (source VARCHAR, kind VARCHAR, failure_mode VARCHAR, detail VARCHAR)")
    con.execute("INSERT INTO e VALUES ('slurm', 'slurm_stepd_terminated', 'node_failure', NULL), "
                "('kernel', 'hung_task', 'filesystem_io', NULL), ('kernel', 'node_down', 'node_failure', NULL)")
    tiers = dict(con.execute(f"SELECT kind, {inc._tier_sql()} FROM e").fetchall())
    assert tiers["slurm_stepd_terminated"] < tiers["hung_task"] < tiers["node_down"]


def _stamped_launch(t0: dt.datetime, first: int, last: int, step_s: float = 20.0) -> list[str]:
    t = t0 + dt.timedelta(seconds=60)
    out = [f"[before the start of training step] datetime: {t:%Y-%m-%d %H:%M:%S} "]
    for n in range(first, last + 1):
        t += dt.timedelta(seconds=step_s)
        out.append(f" [{t:%Y-%m-%d %H:%M:%S}]" + _ITER.format(n=n, s=n * 64, ms=step_s * 1000))
    return out


def test_a_job_that_died_loading_its_checkpoint_is_an_attempt_of_its_own(tmp_path: Path) -> None:
    """Three sbatch jobs' logs side by side; the middle one launched training and died before its first step (a
    changed config: the checkpoint's shapes no longer fit). It is attempt 2, not folded into attempt 1."""
    run = tmp_path / "b" / "runs" / "r7"
    run.mkdir(parents=True)
    (run / "run.toml").write_text("gpus = 8\ntokens_per_step = 16384\nflops_per_token = 1e9\n")
    (run / "slurm-301.out").write_text("\n".join(_stamped_launch(T0, 1, 20)) + "\n")
    t2 = T0 + dt.timedelta(hours=1)
    died = [f"W{t2:%m%d} {t2:%H:%M:%S}.120000 51234 torch/distributed/run.py:792] Setting OMP_NUM_THREADS environment "
            f"variable for each process to be 1 in default, to avoid your system being overloaded, please further "
            f"tune the variable for optimal performance in your application as needed. ",
            "using world size: 8, data-parallel size: 8, context-parallel size: 1, tensor-model-parallel size: 1, "
            "pipeline-model-parallel size: 1 ",
            " loading distributed checkpoint from /ckpt/r7 at iteration 20",
            "[rank0]: Traceback (most recent call last):",
            "[rank0]:   File \"/workspace/pretrain_gpt.py\", line 309, in <module>",
            "[rank0]: megatron.core.dist_checkpointing.core.CheckpointingException: Global shape mismatch for loaded "
            "(torch.Size([8, 1024])) and expected ((8, 768)) tensor for key decoder.weight",
            f"E{t2:%m%d} {t2:%H:%M:%S}.900000 51234 torch/distributed/elastic/multiprocessing/api.py:874] failed "
            f"(exitcode: 1) local_rank: 0 (pid: 51240) of binary: /usr/bin/python3"]
    (run / "slurm-302.out").write_text("\n".join(died) + "\n")
    (run / "slurm-303.out").write_text("\n".join(_stamped_launch(T0 + dt.timedelta(hours=2), 21, 40)) + "\n")
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(tmp_path / "b")
        att = lab.attempts("r7").sort("attempt")
    assert att["attempt"].to_list() == [1, 2, 3]
    assert att["first_step"].to_list() == [1, None, 21]
    assert att["end_ts"][0] < T0 + dt.timedelta(hours=1)


_HOSTS4 = ["ca-01", "ca-02", "ca-03", "ca-04"]


def _hang_log(silent: int, slow_host: str, slow_s: float) -> list[str]:
    """`srun -l` output of 16 ranks on 4 hosts (one task per GPU): NCCL's init lines (the rank -> host map), stamped
    iteration lines, then rank `silent` never enters collective 9001 and every other rank's watchdog fires 600 s
    later, `slow_host`'s ranks stamping it with a clock `slow_s` behind."""
    out = []
    for r in range(16):
        h = _HOSTS4[r // 4]
        out.append(f"{r:2d}: {h}:{7000 + r}:{7100 + r} [{r % 4}] NCCL INFO comm 0x5a{r:02d}0 rank {r} nranks 16 "
                   f"cudaDev {r % 4} nvmlDev {r % 4} busId {r % 4}b000 commId 0x77aa - Init COMPLETE")
    out += _stamped_launch(T0, 1, 40)
    stop = T0 + dt.timedelta(seconds=60 + 40 * 20)
    for r in range(16):
        if r == silent:
            continue
        t = stop + dt.timedelta(seconds=600.2 + 0.01 * r - (slow_s if _HOSTS4[r // 4] == slow_host else 0.0))
        out.append(f"{r:2d}: [rank{r}]:[E{t:%m%d} {t:%H:%M:%S}.{t.microsecond:06d}123 ProcessGroupNCCL.cpp:632] "
                   f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9001, OpType=ALLREDUCE, "
                   f"NumelIn=1024, NumelOut=1024, Timeout(ms)=600000) ran for 600201 milliseconds before timing out.")
    end = stop + dt.timedelta(seconds=615)
    out += ["srun: error: ca-01: tasks 0-3: Aborted (core dumped)",
            f"slurmstepd: error: *** STEP 4411.0 ON ca-01 CANCELLED AT {end:%Y-%m-%dT%H:%M:%S} ***"]
    return out


def test_the_rank_missing_from_the_timeouts_is_found_without_per_rank_records(tmp_path: Path) -> None:
    """No per-rank step records: the ranks are NCCL's world communicator's; rank 9 (ca-03) printed no timeout. The
    wait began when the other ranks' clocks mostly say, not at the one host whose clock is 150 s slow."""
    run = tmp_path / "b" / "runs" / "r8"
    run.mkdir(parents=True)
    (run / "run.toml").write_text("gpus = 16\ntokens_per_step = 16384\nflops_per_token = 1e9\n")
    (run / "slurm-4411.out").write_text("\n".join(_hang_log(9, "ca-02", 150.0)) + "\n")
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(tmp_path / "b")
        inc = lab.incidents("r8")
    (row,) = inc.filter(pl.col("kind") == "attempt_end").to_dicts()
    assert (row["failure_mode"], row["host"]) == ("nccl_timeout", "ca-03")


def test_a_launcher_relaying_the_kill_early_on_a_slow_clock_is_no_hang(tmp_path: Path) -> None:
    """A healthy job runs into its time limit; one node's torchrun agent, whose clock is 150 s slow, stamps its
    `Received 15 death signal` before the scheduler's line: the kill's consequence, not a hang that it found."""
    run = tmp_path / "b" / "runs" / "r6"
    run.mkdir(parents=True)
    (run / "run.toml").write_text("gpus = 8\ntokens_per_step = 16384\nflops_per_token = 1e9\n")
    log = _stamped_launch(T0, 1, 30, step_s=55.0)   # a line each 55 s: two after the early agent line
    kill = T0 + dt.timedelta(seconds=60 + 30 * 55 + 40)

    def agent(t: dt.datetime, node: int) -> str:
        return (f"{node}: W{t:%m%d} {t:%H:%M:%S}.300000 {4100 + node} "
                f"torch/distributed/elastic/agent/server/api.py:719] Received 15 death signal, shutting down workers")

    log += [agent(kill - dt.timedelta(seconds=150), 1),
            f"slurmstepd: error: *** JOB 5150 ON cb-01 CANCELLED AT {kill:%Y-%m-%dT%H:%M:%S} DUE TO TIME LIMIT ***",
            agent(kill, 0)]
    (run / "slurm-5150.out").write_text("\n".join(log) + "\n")
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(tmp_path / "b")
        inc = lab.incidents("r6")
    (row,) = inc.filter(pl.col("kind") == "attempt_end").to_dicts()
    assert row["failure_mode"] == "time_limit"


def test_a_slow_host_in_records_sampled_every_tenth_step_is_a_straggler() -> None:
    """A step probe that records every 10th step: h3 computes 6 % slower at every record of the attempt. Its slow
    records are consecutive records, 10 steps apart, and make one stretch."""
    import random

    from clusterlab.diagnose import incidents as inc

    rng = random.Random(11)
    rows = []
    for step in range(2010, 3010, 10):
        c = {f"h{i}": 4.6 * (1 + rng.uniform(-0.004, 0.004)) for i in range(12)}
        c["h3"] *= 1.06
        slowest = max(c, key=c.get)
        rows.append({"run": "r", "attempt": 3, "step": step, "ts": T0 + dt.timedelta(seconds=5.4 * step),
                     "avg_c": sum(c.values()) / len(c), "min_c": min(c.values()), "max_c": c[slowest], "n_c": len(c),
                     "slow_host": slowest})
    profile = pl.DataFrame(rows, schema_overrides={"attempt": pl.Int32})
    strag = inc.straggler_incidents(inc.slow_steps(profile, inc.Settings()), inc.Settings())
    assert strag.select("host", "first_step", "last_step").rows() == [("h3", 2010, 3000)]


def _raising_log(ranks: list[int]) -> list[str]:
    """`srun -l` output of 8 ranks on 2 hosts that trained 10 steps, then `ranks` raise the same ValueError."""
    out = [f"{r}: {_HOSTS4[r // 4]}:{7000 + r}:{7100 + r} [{r % 4}] NCCL INFO comm 0x5b{r:02d}0 rank {r} nranks 8 "
           f"cudaDev {r % 4} nvmlDev {r % 4} busId {r % 4}b000 commId 0x77ab - Init COMPLETE" for r in range(8)]
    out += _stamped_launch(T0, 1, 10)
    for r in ranks:
        out += [f"{r}: [rank{r}]: Traceback (most recent call last):",
                f'{r}: [rank{r}]:   File "/workspace/train.py", line 88, in <module>',
                f"{r}: [rank{r}]: ValueError: sequence length 8192 exceeds the model's max_position_embeddings 4096"]
    end = T0 + dt.timedelta(seconds=60 + 10 * 20 + 5)
    out += ["srun: error: ca-01: tasks 0-3: Exited with exit code 1",
            f"slurmstepd: error: *** STEP 4500.0 ON ca-01 CANCELLED AT {end:%Y-%m-%dT%H:%M:%S} ***"]
    return out


def test_an_error_every_host_raised_is_the_jobs_not_a_hosts(tmp_path: Path) -> None:
    got = {}
    for name, ranks in (("both", [0, 5]), ("one", [5])):
        run = tmp_path / name / "runs" / f"r-{name}"
        run.mkdir(parents=True)
        (run / "run.toml").write_text("gpus = 8\ntokens_per_step = 16384\nflops_per_token = 1e9\n")
        (run / "slurm-4500.out").write_text("\n".join(_raising_log(ranks)) + "\n")
        with Lab(tmp_path / f"{name}.duckdb") as lab:
            lab.ingest(tmp_path / name)
            (row,) = lab.incidents(f"r-{name}").filter(pl.col("kind") == "attempt_end").to_dicts()
        got[name] = (row["failure_mode"], row["host"])
    assert got == {"both": ("user_code_error", None), "one": ("user_code_error", "ca-02")}

"""Defect classes the blind campaign `campaigns/blackwell_slurm.py` revealed, shown on shapes of their own.

A requeued Slurm job appends each run of it to the same output files: an attempt directory kept per job then holds
two launches. `sacct --duplicates` lists the job once per run, slurmctld logs each run's allocation; each run is an
attempt of its own.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl

from clusterlab import Lab

T0 = dt.datetime(2027, 3, 2, 22, 0, 0)
CKPT = "/weka/ckpt/m7"
SACCT_HDR = "JobID|JobName|State|ExitCode|Start|End|NNodes|NodeList"


def _ts(t: dt.datetime) -> str:
    return f"{t:%Y-%m-%dT%H:%M:%S}"


def _launch(t0: dt.datetime, first: int, last: int, load: int | None, crash: bool = False) -> list[str]:
    """One launch of a torchtitan job on 2 nodes: torchrun banner, titan step lines every step (20 s)."""
    out = [f"+ srun torchrun --nnodes 2 --nproc_per_node 8 -m torchtitan.train  # {t0:%H:%M:%S}"]
    for i, pid in enumerate((4411, 5522)):
        p = f"W{t0:%m%d %H:%M:%S}.{100000 + i:06d} {pid} torch/distributed/run.py:766] "
        out += [
            p + "*" * 41,
            p + "Setting OMP_NUM_THREADS environment variable for each process to be 1 in "
            "default, to avoid your system being overloaded, please further tune the variable for optimal "
            "performance in your application as needed. ",
            p + "*" * 41,
        ]

    def titan(t: dt.datetime, msg: str) -> str:
        return f"[rank0]:[titan] {t:%Y-%m-%d %H:%M:%S},000 - root - INFO - {msg}"

    t = t0 + dt.timedelta(seconds=40)
    if load is not None:
        out.append(titan(t, f"Loading the checkpoint from {CKPT}/step-{load}."))
        t += dt.timedelta(seconds=20)
        out.append(titan(t, "Finished loading the checkpoint in 20.00 seconds."))
    out.append(titan(t, f"Training starts at step {first}"))
    for n in range(first, last + 1):
        t += dt.timedelta(seconds=20)
        out.append(
            titan(
                t,
                f"step: {n:2}  loss:  2.50000  grad_norm:  0.3000  memory: 60.00GiB(75.00%)  "
                f"tps: 3,277  tflops: 400.00  mfu: 40.00%",
            )
        )
    if crash:
        out += [
            "[rank0]: Traceback (most recent call last):",
            '[rank0]:   File "/app/train.py", line 12, in <module>',
            "[rank0]: ValueError: tokenizer vocab size 128256 does not match the model's 32000",
        ]
    return out


def _bundle(root: Path, second_dir: str, requeued_twice: bool = False, ctld_only: bool = False) -> Path:
    run = root / "runs" / "m7"
    run.mkdir(parents=True)
    (run / "run.toml").write_text("gpus = 16\ntokens_per_step = 65536\nflops_per_token = 1e9\n")
    a, b = T0, T0 + dt.timedelta(hours=1, minutes=10)  # job 7001: two runs (requeued after a node failure)
    a_end, b_end = T0 + dt.timedelta(minutes=30), b + dt.timedelta(minutes=25)
    c = T0 + dt.timedelta(hours=3)  # job 7010: the next submission
    c_end = c + dt.timedelta(minutes=20)
    first = _launch(a, 1, 60, None) + _launch(b, 51, 100, 50)
    rows = [
        f"7001|m7|NODE_FAIL|0:0|{_ts(a)}|{_ts(a_end)}|2|gx[1-2]",
        f"7001|m7|FAILED|1:0|{_ts(b)}|{_ts(b_end)}|2|gx[1-2]",
    ]
    if requeued_twice:
        d = b_end + dt.timedelta(minutes=10)
        first += _launch(d, 101, 110, 100, crash=True)
        rows[1] = f"7001|m7|REQUEUED|0:0|{_ts(b)}|{_ts(b_end)}|2|gx[1-2]"
        rows.append(f"7001|m7|FAILED|1:0|{_ts(d)}|{_ts(d + dt.timedelta(minutes=6))}|2|gx[1-2]")
    (run / "attempt-1").mkdir()
    (run / "attempt-1" / "slurm-7001.out").write_text("\n".join(first) + "\n")
    (run / second_dir).mkdir()
    (run / second_dir / "slurm-7010.out").write_text("\n".join(_launch(c, 101, 150, 100)) + "\n")
    rows.append(f"7010|m7|COMPLETED|0:0|{_ts(c)}|{_ts(c_end)}|2|gx[1-2]")
    (root / "scheduler").mkdir()
    if ctld_only:  # plain sacct (no --duplicates) shows only the job's last run; slurmctld logged each allocation
        rows = rows[1:]
        ctld = [
            f"[{a:%Y-%m-%dT%H:%M:%S}.002] sched: Allocate JobId=7001 NodeList=gx[1-2] #CPUs=224 Partition=gpu",
            f"[{a_end:%Y-%m-%dT%H:%M:%S}.310] Requeuing JobId=7001",
            f"[{b:%Y-%m-%dT%H:%M:%S}.004] sched: Allocate JobId=7001 NodeList=gx[1-2] #CPUs=224 Partition=gpu",
            f"[{b_end:%Y-%m-%dT%H:%M:%S}.120] _job_complete: JobId=7001 WEXITSTATUS 1",
        ]
        (root / "scheduler" / "slurmctld.log").write_text("\n".join(ctld) + "\n")
    (root / "scheduler" / "sacct-dup.txt").write_text("\n".join([SACCT_HDR, *rows]) + "\n")
    return root


def test_requeued_job_runs_in_one_directory_are_attempts_of_their_own(tmp_path: Path) -> None:
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(_bundle(tmp_path / "b", "attempt-2"))
        att = lab.attempts("m7").sort("attempt")
        # the requeued run is attempt 2; the next job's directory, numbered 2, moves up to 3
        assert att["attempt"].to_list() == [1, 2, 3]
        assert att["first_step"].to_list() == [1, 51, 101]
        assert att["last_step"].to_list() == [60, 100, 150]
        spans, _, _ = lab.spans("m7")
        starts = dict(zip(spans["attempt"].to_list(), spans["start_ts"].to_list(), strict=True))
        assert starts[2] == T0 + dt.timedelta(hours=1, minutes=10)  # the second run's own sacct Start


def test_a_requeue_seen_only_in_slurmctld_splits_the_directory_too(tmp_path: Path) -> None:
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(_bundle(tmp_path / "b", "attempt-2", ctld_only=True))
        att = lab.attempts("m7").sort("attempt")
        assert att["attempt"].to_list() == [1, 2, 3]
        assert att["first_step"].to_list() == [1, 51, 101]


def test_requeue_split_keeps_a_free_directory_number_and_is_idempotent(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path / "b", "attempt-3")
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(bundle)
        first = lab.attempts("m7").sort("attempt").select("attempt", "first_step", "last_step")
        # a bundle numbered by launch left 2 free for the requeued run: attempt-3 stays 3
        assert first["attempt"].to_list() == [1, 2, 3]
        assert first["first_step"].to_list() == [1, 51, 101]
        # more evidence later (a node's kernel log) rebuilds the attempts: the split is made once, not again
        node = bundle / "nodes" / "gx1"
        node.mkdir(parents=True)
        (node / "kern.log").write_text(
            f"{T0 + dt.timedelta(hours=2):%b %d %H:%M:%S} gx1 kernel: hrtimer: interrupt took 12345 ns\n"
        )
        lab.ingest(bundle)
        again = lab.attempts("m7").sort("attempt").select("attempt", "first_step", "last_step")
        assert again.equals(first)


def test_a_job_requeued_twice_gives_three_attempts_and_the_last_one_fails_alone(tmp_path: Path) -> None:
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(_bundle(tmp_path / "b", "attempt-2", requeued_twice=True))
        att = lab.attempts("m7").sort("attempt")
        assert att["attempt"].to_list() == [1, 2, 3, 4]
        assert att["first_step"].to_list() == [1, 51, 101, 101]
        exc = lab.events(run="m7").filter(pl.col("kind") == "python_exception")
        assert exc.height and set(exc["attempt"].to_list()) == {3}

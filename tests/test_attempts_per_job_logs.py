"""One `slurm-J.out` per Slurm job, not in attempt directories: the jobs ran one after another, so each file's
launches are launches of their own, numbered in the order they began (not folded onto the launches of the file
with the most of them)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from clusterlab import Lab

T0 = dt.datetime(2026, 12, 1, 8, 0, 0)
CKPT = "/scratch/ckpt"


def _launch(t0: dt.datetime, first: int, last: int, load: int | None) -> list[str]:
    """A Megatron launch: a checkpoint load where it resumes, a dated iteration line a step."""
    out = [f"START TIME: {t0:%a %b %d %H:%M:%S} UTC {t0.year}"]
    if load is not None:
        out.append(f"  successfully loaded checkpoint from {CKPT} [ t 1/1, p 1/1 ] at iteration {load}")
    t = t0 + dt.timedelta(seconds=60)
    out.append(f"[before the start of training step] datetime: {t:%Y-%m-%d %H:%M:%S} ")
    for n in range(first, last + 1):
        t += dt.timedelta(seconds=30)
        out.append(f" [{t:%Y-%m-%d %H:%M:%S}] iteration {n:8d}/     100 | consumed samples: {n * 8:12d} | "
                   f"elapsed time per iteration (ms): 30000.0 | learning rate: 1.000000E-04 | global batch size: "
                   f"    8 | lm loss: 2.500000E+00 | loss scale: 1.0 | grad norm: 0.300 | number of skipped "
                   f"iterations:   0 | number of nan iterations:   0 |")
    return out


def _bundle(root: Path) -> Path:
    run = root / "runs" / "r1"
    (run / "job-11").mkdir(parents=True)
    (run / "run.toml").write_text("gpus = 8\ntokens_per_step = 16384\nflops_per_token = 1e9\n")
    (run / "job-11" / "slurm-11.out").write_text("\n".join(_launch(T0, 1, 20, None)) + "\n")
    # job 12 holds two launches (an in-job restart from the checkpoint at step 30), job 13 one
    t12 = T0 + dt.timedelta(hours=2)
    two = _launch(t12, 21, 40, 20) + _launch(t12 + dt.timedelta(hours=1), 31, 50, 30)
    (run / "job-12").mkdir()
    (run / "job-12" / "slurm-12.out").write_text("\n".join(two) + "\n")
    (run / "job-13").mkdir()
    (run / "job-13" / "slurm-13.out").write_text("\n".join(_launch(T0 + dt.timedelta(hours=6), 51, 70, 50)) + "\n")
    return root


def test_successive_job_logs_are_successive_attempts(tmp_path: Path) -> None:
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(_bundle(tmp_path / "b"))
        att = lab.attempts("r1").sort("attempt")
        assert att["attempt"].to_list() == [1, 2, 3, 4]
        assert att["first_step"].to_list() == [1, 21, 31, 51]
        assert att["last_step"].to_list() == [20, 40, 50, 70]


def test_a_restart_that_never_trained_leaves_its_job_log_whole(tmp_path: Path) -> None:
    """ft_launcher decides to restart the workers, its health check then fails and the job ends: what follows the
    restart line is the failed attempt's end, and the next job's log is the next attempt."""
    run = tmp_path / "b" / "runs" / "r1"
    (run / "job-11").mkdir(parents=True)
    (run / "run.toml").write_text("gpus = 8\ntokens_per_step = 16384\nflops_per_token = 1e9\n")
    t_fail = T0 + dt.timedelta(seconds=60 + 20 * 30 + 100)

    def ft(t: dt.datetime, msg: str) -> str:
        return f"[{t:%Y-%m-%d %H:%M:%S},000] [INFO] [ft_launcher4242@n1] {msg}"

    job11 = _launch(T0, 1, 20, None) + [
        ft(t_fail, "[default] Worker group FAILED. 1/3 attempts left; will restart worker group"),
        ft(t_fail + dt.timedelta(seconds=9), "GPU health check failed for node n1: Node n1 has an unhealthy GPU."),
    ]
    (run / "job-11" / "slurm-11.out").write_text("\n".join(job11) + "\n")
    (run / "job-12").mkdir()
    (run / "job-12" / "slurm-12.out").write_text("\n".join(_launch(T0 + dt.timedelta(hours=2), 21, 40, 20)) + "\n")
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(tmp_path / "b")
        att = lab.attempts("r1").sort("attempt")
        assert att["attempt"].to_list() == [1, 2]
        assert att["first_step"].to_list() == [1, 21]
        # the health check's line stays with attempt 1 (it does not start attempt 2 two hours early)
        assert att["start_ts"][1] >= T0 + dt.timedelta(hours=2)
        assert att["end_ts"][0] >= t_fail + dt.timedelta(seconds=9)

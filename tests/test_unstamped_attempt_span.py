"""An attempt whose own lines carry no time (its container never started: srun and pyxis print no stamps) still
holds the allocation its output names (`slurm-J.out`): its GPU time is in the ledger, from the job's start to its
end, instead of falling out of the run's span."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from clusterlab import Lab
from clusterlab.diagnose import timeline

T0 = dt.datetime(2026, 10, 5, 14, 0, 0)


def _megatron(t0: dt.datetime, n: int) -> list[str]:
    t = t0 + dt.timedelta(seconds=90)
    out = [f"[before the start of training step] datetime: {t:%Y-%m-%d %H:%M:%S} "]
    for i in range(1, n + 1):
        t += dt.timedelta(seconds=20)
        out.append(f" [{t:%Y-%m-%d %H:%M:%S}] iteration {i:8d}/     500 | consumed samples: {i * 16:12d} | "
                   f"elapsed time per iteration (ms): 20000.0 | learning rate: 1.000000E-04 | global batch size: "
                   f"   16 | lm loss: 3.100000E+00 | loss scale: 1.0 | grad norm: 0.400 | number of skipped "
                   f"iterations:   0 | number of nan iterations:   0 |")
    return out


def _bundle(root: Path) -> Path:
    run = root / "runs" / "pz"
    (run / "attempt-1").mkdir(parents=True)
    (run / "run.toml").write_text("gpus = 16\ntokens_per_step = 32768\nflops_per_token = 1e9\n")
    # the first job: the image import fails on both nodes, nothing is stamped
    (run / "attempt-1" / "slurm-7301.out").write_text("\n".join([
        "pyxis: importing docker image: nvcr.io#nvidia/pytorch:24.10-py3",
        "pyxis: importing docker image: nvcr.io#nvidia/pytorch:24.10-py3",
        "slurmstepd: error: pyxis: child 88121 failed with error code: 1",
        "slurmstepd: error: pyxis: failed to import docker image",
        "slurmstepd: error: pyxis: couldn't start container",
        "srun: error: qa-7: task 0: Exited with exit code 1",
        "srun: error: qa-8: task 1: Exited with exit code 1"]) + "\n")
    t2 = T0 + dt.timedelta(minutes=40)
    (run / "attempt-2").mkdir()
    (run / "attempt-2" / "slurm-7302.out").write_text("\n".join(_megatron(t2, 30)) + "\n")
    end2 = t2 + dt.timedelta(seconds=90 + 30 * 20 + 5)
    (root / "scheduler").mkdir(parents=True)
    (root / "scheduler" / "sacct.psv").write_text("\n".join([
        "JobID|JobName|User|Partition|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList",
        f"7301|pz|u|gpu|64|FAILED|1:0|{T0:%Y-%m-%dT%H:%M:%S}|{T0:%Y-%m-%dT%H:%M:%S}|"
        f"{T0 + dt.timedelta(seconds=150):%Y-%m-%dT%H:%M:%S}|00:02:30|2|qa-[7-8]",
        f"7302|pz|u|gpu|64|COMPLETED|0:0|{t2:%Y-%m-%dT%H:%M:%S}|{t2:%Y-%m-%dT%H:%M:%S}|"
        f"{end2:%Y-%m-%dT%H:%M:%S}|00:12:35|2|qa-[7-8]"]) + "\n")
    return root


def test_an_attempt_without_stamps_spans_the_job_its_output_names(tmp_path: Path) -> None:
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(_bundle(tmp_path / "b"))
        spans = timeline.attempt_spans(lab.con, "pz").sort("attempt")
        first = spans.row(0, named=True)
        assert (first["job_id"], first["start_ts"], first["end_ts"]) == (
            "7301", T0, T0 + dt.timedelta(seconds=150)), first
        att = lab.attribute("pz")
        # the run runs from the first job's start: the failed launch's 150 s x 16 GPUs are in the ledger
        assert abs(att.gpu_hours - 16 * (40 * 60 + 90 + 30 * 20 + 5) / 3600) < 1e-6, att.gpu_hours

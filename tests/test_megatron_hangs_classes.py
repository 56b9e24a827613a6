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

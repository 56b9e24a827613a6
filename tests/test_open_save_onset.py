"""A save that never finished because the filesystem stopped answering: the attempt's loss began at the save's start,
even where the framework printed the saved step's own record just after the save began (Megatron-DeepSpeed's
`saving checkpoint at iteration N`, then DeepSpeed's `step=N` line of a rank whose clock is a few ms on). A step
record of the saved step is no progress past the save; a record of a later step is (an asynchronous save the job
stepped on from), and then the storage's first complaint stays the root."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl

from clusterlab import Lab
from conftest import nccl_rank_map

T0 = dt.datetime(2026, 12, 1, 8, 0, 0)
HOSTS = ["gn-01", "gn-02", "gn-03", "gn-04"]
CKPT = "/lustre/proj/ckpt"
STEP_S = 30


def _ds(t: dt.datetime, text: str) -> str:
    stamp = f"{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}"
    return f"[default0]:[{stamp}] [INFO] [logging.py:68:log_dist] [Rank 0] {text}"


def _iteration(n: int) -> str:
    return (f"[default7]: iteration {n:8d}/     100 | consumed samples: {n * 8:12d} | elapsed time per iteration (s): "
            f"{STEP_S:.2f} | learning rate: 1.000E-04 | global batch size:     8 | lm loss: 2.500000E+00 | grad norm: "
            "0.300 | num zeros: 0.0 | number of skipped iterations:   0 | number of nan iterations:   0 |")


def _bundle(root: Path, stepped_on: bool) -> tuple[dt.datetime, dt.datetime]:
    """A 4-host Megatron-DeepSpeed attempt whose save of step 30 never finishes; `stepped_on`: step 31 was logged
    after that save began. The Lustre target's loss is stamped by every host 50 s into the save. Returns the save's
    start and the first Lustre line's time."""
    run = root / "runs" / "r1" / "attempt-1"
    run.mkdir(parents=True)
    (root / "runs" / "r1" / "run.toml").write_text("gpus = 32\ntokens_per_step = 16384\nflops_per_token = 1e9\n")
    out = [f"START TIME: {T0:%a %b %d %H:%M:%S} UTC {T0.year}",
           "[default0]:using world size: 32, data-parallel-size: 4, tensor-model-parallel size: 8, "
           "pipeline-model-parallel size: 1 "]
    t = T0 + dt.timedelta(seconds=60)
    out.append(f"[default0]:[before the start of training step] datetime: {t:%Y-%m-%d %H:%M:%S} ")
    last = 31 if stepped_on else 30
    for n in range(1, last + 1):
        t += dt.timedelta(seconds=STEP_S)
        out.append(_iteration(n))
        if n % 10:
            out.append(_ds(t, f"step={n}, skipped=0, lr=[1e-04, 1e-04], mom=[(0.9, 0.95), (0.9, 0.95)]"))
            continue
        out.append(f"[default0]:saving checkpoint at iteration {n:7d} to {CKPT}")
        # the saved step's own record, from a rank whose clock is a few milliseconds on
        out.append(_ds(t + dt.timedelta(milliseconds=6),
                       f"step={n}, skipped=0, lr=[1e-04, 1e-04], mom=[(0.9, 0.95), (0.9, 0.95)]"))
        out.append(_ds(t + dt.timedelta(milliseconds=500),
                       f"Saving model checkpoint: {CKPT}/global_step{n}/mp_rank_00_model_states.pt"))
        if n < 30:
            out.append(f"[default0]:  successfully saved checkpoint at iteration {n:7d} to {CKPT}")
            t += dt.timedelta(seconds=20)
        else:
            save_at = t
    stuck = save_at + dt.timedelta(seconds=600)
    out += [f"[default{r}]:[E ProcessGroupNCCL.cpp:737] [Rank {r}] Watchdog caught collective operation timeout: "
            f"WorkNCCL(SeqNum=912, OpType=BARRIER, Timeout(ms)=600000) ran for {600013 + r} milliseconds before "
            "timing out." for r in range(4)]
    out.append(f"[{stuck + dt.timedelta(seconds=5):%Y-%m-%d %H:%M:%S},120] [INFO] [launch.py:319:sigkill_handler] "
               "Killing subprocess 41230")
    (run / "slurm-7001.out").write_text("\n".join(out) + "\n")
    (run / "nccl.log").write_text(nccl_rank_map(HOSTS))
    lost_at = save_at + dt.timedelta(seconds=50)
    for i, h in enumerate(HOSTS):
        d = root / "nodes" / h
        d.mkdir(parents=True)
        at = lost_at + dt.timedelta(seconds=i)
        (d / "dmesg.log").write_text(
            f"{at:%Y-%m-%dT%H:%M:%S},000000+00:00 Lustre: proj-OST0003-osc-ffff9a{i}: Connection to proj-OST0003 "
            "(at 10.9.0.3@o2ib) was lost; in progress operations using this service will wait for recovery to "
            "complete\n")
    return save_at, lost_at


def _root(tmp: Path, stepped_on: bool) -> tuple[dict, dt.datetime, dt.datetime]:
    save_at, lost_at = _bundle(tmp / "b", stepped_on)
    with Lab(tmp / "db.duckdb") as lab:
        lab.ingest(tmp / "b")
        inc = lab.incidents("r1").filter(pl.col("kind") == "attempt_end")
    assert inc.height == 1, inc
    return inc.row(0, named=True), save_at, lost_at


def test_the_saved_steps_own_record_is_no_progress_past_the_save(tmp_path: Path) -> None:
    r, save_at, lost_at = _root(tmp_path, stepped_on=False)
    assert r["failure_mode"] == "filesystem_io"
    assert r["host"] == "proj-OST0003"  # every host reports the target: the shared service, not one of them
    assert abs((r["root_ts"] - save_at).total_seconds()) < 2, (r["root_ts"], save_at, lost_at)


def test_a_later_step_after_the_save_began_keeps_the_storage_line(tmp_path: Path) -> None:
    r, save_at, lost_at = _root(tmp_path, stepped_on=True)
    assert r["failure_mode"] == "filesystem_io"
    assert r["root_ts"] >= lost_at - dt.timedelta(seconds=1), (r["root_ts"], save_at, lost_at)

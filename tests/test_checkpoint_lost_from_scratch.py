"""A launch that finds no checkpoint where the run saved its last ones, and trains from step 0, lost them
(`checkpoint_lost`: a provider wiping the directory); one pointed at another, empty directory starts afresh."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from clusterlab import Lab

T0 = dt.datetime(2026, 12, 1, 8, 0, 0)


def _launch(t0: dt.datetime, first: int, last: int, ckpt: str, fresh: bool) -> list[str]:
    out = [f"WARNING: could not find the metadata file {ckpt}/latest_checkpointed_iteration.txt",
           "    will not load any checkpoints and will start from random"] if fresh else []
    t = t0 + dt.timedelta(seconds=60)
    out.append(f"[before the start of training step] datetime: {t:%Y-%m-%d %H:%M:%S} ")
    for n in range(first, last + 1):
        t += dt.timedelta(seconds=30)
        out.append(f" [{t:%Y-%m-%d %H:%M:%S}] iteration {n:8d}/     100 | consumed samples: {n * 8:12d} | "
                   f"elapsed time per iteration (ms): 30000.0 | lm loss: 2.500000E+00 | loss scale: 1.0 | "
                   f"number of skipped iterations:   0 | number of nan iterations:   0 |")
        if n % 10 == 0:
            out += [f"saving checkpoint at iteration {n:7d} to {ckpt} in torch_dist format",
                    f"  successfully saved checkpoint from iteration {n:7d} to {ckpt} [ t 1/1, p 1/1 ]"]
    return out


def _lost(tmp: Path, second_dir: str) -> list[tuple]:
    run = tmp / "b" / "runs" / "r1"
    for k, (t0, last, ck) in enumerate([(T0, 25, "/lustre/ck"), (T0 + dt.timedelta(hours=3), 12, second_dir)], 1):
        (run / f"attempt-{k}").mkdir(parents=True)
        (run / f"attempt-{k}" / "train.log").write_text("\n".join(_launch(t0, 1, last, ck, True)) + "\n")
    (run / "run.toml").write_text("gpus = 8\ntokens_per_step = 16384\nflops_per_token = 1e9\n")
    with Lab(tmp / "db.duckdb") as lab:
        lab.ingest(tmp / "b")
        inc = lab.incidents("r1")
        return [(r["attempt"], r["last_step"]) for r in inc.filter(inc["failure_mode"] == "checkpoint_lost")
                .iter_rows(named=True)]


def test_no_checkpoint_where_the_run_saved_is_a_lost_checkpoint(tmp_path: Path) -> None:
    assert _lost(tmp_path, "/lustre/ck/") == [(2, 20)]


def test_a_new_empty_directory_is_a_fresh_start(tmp_path: Path) -> None:
    assert _lost(tmp_path, "/lustre/ck-v2") == []


def test_work_kept_until_the_checkpoints_were_lost_is_recompute(tmp_path: Path) -> None:
    """Attempt 2 resumed attempt 1's save and saved on; attempt 3 found the directory empty and trained from step 0:
    the steps of both earlier attempts were thrown away, not only those after attempt 2's last save."""
    run = tmp_path / "b" / "runs" / "r1"
    t2, t3 = T0 + dt.timedelta(hours=1), T0 + dt.timedelta(hours=2)
    logs = {1: _launch(T0, 1, 25, "/lustre/ck", True),
            2: ["  successfully loaded checkpoint from /lustre/ck [ t 1/1, p 1/1 ] at iteration 20"]
            + _launch(t2, 21, 45, "/lustre/ck", False),
            3: _launch(t3, 1, 40, "/lustre/ck", True)}
    for k, lines in logs.items():
        (run / f"attempt-{k}").mkdir(parents=True)
        (run / f"attempt-{k}" / "train.log").write_text("\n".join(lines) + "\n")
    (run / "run.toml").write_text("gpus = 8\ntokens_per_step = 16384\nflops_per_token = 1e9\n")
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(tmp_path / "b")
        rows = lab.attribute("r1").rows
    prod = rows.filter(rows["category"] == "productive")
    rec = rows.filter(rows["category"] == "recompute")
    # nothing of attempts 1 and 2 is productive; their steps (25 + 25 of 30 s) are recompute
    assert set(prod["attempt"].to_list()) == {3}
    assert abs(rec.filter(rec["attempt"] <= 2)["gpu_hours"].sum() * 3600 / 8 - 50 * 30.0) < 31.0

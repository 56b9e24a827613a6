"""Launches appended to one log beside attempt directories: each printer of steps counts on its own, and the
log's launches are numbered after the run's directory attempts that came before them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from clusterlab import Lab

T0 = dt.datetime(2026, 12, 1, 8, 0, 0)
CKPT = "/scratch/ckpt"


def _launch(t0: dt.datetime, first: int, last: int, load: int | None) -> list[str]:
    """A Megatron-DeepSpeed launch: undated iteration lines, a dated DeepSpeed `step=N` line every 5 steps."""
    out = [f"START TIME: {t0:%a %b %d %H:%M:%S} UTC {t0.year}",
           "[default0]:using world size: 8, data-parallel-size: 1, tensor-model-parallel size: 8, "
           "pipeline-model-parallel size: 1 "]
    if load is not None:
        out.append(f"[default0]:  successfully loaded checkpoint from {CKPT} at iteration {load}")
    t = t0 + dt.timedelta(seconds=60)
    out.append(f"[default0]:[before the start of training step] datetime: {t:%Y-%m-%d %H:%M:%S} ")
    for n in range(first, last + 1):
        t += dt.timedelta(seconds=30)
        out.append(f"[default7]: iteration {n:8d}/     100 | consumed samples: {n * 8:12d} | elapsed time per "
                   f"iteration (s): 30.00 | learning rate: 1.000E-04 | global batch size:     8 | lm loss: "
                   f"2.500000E+00 | grad norm: 0.300 | num zeros: 0.0 | number of skipped iterations:   0 | "
                   f"number of nan iterations:   0 | samples per second: 0.267 | TFLOPs: 140.00 |")
        if n % 5 == 0:
            out.append(f"[default0]:[{t:%Y-%m-%d %H:%M:%S},000] [INFO] [logging.py:68:log_dist] [Rank 0] step={n}, "
                       f"skipped=0, lr=[1e-04, 1e-04], mom=[(0.9, 0.95), (0.9, 0.95)]")
    return out


def _bundle(root: Path) -> Path:
    run = root / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "run.toml").write_text('gpus = 8\ntokens_per_step = 16384\nflops_per_token = 1e9\n')
    (run / "attempt-1").mkdir()
    (run / "attempt-1" / "slurm-11.out").write_text("\n".join(_launch(T0, 1, 20, None)) + "\n")
    later = T0 + dt.timedelta(hours=2)
    appended = _launch(later, 21, 40, 20) + _launch(later + dt.timedelta(hours=1), 31, 50, 30)
    (run / "slurm-12.out").write_text("\n".join(appended) + "\n")
    return root


def test_appended_launches_follow_the_directory_attempts(tmp_path: Path) -> None:
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(_bundle(tmp_path / "b"))
        att = lab.attempts("r1").sort("attempt")
        assert att["attempt"].to_list() == [1, 2, 3]
        assert att["first_step"].to_list() == [1, 21, 31]
        assert att["last_step"].to_list() == [20, 40, 50]

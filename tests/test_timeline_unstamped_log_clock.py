"""A training log whose step lines carry no stamp of their own (HF Trainer's loss dicts) and no stamped step line to
date them from must not set the attempt's clock: the per-rank records, stamped by each host, keep theirs."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from clusterlab import Lab

T0 = dt.datetime(2026, 12, 2, 9, 0, 0, tzinfo=dt.UTC)
STEPS, STEP_S, SKIP_S = 60, 10.0, 600.0  # the first step starts 10 min after the last stamped line


def _bundle(root: Path) -> Path:
    att = root / "runs" / "hf" / "attempt-1"
    att.mkdir(parents=True)
    stamp = f"{T0:%Y-%m-%d %H:%M:%S},000"
    log = [f"[default0]:[INFO|trainer.py:2243] {stamp} >> ***** Running training *****",
           f"[default0]:[INFO|trainer.py:2248] {stamp} >>   Total optimization steps = {STEPS}"]
    log += [f"[default0]:{{'loss': {2.0 - n / 100:.4f}, 'grad_norm': 0.4, 'learning_rate': 1e-05, "
            f"'epoch': {n / STEPS:.4f}}}" for n in range(10, STEPS + 1, 10)]
    (att / "slurm-9.out").write_text("\n".join(log) + "\n")
    recs = [json.dumps({"ts": (T0 + dt.timedelta(seconds=SKIP_S + STEP_S * n)).timestamp(), "rank": r, "host": h,
                        "step": n, "step_s": STEP_S, "loss": 2.0})
            for r, h in ((0, "n1"), (8, "n2")) for n in range(1, STEPS + 1)]
    (att / "steps.jsonl").write_text("\n".join(recs) + "\n")
    (root / "runs" / "hf" / "run.toml").write_text("gpus = 16\ntokens_per_step = 65536\nflops_per_token = 1e9\n")
    return root


def test_unstamped_step_lines_do_not_move_the_hosts_clocks(tmp_path: Path) -> None:
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(_bundle(tmp_path / "b"))
        _, _, clocks = lab.spans("hf")
        assert clocks.height and clocks["offset_s"].abs().max() < 5.0, clocks
        # the ten minutes before the first step are startup (16 GPUs: 2.67 GPU-hours), not steps moved into them
        ledger = dict(lab.attribute("hf").ledger.select("category", "gpu_hours").iter_rows())
        assert abs(ledger["startup"] - 16 * SKIP_S / 3600) < 0.1, ledger

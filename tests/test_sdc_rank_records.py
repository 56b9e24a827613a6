"""Silent data corruption read from per-rank records as real jobs write them: Python's json module writes a NaN or
infinite loss as the bare token NaN / Infinity, and the trainer's own log line (HF Trainer's loss, a mean gathered
over every rank, printed by rank 0) goes non-finite too, on another host than the faulty rank's."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl

from clusterlab import Lab

T0 = dt.datetime(2026, 12, 2, 9, 0, 0, tzinfo=dt.UTC)
HOSTS = {"sdc-a": range(0, 4), "sdc-b": range(4, 8)}
BAD_RANK, FROM_STEP, STEPS = 5, 40, 60


def _bundle(root: Path, trainer_log: bool) -> Path:
    att = root / "runs" / "sdcrun" / "attempt-1"
    att.mkdir(parents=True)
    lines = []
    for host, ranks in HOSTS.items():
        for r in ranks:
            for step in range(1, STEPS + 1):
                loss = 3.0 - 0.01 * step + 0.001 * r
                if r == BAD_RANK and step >= FROM_STEP:
                    loss = float("nan") if step % 2 else float("inf")
                lines.append(json.dumps({"ts": (T0 + dt.timedelta(seconds=5 * step)).timestamp(), "rank": r,
                                         "host": host, "step": step, "step_s": 5.0, "loss": loss}))
    (att / "steps.jsonl").write_text("\n".join(lines) + "\n")
    if trainer_log:
        log = [f"[default0]:{{'loss': {'nan' if n >= FROM_STEP else round(3.0 - 0.01 * n, 4)}, 'grad_norm': 0.5, "
               f"'learning_rate': 1e-05, 'epoch': {n / STEPS:.4f}}}" for n in range(10, STEPS + 1, 10)]
        (att / "slurm-7.out").write_text("\n".join(log) + "\n")
    return root


def _end(tmp_path: Path, trainer_log: bool) -> dict:
    with Lab(tmp_path / "s.duckdb") as lab:
        lab.ingest(_bundle(tmp_path / "bundle", trainer_log))
        kept = lab.sql("SELECT count(*) AS n FROM rank_steps WHERE rank = 5")["n"].item()
        assert kept == STEPS  # no record lost to the NaN / Infinity tokens
        inc = lab.incidents("sdcrun").filter(pl.col("kind") == "attempt_end")
        assert inc.height == 1, inc
        return inc.row(0, named=True)


def test_python_json_nan_and_infinity_losses_are_read_as_non_finite(tmp_path: Path) -> None:
    end = _end(tmp_path, trainer_log=False)
    assert (end["failure_mode"], end["host"], end["rank"]) == ("silent_data_corruption", "sdc-b", BAD_RANK), end


def test_the_trainer_logs_reduced_loss_does_not_name_rank_0s_host(tmp_path: Path) -> None:
    end = _end(tmp_path, trainer_log=True)
    assert (end["failure_mode"], end["host"], end["rank"]) == ("silent_data_corruption", "sdc-b", BAD_RANK), end


def test_the_corruption_starts_the_incident(tmp_path: Path) -> None:
    """The attempt stopped making progress at the first non-finite loss, not when a guard gave up on it."""
    end = _end(tmp_path, trainer_log=True)
    assert end["root_ts"] == (T0 + dt.timedelta(seconds=5 * FROM_STEP)).replace(tzinfo=None), end


def test_an_undated_trainer_line_does_not_pull_the_root_before_the_first_wrong_number(tmp_path: Path) -> None:
    """The trainer's NaN loss dicts carry no stamp of their own: dated by the last stamped line before them (a save
    minutes earlier) they seem to come before the rank's first non-finite record. That record is the first wrong
    number, timed by the rank itself: the root is its time, not the borrowed one (the steps in between were sound
    work, not the incident's)."""
    root = _bundle(tmp_path / "bundle", trainer_log=True)
    out = root / "runs" / "sdcrun" / "attempt-1" / "slurm-7.out"
    save = (T0 + dt.timedelta(seconds=5 * 20)).strftime("%Y-%m-%d %H:%M:%S,000")
    lines = out.read_text().splitlines()
    lines.insert(1, f"[INFO|trainer.py:3984] {save} >> Saving model checkpoint to /ckpt/checkpoint-20")
    out.write_text("\n".join(lines) + "\n")
    with Lab(tmp_path / "s.duckdb") as lab:
        lab.ingest(root)
        borrowed = lab.sql("SELECT min(ts) AS ts FROM events WHERE failure_mode = 'loss_divergence' "
                           "AND source <> 'step_jsonl'")["ts"].item()
        first_wrong = (T0 + dt.timedelta(seconds=5 * FROM_STEP)).replace(tzinfo=None)
        assert borrowed is not None and borrowed < first_wrong  # the case: a line dated before the first NaN
        end = lab.incidents("sdcrun").filter(pl.col("kind") == "attempt_end").row(0, named=True)
    assert end["failure_mode"] == "silent_data_corruption", end
    assert end["root_ts"] == first_wrong, end

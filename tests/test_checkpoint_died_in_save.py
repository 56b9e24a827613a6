"""A save the job died in is not a lost checkpoint: HF Trainer logs the files it writes into a checkpoint but not
that the save completed; where the attempt never trained past the saved step (a filesystem error mid-save), the
next attempt resuming from the save before it lost nothing more. A save the attempt trained past was complete:
resuming from an older one then lost it."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl
import pytest

from clusterlab import Lab

T0 = dt.datetime(2026, 12, 3, 8, 0, 0, tzinfo=dt.UTC)
CK = "/lustre/ck/run"


def _stamp(t: dt.datetime) -> str:
    return f"{t:%Y-%m-%d %H:%M:%S},000"


def _attempt(root: Path, k: int, t0: dt.datetime, first: int, last: int, saves: list[int], load: int | None,
             died_saving: int | None) -> None:
    d = root / "runs" / "ck" / f"attempt-{k}"
    d.mkdir(parents=True)
    log, recs, t = [f"[default0]:[INFO|trainer.py:2243] {_stamp(t0)} >> ***** Running training *****"], [], t0
    if load is not None:
        log.append(f"[default0]:[INFO|trainer.py:2112] {_stamp(t)} >> Loading model from {CK}/checkpoint-{load}.")
    for n in range(first, last + 1):
        t += dt.timedelta(seconds=10)
        recs += [json.dumps({"ts": t.timestamp(), "rank": r, "host": f"h{r}", "step": n, "step_s": 10.0, "loss": 2.0})
                 for r in (0, 1)]
        if n in saves or n == died_saving:
            log += [f"[default0]:[INFO|trainer.py:3801] {_stamp(t)} >> Saving model checkpoint to {CK}/checkpoint-{n}",
                    f"[default0]:[INFO|configuration_utils.py:414] {_stamp(t + dt.timedelta(seconds=1))} >> "
                    f"Configuration saved in {CK}/checkpoint-{n}/config.json"]
            t += dt.timedelta(seconds=30)
    if died_saving is not None:
        log += ["[default0]:[rank0]: Traceback (most recent call last):",
                "[default0]:[rank0]:   File \"/w/train.py\", line 9, in <module>",
                "[default0]:[rank0]: OSError: [Errno 5] Input/output error"]
    (d / "slurm-1.out").write_text("\n".join(log) + "\n")
    (d / "steps.jsonl").write_text("\n".join(recs) + "\n")


def _lost(tmp_path: Path, died: bool) -> pl.DataFrame:
    root = tmp_path / "b"
    if died:  # saves 10, dies writing 20
        _attempt(root, 1, T0, 1, 20, [10], None, 20)
    else:     # saves 10 and 20, trains on to 25
        _attempt(root, 1, T0, 1, 25, [10, 20], None, None)
    _attempt(root, 2, T0 + dt.timedelta(hours=1), 11, 30, [], 10, None)
    (root / "runs" / "ck" / "run.toml").write_text("gpus = 2\ntokens_per_step = 4096\nflops_per_token = 1e9\n")
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(root)
        return lab.incidents("ck").filter(pl.col("failure_mode") == "checkpoint_lost")


@pytest.mark.parametrize(("died", "lost"), [(True, 0), (False, 1)], ids=["died-in-the-save", "trained-past-it"])
def test_a_save_is_lost_only_if_it_was_complete(tmp_path: Path, died: bool, lost: int) -> None:
    assert _lost(tmp_path, died).height == lost

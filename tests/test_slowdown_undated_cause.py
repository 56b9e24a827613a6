"""A slowdown's cause must be dated near its onset: a line without a stamp of its own lies anywhere between its
stamped neighbours, and one whose interval spans many minutes (an NCCL WARN a dying job printed, dated only by the
stamped line above it) is no cause of a slowdown that began at that line's lower bound."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl

from clusterlab import Lab

T0 = dt.datetime(2026, 12, 4, 8, 0, 0, tzinfo=dt.UTC)
SLOW = range(30, 40)  # steps 8 s instead of 5 s on every rank


def _bundle(root: Path, stamped_after_s: float) -> Path:
    att = root / "runs" / "sl" / "attempt-1"
    att.mkdir(parents=True)
    recs, t = [], T0
    for n in range(1, 81):
        t += dt.timedelta(seconds=8.0 if n in SLOW else 5.0)
        recs += [json.dumps({"ts": t.timestamp(), "rank": r, "host": h, "step": n, "step_s": 5.0, "loss": 2.0})
                 for r, h in ((0, "n1"), (8, "n2"))]
    (att / "steps.jsonl").write_text("\n".join(recs) + "\n")
    onset = T0 + dt.timedelta(seconds=5 * 29)
    later = onset + dt.timedelta(seconds=stamped_after_s)
    log = [f"[default0]:[INFO|trainer.py:3801] {onset:%Y-%m-%d %H:%M:%S},000 >> Saving model checkpoint to "
           "/c/checkpoint-29",
           "[default8]:n2:4242:4300 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
           "10.0.0.1<50001> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.2 "
           "remoteGids::ffff:10.0.0.1",
           f"[default0]:[INFO|trainer.py:3801] {later:%Y-%m-%d %H:%M:%S},000 >> Saving model checkpoint to "
           "/c/checkpoint-80"]
    (att / "slurm-5.out").write_text("\n".join(log) + "\n")
    (root / "runs" / "sl" / "run.toml").write_text("gpus = 16\ntokens_per_step = 65536\nflops_per_token = 1e9\n")
    return root


def _slowdown_causes(tmp_path: Path, stamped_after_s: float) -> list[tuple[str, str]]:
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(_bundle(tmp_path / "b", stamped_after_s))
        inc = lab.attribute("sl").incidents.filter(pl.col("kind") == "slowdown")
        return [(r["failure_mode"], r["host"]) for r in inc.iter_rows(named=True)]


def test_a_line_dated_only_to_within_minutes_is_no_slowdown_cause(tmp_path: Path) -> None:
    assert ("network", "n2") not in _slowdown_causes(tmp_path, 900.0)


def test_a_line_dated_to_within_the_onset_still_is(tmp_path: Path) -> None:
    assert ("network", "n2") in _slowdown_causes(tmp_path, 20.0)

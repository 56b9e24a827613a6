"""Per-rank step files opened in append mode by every launch of a requeued job: a file that begins at a later launch
(a probe turned on for the last launches, a rank that joined later) numbers its launches on the run's count, not
from 1 again."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from clusterlab import Lab

T0 = dt.datetime(2026, 12, 1, 8, 0, 0, tzinfo=dt.UTC)
# three launches of one job: (start, first step, last step); each resumes from step 10 before its failure
LAUNCHES = [(T0, 1, 14), (T0 + dt.timedelta(hours=1), 11, 24), (T0 + dt.timedelta(hours=2), 21, 30)]


def _records(rank: int, host: str, launches: list[tuple[dt.datetime, int, int]]) -> str:
    out = []
    for t0, first, last in launches:
        for n in range(first, last + 1):
            ts = t0 + dt.timedelta(seconds=60 + 10 * (n - first + 1))
            out.append(json.dumps({"ts": ts.timestamp(), "rank": rank, "host": host, "step": n, "step_s": 10.0,
                                   "tokens": 4096, "loss": 2.0}))
    return "\n".join(out) + "\n"


def _bundle(root: Path) -> Path:
    run = root / "runs" / "r1"
    (run / "steps").mkdir(parents=True)
    (run / "run.toml").write_text("gpus = 16\ntokens_per_step = 65536\nflops_per_token = 1e9\n")
    (run / "steps" / "rank-00000.jsonl").write_text(_records(0, "n01", LAUNCHES))
    (run / "steps" / "rank-00008.jsonl").write_text(_records(8, "n02", LAUNCHES))
    # rank 3's probe was turned on for the last two launches only
    (run / "steps" / "rank-00003.jsonl").write_text(_records(3, "n01", LAUNCHES[1:]))
    return root


def test_a_step_file_begun_at_a_later_launch_joins_that_launch(tmp_path: Path) -> None:
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(_bundle(tmp_path / "b"))
        att = lab.attempts("r1").sort("attempt")
        assert att["attempt"].to_list() == [1, 2, 3]
        assert att["first_step"].to_list() == [1, 11, 21]
        assert att["last_step"].to_list() == [14, 24, 30]
        got = lab.sql("SELECT attempt, min(step) AS lo, max(step) AS hi FROM rank_steps WHERE rank = 3 "
                      "GROUP BY attempt ORDER BY attempt")
        assert got.rows() == [(2, 11, 24), (3, 21, 30)]

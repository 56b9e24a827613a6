"""An attempt that fails before its first step (its checkpoint load raises) is startup up to its root event and hang
from the root to its exit (DESIGN's ledger: hang runs from the root-cause event to the attempt's exit), not startup
throughout: the seconds the job spent dying after the exception are no start-up work."""

from __future__ import annotations

import polars as pl
from timelines import Attempt, write_events, write_run

from clusterlab import Lab

HOSTS = ["nx-301", "nx-302"]
LOAD_FAILS = 2000 + 45  # the second attempt's load raises 45 s after its start; it exits 30 s later


def test_a_load_failure_splits_a_stepless_attempt_into_startup_and_hang() -> None:
    with Lab(":memory:") as lab:
        write_run(lab.con, "r", 16, [Attempt(0, 40, [5.0] * 100, hosts=HOSTS, saves={100: 10.0}),
                                     Attempt(2000, 75, [], hosts=HOSTS),
                                     Attempt(2500, 50, [5.0] * 40, first_step=101, load_step=100, hosts=HOSTS)])
        write_events(lab.con, [{"t": LOAD_FAILS, "source": "torch", "kind": "python_exception",
                                "failure_mode": "user_code_error",
                                "text": "megatron.core.dist_checkpointing.core.CheckpointingException: Global shape "
                                        "mismatch for loaded (torch.Size([1024])) and expected (torch.Size([512]))"}],
                     run="r", attempt=2, name="slurm-9102.out")
        att = lab.attribute("r")
        end = att.incidents.filter(pl.col("kind") == "attempt_end", pl.col("attempt") == 2).row(0, named=True)
        assert end["failure_mode"] == "user_code_error", end
        rows = att.rows.filter(pl.col("attempt") == 2).group_by("category").agg(pl.col("seconds").sum())
        got = dict(rows.iter_rows())
    assert abs(got.get("startup", 0.0) - 45.0) <= 1.0, got
    assert abs(got.get("hang", 0.0) - 30.0) <= 1.0, got

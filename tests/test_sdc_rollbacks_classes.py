"""Defect classes the sdc_rollbacks campaign found (each case here is hand-written, not the campaign's wording):

- a GPU's wrong numbers spread to every rank one step later (the optimizer step used the NaN gradient norm), so the
  non-finite losses of the whole attempt span every host: silent data corruption is decided on the first wrong step;
- torch.distributed.checkpoint wraps each rank's FileNotFoundError of a missing shard in one CheckpointException:
  the load error is the exception's cause, and the resume still died on a lost checkpoint;
- a loss that creeps up after a burst of gradient norms reaches the spike ratio long after it left its own band:
  the divergence began where the climb did."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl
import pytest

from clusterlab import Lab
from clusterlab.diagnose import onsets, root_cause

T0 = dt.datetime(2026, 10, 5, 14, 0, 0, tzinfo=dt.UTC)


def test_corruption_that_spreads_to_every_rank_the_next_step_is_still_one_hosts(tmp_path: Path) -> None:
    att = tmp_path / "bundle" / "runs" / "spread" / "attempt-1"
    att.mkdir(parents=True)
    bad_host, first = "n2", 30
    lines = []
    for host, ranks in {"n1": range(0, 2), "n2": range(2, 4), "n3": range(4, 6)}.items():
        for r in ranks:
            for step in range(1, 50):
                loss = 4.0 - 0.02 * step
                if step == first and host == bad_host:
                    loss = float("inf")
                elif step > first:
                    loss = float("nan")  # the weights are NaN everywhere now
                lines.append(json.dumps({"ts": (T0 + dt.timedelta(seconds=8 * step)).timestamp(), "rank": r,
                                         "host": host, "step": step, "step_s": 8.0, "loss": loss}))
    (att / "rank_steps.jsonl").write_text("\n".join(lines) + "\n")
    with Lab(tmp_path / "s.duckdb") as lab:
        lab.ingest(tmp_path / "bundle")
        end = lab.incidents("spread").filter(pl.col("kind") == "attempt_end").row(0, named=True)
    assert (end["failure_mode"], end["host"]) == ("silent_data_corruption", bad_host), end


CKPT = "/mnt/fsx/ckpt/run9"


@pytest.fixture()
def lab():
    with Lab(":memory:") as lab:
        lab.con.execute("INSERT INTO ingested_files (file_id, path) VALUES (1, 'runs/r/attempt-1/a.out'), "
                        "(2, 'runs/r/attempt-2/b.out')")
        lab.con.execute("INSERT INTO attempts VALUES ('r', 1, ?, ?, ?, 1, 900, ['g1'], 1), "
                        "('r', 2, ?, ?, NULL, NULL, NULL, ['g1'], 1)",
                        [T0 - dt.timedelta(hours=4), T0 - dt.timedelta(minutes=30), T0 - dt.timedelta(hours=4),
                         T0, T0 + dt.timedelta(minutes=5)])
        lab.con.execute("INSERT INTO checkpoints (file_id, source, run, attempt, line, ts, action, step, path, ok) "
                        "VALUES (1, 'torchtitan', 'r', 1, 10, ?, 'save', 900, NULL, true), "
                        "(2, 'torchtitan', 'r', 2, 5, ?, 'load', 900, ?, NULL)",
                        [T0 - dt.timedelta(minutes=45), T0 + dt.timedelta(minutes=2), f"{CKPT}/step-900"])
        yield lab


def test_a_checkpoint_exception_whose_ranks_miss_a_shard_is_a_lost_checkpoint(lab: Lab) -> None:
    lab.con.execute("INSERT INTO events (file_id, source, run, attempt, line, ts, kind, failure_mode, severity, text, "
                    "detail) VALUES (2, 'torch', 'r', 2, 40, ?, 'python_exception', 'user_code_error', 'error', ?, ?)",
                    [T0 + dt.timedelta(minutes=3), "CheckpointException ranks:dict_keys([3, 12])",
                     json.dumps({"exception": "torch.distributed.checkpoint.api.CheckpointException",
                                 "causes": ["FileNotFoundError", "FileNotFoundError"]})])
    inc, _ = root_cause.attempt_end_incidents(lab.con, "r")
    assert inc.filter(inc["attempt"] == 2)["failure_mode"].to_list() == ["checkpoint_lost"]


def test_a_checkpoint_exception_of_another_cause_stays_the_users(lab: Lab) -> None:
    lab.con.execute("INSERT INTO events (file_id, source, run, attempt, line, ts, kind, failure_mode, severity, text, "
                    "detail) VALUES (2, 'torch', 'r', 2, 40, ?, 'python_exception', 'user_code_error', 'error', ?, ?)",
                    [T0 + dt.timedelta(minutes=3), "CheckpointException ranks:dict_keys([0])",
                     json.dumps({"exception": "CheckpointException", "causes": ["RuntimeError"]})])
    inc, _ = root_cause.attempt_end_incidents(lab.con, "r")
    assert inc.filter(inc["attempt"] == 2)["failure_mode"].to_list() == ["user_code_error"]


def _steps(con, losses: list[float]) -> None:
    con.execute("CREATE TABLE steps (run VARCHAR, attempt INTEGER, step BIGINT, line BIGINT, loss DOUBLE, "
                "grad_norm DOUBLE)")
    con.executemany("INSERT INTO steps VALUES ('d', 3, ?, ?, ?, 0.3)",
                    [(20 * (i + 1), i, v) for i, v in enumerate(losses)])


def test_a_slow_climb_dates_the_divergence_where_it_left_its_band() -> None:
    import duckdb
    con = duckdb.connect()
    flat = [1.90 + 0.004 * ((i * 7) % 5) for i in range(30)]  # steps 20..600, noise of a few thousandths
    climb = [1.95 + 0.06 * k for k in range(12)]                # steps 620..840: creeping up
    _steps(con, flat + climb)
    spike = pl.DataFrame({"run": ["d"], "attempt": [3], "step": [840]}).cast({"attempt": pl.Int32})
    assert onsets.climb_starts(con, spike)["step"].to_list() == [620]


def test_a_sudden_spike_keeps_its_step() -> None:
    import duckdb
    con = duckdb.connect()
    _steps(con, [1.90 + 0.004 * ((i * 7) % 5) for i in range(30)] + [4.1])
    spike = pl.DataFrame({"run": ["d"], "attempt": [3], "step": [620]}).cast({"attempt": pl.Int32})
    assert onsets.climb_starts(con, spike)["step"].to_list() == [620]


def test_the_gradient_norm_burst_before_the_climb_starts_it() -> None:
    import duckdb
    con = duckdb.connect()
    con.execute("CREATE TABLE steps (run VARCHAR, attempt INTEGER, step BIGINT, line BIGINT, loss DOUBLE, "
                "grad_norm DOUBLE)")
    losses = [1.90 + 0.004 * ((i * 7) % 5) for i in range(30)] + [1.91] + [1.98 + 0.07 * k for k in range(10)]
    norms = [0.30 + 0.01 * ((i * 3) % 4) for i in range(30)] + [9.5] + [4.0] * 10
    con.executemany("INSERT INTO steps VALUES ('d', 1, ?, ?, ?, ?)",
                    [(10 * (i + 1), i, v, n) for i, (v, n) in enumerate(zip(losses, norms, strict=True))])
    spike = pl.DataFrame({"run": ["d"], "attempt": [1], "step": [410]}).cast({"attempt": pl.Int32})
    assert onsets.climb_starts(con, spike)["step"].to_list() == [310]

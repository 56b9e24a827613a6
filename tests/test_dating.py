# ruff: noqa: E501  (the sample lines are real lines, long as printed)
"""Lines without a time of their own: dated inside the interval their stamped neighbours give (issue 28)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb

import clusterlab as cl
from clusterlab import store

LOG = """\
[rank0]:[titan] 2026-11-30 12:38:20,464 - root - INFO - step: 2010  loss:  2.37265  grad_norm:  0.3153  memory: 61.84GiB(78.17%)  tps: 787  tflops: 384.01  mfu: 38.81%
[rank6]: Traceback (most recent call last):
[rank6]:   File "/opt/torchtitan/torchtitan/train.py", line 530, in <module>
[rank6]:     trainer.train()
[rank6]: RuntimeError: CUDA error: uncorrectable ECC error encountered
E1130 12:41:48.360000 3896189 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 6 (pid: 3896202) of binary: /usr/bin/python3
"""


def _ingest(tmp_path: Path, text: str) -> cl.Lab:
    log = tmp_path / "runs" / "r1" / "train.log"
    log.parent.mkdir(parents=True)
    log.write_text(text)
    lab = cl.Lab(tmp_path / "d.duckdb")
    lab.ingest(log)
    return lab


def test_a_traceback_is_dated_by_its_process_death_inside_the_interval_of_its_neighbours(tmp_path: Path) -> None:
    lab = _ingest(tmp_path, LOG)
    row = lab.sql("SELECT ts, ts_lo, ts_hi, dated FROM events WHERE kind = 'cuda_error'").row(0, named=True)
    # the step line 3.5 minutes before is where the interval begins, not when the GPU failed
    assert row["ts_lo"] == dt.datetime(2026, 11, 30, 12, 38, 20, 464000)
    assert row["ts_hi"] == row["ts"] == dt.datetime(2026, 11, 30, 12, 41, 48, 360000)
    assert row["dated"] == "between"
    own = lab.sql("SELECT ts_lo, ts_hi, dated FROM events WHERE kind = 'worker_failed'")
    assert own.height and own["dated"].is_null().all() and own["ts_lo"].is_null().all()  # its own stamp


def test_a_line_with_only_an_earlier_stamp_is_dated_after_it(tmp_path: Path) -> None:
    lab = _ingest(tmp_path, LOG.splitlines(keepends=True)[0] + "".join(LOG.splitlines(keepends=True)[1:5]))
    row = lab.sql("SELECT ts, ts_lo, ts_hi, dated FROM events WHERE kind = 'cuda_error'").row(0, named=True)
    assert row["dated"] == "after" and row["ts_hi"] is None and row["ts"] == row["ts_lo"]


def test_a_database_from_before_the_dating_columns_gains_them(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    store.migrate(con)
    for t in store.DATED_TABLES:
        for c in store.DATING:
            con.execute(f"ALTER TABLE {t} DROP COLUMN {c}")
    con.execute("DELETE FROM schema_version WHERE version > ?", [store.MIGRATIONS.index(store._DATING)])
    store.migrate(con)
    cols = {r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                      "WHERE table_name = 'events'").fetchall()}
    assert {"ts_lo", "ts_hi", "dated"} <= cols
    con.close()


def _logged(steps: list[int], secs: list[float], own: list[bool], step_s: float | None):
    import polars as pl

    t0 = dt.datetime(2026, 12, 1, 10, 0, 0)
    return pl.DataFrame({"attempt": [1] * len(steps), "step": steps,
                         "ts": [t0 + dt.timedelta(seconds=x) for x in secs],
                         "step_s": [step_s] * len(steps), "file_id": [1] * len(steps), "line": list(range(len(steps))),
                         "borrowed": [not o for o in own]},
                        schema_overrides={"step_s": pl.Float64, "ts": pl.Datetime("us")})


def test_unstamped_step_lines_run_on_the_step_clock_and_a_save_takes_its_time_after_it() -> None:
    import polars as pl

    from clusterlab.diagnose import timeline

    # records every 10 steps of 2 s; a 30 s save after step 20; stamps only on steps 10 and 50
    lg = _logged([10, 20, 30, 40, 50], [20.0, 0, 0, 0, 130.0], [True, False, False, False, True], 2.0)
    got = timeline.step_clock(lg, pl.DataFrame({"attempt": [1], "step": [20]}))
    assert [(t - got["ts"][0]).total_seconds() for t in got["ts"]] == [0, 20, 70, 90, 110]


def test_a_log_without_step_times_spaces_its_unstamped_records_by_their_steps() -> None:
    import polars as pl

    from clusterlab.diagnose import timeline

    lg = _logged([10, 20, 30, 50], [0.0, 0, 0, 80.0], [True, False, False, True], None)
    got = timeline.step_clock(lg, pl.DataFrame(schema={"attempt": pl.Int32, "step": pl.Int64}))
    assert [(t - got["ts"][0]).total_seconds() for t in got["ts"]] == [0, 20, 40, 80]


def test_unstamped_lines_before_a_stamped_restatement_of_their_last_step_end_at_its_stamp() -> None:
    import polars as pl

    from clusterlab.diagnose import timeline

    # Megatron-DeepSpeed's iteration lines 1-10 (no stamp: they borrowed the start of training's), then DeepSpeed's
    # stamped `step=10` for the same step at 300 s (own campaign bloom_opt: every attempt's first steps a step early)
    lg = _logged([*range(1, 11), 10], [0.0] * 10 + [300.0], [False] * 10 + [True], 30.0)
    got = timeline.step_clock(lg, pl.DataFrame(schema={"attempt": pl.Int32, "step": pl.Int64}))
    t0 = dt.datetime(2026, 12, 1, 10, 0, 0)
    assert [(t - t0).total_seconds() for t in got["ts"]] == [30.0 * k for k in range(1, 11)] + [300.0]

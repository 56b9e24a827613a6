"""Whether a run's last attempt completed: then there is nothing to relaunch.

The store has no "completed" row of its own: an attempt that ended well simply has no end-of-attempt
incident (`incidents.attempt_end_incidents` leaves the last attempt out when nothing went wrong near
its end). That alone cannot tell a finished run from one still running or one that died silently, so
completion also needs positive evidence the collectors did record:

- the attempt's last step reached the run's total (fact `train_iters`: torchtitan's `Training starts
  at step 1, ..., total steps 600`, the HF Trainer's `Total optimization steps = 600`, Megatron's
  `train_iters`);
- the HF Trainer's end-of-training summary (fact `train_runtime_s`, printed when `train()` returns);
- the run's newest scheduler job record (sacct / jobcomp) ended COMPLETED with exit code 0.
"""

from __future__ import annotations

import re

import duckdb
import polars as pl

from clusterlab import store


def completion(con: duckdb.DuckDBPyConnection, run: str, last: pl.DataFrame, inc: pl.DataFrame,
               job_names: list[str]) -> tuple[str | None, str | None]:
    """(why the run completed, None) or (None, a warning when its last attempt ended with no failure on record)."""
    if not last.height:
        return None, None
    attempt = int(last["attempt"][0])
    if inc.height and inc.filter(pl.col("run") == run, pl.col("kind") == "attempt_end",
                                 pl.col("attempt") == attempt).height:
        return None, None  # it ended with a failure: that is what a relaunch answers
    why = (_reached_total(con, run, attempt, last["last_step"][0]) or _trainer_summary(con, run, attempt)
           or _job_completed(con, job_names, last["start_ts"][0]))
    if why:
        return f"run {run} completed: attempt {attempt} ended with no failure on record and {why}", None
    return None, (f"attempt {attempt} ended with no failure on record and nothing says it completed "
                  "(still running, or stopped without a trace?)")


def _where(path: str, line: int | None) -> str:
    return f"{path}:{line}" if line is not None else path


def _reached_total(con: duckdb.DuckDBPyConnection, run: str, attempt: int, last_step: int | None) -> str | None:
    """`reached step 600 of the run's 600 (file:line)` when the attempt's last step is the run's total."""
    rows = store.frame(con, """
        SELECT f.value, i.path, f.line FROM facts f JOIN ingested_files i USING (file_id)
        WHERE f.run = ? AND f.key = 'train_iters' AND f.attempt <= ?
        ORDER BY f.attempt DESC, f.ts DESC NULLS LAST, f.line DESC LIMIT 1""", [run, attempt])
    if last_step is None or not rows.height:
        return None
    value = re.sub(r"[,_\s]", "", str(rows["value"][0]))
    if not value.isdigit():  # a fact is log text: a value that is not a step count proves nothing
        return None
    total = int(value)
    if total <= 0 or last_step < total:
        return None
    return f"reached step {last_step} of the run's {total} ({_where(rows['path'][0], rows['line'][0])})"


def _trainer_summary(con: duckdb.DuckDBPyConnection, run: str, attempt: int) -> str | None:
    rows = store.frame(con, """
        SELECT i.path, f.line FROM facts f JOIN ingested_files i USING (file_id)
        WHERE f.run = ? AND f.attempt = ? AND f.key = 'train_runtime_s' ORDER BY f.line LIMIT 1""", [run, attempt])
    if not rows.height:
        return None
    return f"printed the trainer's end-of-training summary ({_where(rows['path'][0], rows['line'][0])})"


def _job_completed(con: duckdb.DuckDBPyConnection, names: list[str], start) -> str | None:
    """The run's newest scheduler job (by name), when it ended COMPLETED with exit code 0 after the attempt began."""
    rows = store.frame(con, """
        SELECT j.job_id, j.state, j.exit_code, coalesce(j.end_ts, j.ts) AS end_ts, i.path, j.line
        FROM jobs j JOIN ingested_files i USING (file_id)
        WHERE list_contains(?, j.job_name) AND regexp_full_match(j.job_id, '\\d+')
        ORDER BY coalesce(j.start_ts, j.ts) DESC NULLS LAST LIMIT 1""", [names])
    if not rows.height:
        return None
    r = rows.row(0, named=True)
    if r["state"] != "COMPLETED" or r["exit_code"] != 0 or start is None or r["end_ts"] is None or r["end_ts"] < start:
        return None
    return f"its scheduler job {r['job_id']} ended COMPLETED with exit code 0 ({_where(r['path'], r['line'])})"

"""The live state of a watched run: last step per rank and host, step time against the baseline, goodput."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field

import duckdb
import polars as pl

from clusterlab import store
from clusterlab.account import attribution
from clusterlab.account.ledger import LedgerError

RECENT_STEPS = 5  # step intervals the current step time is the median of

# The run's current attempt: the newest one with step records (per-rank timings or the training log).
_ATTEMPT_SQL = """
    SELECT max(attempt) FROM (SELECT attempt FROM rank_steps WHERE run = $run
                              UNION ALL SELECT attempt FROM steps WHERE run = $run)"""

# Job progress of one attempt: the newest step and its time, the median seconds per step over the attempt
# (the baseline) and over its last few intervals (now). A step's time is its last rank's; a log that prints
# every N steps counts as N steps.
_PROGRESS_SQL = """
    WITH s AS (
        SELECT step, max(ts) AS ts FROM (
            SELECT step, ts FROM rank_steps WHERE run = $run AND attempt IS NOT DISTINCT FROM $attempt
            UNION ALL SELECT step, ts FROM steps WHERE run = $run AND attempt IS NOT DISTINCT FROM $attempt)
        WHERE step IS NOT NULL AND ts IS NOT NULL GROUP BY step),
    d AS (
        SELECT step, epoch(ts - lag(ts) OVER w) / nullif(step - lag(step) OVER w, 0) AS per_step
        FROM s WINDOW w AS (ORDER BY step))
    SELECT (SELECT max(step) FROM s) AS last_step, (SELECT max(ts) FROM s) AS last_ts,
           (SELECT median(per_step) FROM d WHERE per_step > 0) AS baseline_step_s,
           (SELECT median(per_step) FROM (SELECT per_step FROM d WHERE per_step > 0 ORDER BY step DESC
                                          LIMIT $recent)) AS recent_step_s,
           (SELECT count(*) FROM d WHERE per_step > 0) AS intervals"""

# Per rank of the attempt: its host, last step, the time of its last record and where that record is.
_RANKS_SQL = """
    SELECT r.rank, r.host, max(r.step) AS last_step, max(r.ts) AS last_ts,
           arg_max(f.path, r.ts) AS file, arg_max(r.line, r.ts) AS line
    FROM rank_steps r JOIN ingested_files f USING (file_id)
    WHERE r.run = $run AND r.attempt IS NOT DISTINCT FROM $attempt AND r.step IS NOT NULL
    GROUP BY r.rank, r.host ORDER BY r.rank"""

# The job's hosts: those its ranks ran on. NOTE: not `attempts.hosts`, which also holds every host whose kernel
# log was ingested under the run, the job's or not.
_HOSTS_SQL = """
    SELECT DISTINCT host FROM (
        SELECT host FROM rank_steps WHERE run = $run AND attempt IS NOT DISTINCT FROM $attempt
        UNION ALL SELECT host FROM steps WHERE run = $run AND attempt IS NOT DISTINCT FROM $attempt
        UNION ALL SELECT host FROM nccl_ranks WHERE run = $run AND attempt IS NOT DISTINCT FROM $attempt)
    WHERE host IS NOT NULL ORDER BY host"""


@dataclass
class LiveState:
    """What a watch knows of one run after a tick (`to_dict()` is what `watch_state` keeps)."""

    run: str
    attempt: int | None = None
    last_step: int | None = None
    last_step_ts: dt.datetime | None = None  # the newest step record's own time (the log's clock)
    # When the step last grew, on the watch's clock: the newest record's own time where it falls between the
    # tick that saw the growth and the one before (host clocks may be off), else the seeing tick's time.
    progress_seen_at: dt.datetime | None = None
    seen_at: dt.datetime | None = None  # the tick this state is of
    baseline_step_s: float | None = None
    recent_step_s: float | None = None
    intervals: int = 0  # step intervals the baseline is the median of
    hosts: list[str] = field(default_factory=list)
    ranks: pl.DataFrame = field(default_factory=pl.DataFrame)  # rank, host, last_step, last_ts, file, line
    goodput: float | None = None  # productive GPU-hours / GPU-hours so far (= ETTR over the run's span)
    ledger: dict[str, float] = field(default_factory=dict)  # category -> GPU-hours so far
    slow_since_step: int | None = None  # the step a slowdown under way began at (None: none)

    @property
    def rate_ratio(self) -> float | None:
        """Current step rate / baseline step rate (1.0: at the baseline; 0.5: half as fast)."""
        if not self.baseline_step_s or not self.recent_step_s:
            return None
        return self.baseline_step_s / self.recent_step_s

    def to_dict(self) -> dict:
        return {"run": self.run, "attempt": self.attempt, "last_step": self.last_step,
                "last_step_ts": _iso(self.last_step_ts), "progress_seen_at": _iso(self.progress_seen_at),
                "baseline_step_s": self.baseline_step_s, "recent_step_s": self.recent_step_s,
                "rate_ratio": self.rate_ratio, "hosts": self.hosts, "goodput": self.goodput, "ledger": self.ledger,
                "slow_since_step": self.slow_since_step,
                "ranks": [{k: _iso(v) for k, v in r.items()} for r in self.ranks.to_dicts()]}


def _iso(v):
    return v.isoformat() if isinstance(v, dt.datetime) else v


def read_state(con: duckdb.DuckDBPyConnection, run: str, previous: LiveState | None,
               now: dt.datetime, with_ledger: bool = True) -> LiveState:
    """The run's state from the store; `previous` carries when progress was last seen across ticks."""
    attempt = con.execute(_ATTEMPT_SQL, {"run": run}).fetchall()[0][0]
    args = {"run": run, "attempt": attempt}
    last_step, last_ts, base, recent, n = con.execute(_PROGRESS_SQL, {**args, "recent": RECENT_STEPS}).fetchall()[0]
    st = LiveState(run=run, attempt=attempt, last_step=last_step, last_step_ts=last_ts, baseline_step_s=base,
                   recent_step_s=recent, intervals=n or 0)
    st.ranks = store.frame(con, _RANKS_SQL, args)
    st.hosts = [r[0] for r in con.execute(_HOSTS_SQL, args).fetchall()]
    st.seen_at = now
    grew = previous is None or (previous.attempt, previous.last_step) != (attempt, last_step)
    if grew and previous is not None and previous.seen_at is not None and last_ts is not None:
        st.progress_seen_at = min(max(last_ts, previous.seen_at), now)
    elif grew or previous.progress_seen_at is None:
        st.progress_seen_at = now
    else:
        st.progress_seen_at = previous.progress_seen_at
    st.slow_since_step = previous.slow_since_step if previous and previous.attempt == attempt else None
    if with_ledger:
        st.goodput, st.ledger = _goodput(con, run)
    elif previous is not None:  # not recomputed this tick: the last figures stand
        st.goodput, st.ledger = previous.goodput, previous.ledger
    return st


def _goodput(con: duckdb.DuckDBPyConnection, run: str) -> tuple[float | None, dict[str, float]]:
    """Productive share of the GPU-hours so far and the running ledger (None, {}: not enough evidence yet)."""
    try:
        a = attribution.attribute(con, run)
    except (LedgerError, KeyError):  # no attempt with times yet, or a ledger that does not add up mid-write
        return None, {}
    led = {r["category"]: r["gpu_hours"] for r in a.ledger.iter_rows(named=True)}
    return (led.get("productive", 0.0) / a.gpu_hours if a.gpu_hours else None), led


def save_state(con: duckdb.DuckDBPyConnection, st: LiveState, now: dt.datetime) -> None:
    """Keep the state in `watch_state` (inside the tick's transaction)."""
    con.execute("DELETE FROM watch_state WHERE run = ?", [st.run])
    con.execute("INSERT INTO watch_state VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [st.run, now, st.attempt, st.last_step, st.progress_seen_at, st.baseline_step_s, st.recent_step_s,
                 st.goodput, json.dumps(st.to_dict())])


def load_state(con: duckdb.DuckDBPyConnection, run: str) -> LiveState | None:
    """The state a previous watch of this run left (None: never watched)."""
    rows = con.execute("SELECT attempt, last_step, progress_seen_at, state_json, updated_at FROM watch_state WHERE "
                       "run = ?",
                       [run]).fetchall()
    if not rows:
        return None
    row = rows[0]
    saved = json.loads(row[3] or "{}")
    return LiveState(run=run, attempt=row[0], last_step=row[1], progress_seen_at=row[2], seen_at=row[4],
                     slow_since_step=saved.get("slow_since_step"))

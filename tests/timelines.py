"""Write synthetic evidence rows straight into a store, for analysis tests that need exact timelines."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import duckdb
import polars as pl

from clusterlab import store
from clusterlab.ingest import attempts

T0 = dt.datetime(2026, 11, 24, 8, 0, 0)


@dataclass
class Attempt:
    start_s: float  # seconds after T0 of the attempt's first log line
    startup_s: float  # until its first step begins
    step_s: list[float]  # one per step
    first_step: int = 1
    tail_s: float = 0.0  # last step end → last log line
    saves: dict[int, float] = field(default_factory=dict)  # step → save duration (after that step)
    load_step: int | None = None
    hosts: list[str] = field(default_factory=lambda: ["h-001", "h-002"])
    lr: float | None = None  # the learning rate its step lines print, where given

    @property
    def end_s(self) -> float:
        return self.start_s + self.startup_s + sum(self.step_s) + sum(self.saves.values()) + self.tail_s


_file_ids = iter(range(1_000, 10**9))


def _file(con: duckdb.DuckDBPyConnection, run: str, attempt: int, name: str) -> int:
    fid = next(_file_ids)
    con.execute("INSERT INTO ingested_files (file_id, path, run, attempt) VALUES (?, ?, ?, ?)",
                [fid, f"/synthetic/{run}/attempt-{attempt}/{name}", run, attempt])
    return fid


def _insert(con: duckdb.DuckDBPyConnection, table: str, rows: list[dict]) -> None:
    if not rows:
        return
    schema = store.evidence_schema(table)
    frame = pl.DataFrame(rows).select([pl.col(c).cast(t) if c in rows[0] else pl.lit(None, t).alias(c)
                                       for c, t in schema.items()])
    con.register("_rows", frame.to_arrow())
    con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _rows")
    con.unregister("_rows")


def write_run(con: duckdb.DuckDBPyConnection, run: str, gpus: int, plan: list[Attempt],
              cluster: str = "c1") -> None:
    """One step record per step from rank 0, saves and loads, and a start line per attempt."""
    con.execute("INSERT OR REPLACE INTO runs (run, cluster, gpus) VALUES (?, ?, ?)", [run, cluster, gpus])
    for k, a in enumerate(plan, start=1):
        fid = _file(con, run, k, "train.log")
        line = iter(range(1, 10**9))
        base = dict(file_id=fid, source="synthetic", run=run, attempt=k)
        t = T0 + dt.timedelta(seconds=a.start_s)
        _insert(con, "facts", [{**base, "line": next(line), "ts": t, "host": a.hosts[0], "key": "start",
                                "value": "x"}])
        t += dt.timedelta(seconds=a.startup_s)
        if a.load_step is not None:
            _insert(con, "checkpoints", [{**base, "line": next(line), "ts": t, "action": "load",
                                          "step": a.load_step, "duration_s": 1.0, "ok": True}])
        steps, saves = [], []
        for i, s in enumerate(a.step_s):
            t += dt.timedelta(seconds=s)
            step = a.first_step + i
            steps.append({**base, "line": next(line), "ts": t, "host": a.hosts[0], "rank": 0, "step": step,
                          "step_s": s, **({"lr": a.lr} if a.lr is not None else {})})
            if step in a.saves:
                saves.append({**base, "line": next(line), "ts": t, "action": "save", "step": step,
                              "duration_s": a.saves[step], "ok": True})
                t += dt.timedelta(seconds=a.saves[step])
        _insert(con, "steps", steps)
        _insert(con, "checkpoints", saves)
        t += dt.timedelta(seconds=a.tail_s)
        _insert(con, "facts", [{**base, "line": next(line), "ts": t, "host": a.hosts[0], "key": "end",
                                "value": "x"}])
    attempts.refresh(con)


def write_events(con: duckdb.DuckDBPyConnection, rows: list[dict], run: str | None = None,
                 attempt: int | None = None, name: str = "events.log") -> None:
    """Evidence events (ts as seconds after T0); node-side ones have no run."""
    fid = _file(con, run or "nodes", attempt or 0, name)
    out = []
    for i, r in enumerate(rows, start=1):
        out.append({"file_id": fid, "source": r.pop("source", "kernel"), "run": run, "attempt": attempt,
                    "line": i, "severity": "error", "text": r.pop("text", "synthetic line"),
                    "ts": T0 + dt.timedelta(seconds=r.pop("t")), **r})
    _insert(con, "events", out)
    attempts.refresh(con)

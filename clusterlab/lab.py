"""`Lab`: the one object a notebook creates; its methods return polars frames."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import polars as pl

from clusterlab import store
from clusterlab.ingest import attempts as _attempts

if TYPE_CHECKING:
    from clusterlab.account import attribution
    from clusterlab.diagnose import incidents
    from clusterlab.ingest import driver as _ingest

# NOTE: the analysis (attribution, the diagnosis, the ingest driver) is imported by the method that uses it: a
# command line that only ingests, or only lists runs, would otherwise pay a third of a second importing the rest


def connect(path: str | os.PathLike | None = None, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection to a clusterlab database (created and migrated if needed)."""
    return store.connect(path, read_only=read_only)


def _as_datetime(day: dt.date | dt.datetime | None) -> dt.datetime | None:
    """Naive UTC midnight of a date (a datetime as given, an aware one in UTC)."""
    if day is None or (isinstance(day, dt.datetime) and day.tzinfo is None):
        return day
    if isinstance(day, dt.datetime):
        return day.astimezone(dt.UTC).replace(tzinfo=None)
    return dt.datetime(day.year, day.month, day.day)


class Lab:
    """A clusterlab database and the questions you can ask it."""

    def __init__(self, path: str | os.PathLike | None = None, read_only: bool = False,
                 lake: str | os.PathLike | None = None):
        """`lake`: a Parquet lake (`clusterlab.scale.lake`) to read instead of the database's own evidence; the
        database (in memory unless `path` is given) keeps what is written (annotations, relaunches)."""
        self.path = store.db_path(":memory:" if lake is not None and path is None else path)
        self.con = store.connect(self.path, read_only=read_only and self.path != ":memory:")
        self.lake = Path(lake) if lake is not None else None
        self.notes: list[str] = []  # what opening it found and did (the command line prints them)
        if self.lake is None and self.path != ":memory:" and _attempts.stale(self.con):
            self._rebuild_attempts(read_only)
        if self.lake is not None:
            from clusterlab.scale import lake as _lake

            try:
                _lake.attach(self.con, self.lake)
            except BaseException:
                self.con.close()
                raise

    def _rebuild_attempts(self, read_only: bool) -> None:
        """An ingest killed between storing its files and rebuilding the attempts left them stale: rebuilt here,
        through a writable connection for a moment where this one is read-only."""
        if read_only:
            if store.watch_pid(self.path) is not None:  # a reader never takes the file from a running watch
                self.notes.append("the attempts are older than the evidence; the watch writing to this database "
                                  "rebuilds them on its next tick")
                return
            self.con.close()
            try:
                rw = store.connect(self.path)
            except (duckdb.Error, RuntimeError, OSError):  # held by a writer (a watch): its next ingest rebuilds
                self.notes.append("the attempts are older than the evidence (an ingest was stopped before it "
                                  "rebuilt them); they are rebuilt by the next ingest")
            else:
                with rw:
                    _attempts.refresh(rw)
                self.notes.append("rebuilt the attempts an interrupted ingest left older than the evidence")
            finally:
                self.con = store.connect(self.path, read_only=True)
            return
        _attempts.refresh(self.con)
        self.notes.append("rebuilt the attempts an interrupted ingest left older than the evidence")

    def export_parquet(self, lake_dir: str | os.PathLike) -> dict[str, int]:
        """Write the store as a hive-partitioned Parquet lake (`clusterlab.scale.lake`); rows written per table."""
        from clusterlab.scale import lake as _lake

        return _lake.export(self.con, lake_dir)

    def __repr__(self) -> str:
        return f"Lab({self.path!r}, lake={str(self.lake)!r})" if self.lake else f"Lab({self.path!r})"

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def sql(self, query: str, params: list | None = None) -> pl.DataFrame:
        """Any SQL over the store, as a polars frame."""
        return store.frame(self.con, query, params)

    def ingest(
        self,
        *paths: str | Path,
        inventory: str | Path | None = None,
        run: str | None = None,
        host: str | None = None,
        year: int | None = None,
        progress: Callable[[int, int, str], None] | None = None,
        workers: int | None = None,
        epoch: dt.date | dt.datetime | None = None,
    ) -> _ingest.IngestSummary:
        """Ingest evidence files or bundle directories (idempotent; `workers` parsing processes, default the cores).

        `epoch`: day 0 (UTC) of files that count relative days, such as a fault trace's `event_time`."""
        if self.lake is not None:
            raise ValueError(f"{self.lake}: a lake is read here, not written; clusterlab.scale.spark_ingest adds to it")
        from clusterlab.ingest import driver as _ingest

        return _ingest.ingest(self.con, list(paths), inventory, run=run, host=host, year=year, progress=progress,
                              workers=workers, epoch=_as_datetime(epoch))

    def watch(self, run: str, paths: list[str | Path], interval: float = 5.0, *, ticks: int | None = None, **options):
        """Follow a running job's evidence (`clusterlab.watch.Watcher`): tick every `interval` s, `ticks` times
        (None: until interrupted); returns the Watcher, whose `.state` is the run's live state.

        A file database is let go of between ticks (other processes read it meanwhile), and opened again after.
        """
        from clusterlab.watch import Watcher

        in_memory = self.path == ":memory:"
        if not in_memory:
            self.con.close()
        try:
            w = Watcher(self.path, run, list(paths), con=self.con if in_memory else None, **options)
            w.run(interval=interval, max_ticks=ticks)
        except KeyboardInterrupt:  # a notebook's stop button: the state is in the store
            pass
        finally:
            if not in_memory:
                self.con = store.connect(self.path)
        return w

    def runs(self) -> pl.DataFrame:
        """One row per run: cluster, attempts, GPUs, first start, last end, wall hours."""
        return self.sql("""
            WITH a AS (
                SELECT run, count(*) AS attempts, min(start_ts) AS start_ts, max(end_ts) AS end_ts,
                       max(last_step) AS last_step, max(n_hosts) AS hosts
                FROM attempts GROUP BY run
            )
            SELECT coalesce(r.run, a.run) AS run, r.cluster, coalesce(a.attempts, 0) AS attempts,
                   r.gpus, a.hosts, a.start_ts, a.end_ts,
                   round(epoch(a.end_ts - a.start_ts) / 3600.0, 4) AS wall_hours, a.last_step
            FROM runs r FULL OUTER JOIN a USING (run)
            ORDER BY start_ts NULLS LAST, run
        """)

    def attempts(self, run: str | None = None) -> pl.DataFrame:
        """Attempts (launches) of runs, with their time span and step range."""
        where = "WHERE run = ?" if run else ""
        return self.sql(f"SELECT * FROM attempts {where} ORDER BY run, attempt", [run] if run else [])

    def spans(self, run: str) -> tuple[pl.DataFrame, list[str], pl.DataFrame]:
        """The attempts of `run` as the ledger divides them: each one's span (`start_ts`, `end_ts`), what gave it
        (`start_by`, `end_by`: a scheduler record or its logs), its evidence's own first and last line and the job
        it ran as; the sentences that say which overlapping evidence was reconciled; and each host's clock offset
        from the run's log (`attempt, host, offset_s`), where the step ends its ranks share measure it."""
        from clusterlab.diagnose import timeline

        spans = timeline.attempt_spans(self.con, run)
        if not spans.height:
            raise KeyError(f"run {run!r} has no attempts with times")
        spans, notes = timeline.disjoint_spans(spans)
        clocks = timeline.host_clocks(self.con, run).select("attempt", "host", offset_s=pl.col("corr_us") / 1e6)
        return spans, notes, clocks.sort("attempt", "host")

    def events(
        self,
        host: str | None = None,
        mode: str | None = None,
        run: str | None = None,
        kind: str | None = None,
        since: str | None = None,
        until: str | None = None,
    ) -> pl.DataFrame:
        """Parsed evidence lines, oldest first, with the file and line each came from."""
        conds, params = [], []
        for col, val in (("e.host", host), ("e.failure_mode", mode), ("e.run", run), ("e.kind", kind)):
            if val is not None:
                conds.append(f"{col} = ?")
                params.append(val)
        if since:
            conds.append("e.ts >= ?::TIMESTAMP")
            params.append(since)
        if until:
            conds.append("e.ts < ?::TIMESTAMP")
            params.append(until)
        where = ("WHERE " + " AND ".join(conds)) if conds else ""
        return self.sql(f"""
            SELECT e.ts, e.host, e.source, e.kind, e.failure_mode, e.severity, e.xid, e.rank,
                   e.run, e.attempt, f.path AS file, e.line, e.text
            FROM events e JOIN ingested_files f USING (file_id)
            {where} ORDER BY e.ts NULLS LAST, f.path, e.line
        """, params)

    def table(self, name: str) -> pl.DataFrame:
        """A whole store table (steps, rank_steps, checkpoints, nccl_ranks, jobs, facts, ...)."""
        allowed = {r[0] for r in self.con.execute(
            "SELECT table_name FROM information_schema.tables").fetchall()}
        if name not in allowed:
            raise KeyError(f"no table {name!r}; tables: {', '.join(sorted(allowed))}")
        return self.sql(f'SELECT * FROM "{name}"')

    def inventory(self) -> pl.DataFrame:
        """Every host known from the inventory or seen in evidence, with cluster and provider."""
        return self.sql("SELECT * FROM inventory ORDER BY provider, cluster, host")

    def attribute(self, run: str, settings: incidents.Settings | None = None) -> attribution.Attribution:
        """Incidents and the GPU-time ledger of one run (frames in `.rows`, `.ledger`, `.by(...)`)."""
        from clusterlab.account import attribution

        return attribution.attribute(self.con, run, settings)

    def what_if(self, run: str, policies: list | None = None, settings: incidents.Settings | None = None):
        """The run's ledger re-priced under other policies (`clusterlab.whatif.what_if.POLICIES`; all by default)."""
        from clusterlab.whatif.what_if import what_if

        return what_if(self.con, run, policies, settings)

    def steady_state(self, run: str, settings: incidents.Settings | None = None):
        """The peak-to-steady MFU gap split into exposed comm, data loading, compute below peak and idle."""
        from clusterlab.account.steady_state import breakdown

        return breakdown(self.con, run, self.attribute(run, settings).steady_mfu)

    def change(self, cluster: str, at, what: str, author: str | None = None) -> int:
        """Record a change made to a cluster at a time (UTC): a hot-fix, an upgrade, a node excluded."""
        from clusterlab.whatif.changes import add_change

        return add_change(self.con, cluster, at, what, author)

    def changes(self, cluster: str | None = None) -> pl.DataFrame:
        """The recorded changes (of one cluster), oldest first."""
        from clusterlab.whatif.changes import changes

        return changes(self.con, cluster)

    def compare(self, cluster: str, change: int | str):
        """The cluster before against after a change: failure rates by mode, MTBF, ETTR, steady MFU, with CIs."""
        from clusterlab.whatif.changes import compare

        return compare(self.con, cluster, change)

    def incidents(self, run: str | None = None, settings: incidents.Settings | None = None) -> pl.DataFrame:
        """One row per incident, root cause first; GPU-hours lost where the run's ledger can be built."""
        from clusterlab.account import attribution
        from clusterlab.account.ledger import LedgerError
        from clusterlab.diagnose import incidents

        s = settings or incidents.Settings()
        known = self.sql("SELECT DISTINCT run FROM attempts ORDER BY run")["run"].to_list()
        if run is not None and run not in known and not self.sql("SELECT 1 FROM runs WHERE run = ?", [run]).height:
            raise KeyError(f"no run {run!r} in the store; runs: {', '.join(known) or 'none'}")
        runs = [run] if run else known
        frames = []
        for r in runs:
            try:
                frames.append(self.attribute(r, s).incidents)
            except LedgerError:
                inc, _ = attribution.incidents_of(self.con, r, s)
                frames.append(inc)
        if not frames:
            return attribution.empty_incidents()
        out = pl.concat(frames, how="diagonal_relaxed")
        return attribution.complete_incidents(out).sort("root_ts", "incident_id")

    def unmatched(self, run: str | None = None, limit: int | None = 50) -> pl.DataFrame:
        """Trouble-looking lines no rule matched, by template, commonest first (`clusterlab.ingest.unmatched`)."""
        from clusterlab.ingest.unmatched import unmatched

        return unmatched(self.con, run, limit)

    def hosts(self, week: str | None = None) -> pl.DataFrame:
        """The fleet's memory (of an ISO week, `2026-W48`): each host's incidents across runs, GPU-hours lost, fault
        episodes, time in repair and jobs killed, costliest first (`clusterlab.account.fleet`)."""
        from clusterlab.account.fleet import fleet_memory
        from clusterlab.reports.hosts import costliest_hosts
        from clusterlab.reports.scorecard import week_bounds

        since, until = week_bounds(week) if week is not None else (None, None)
        return fleet_memory(self.con, costliest_hosts(self.incidents(), week), since, until)

    def episodes(self) -> pl.DataFrame:
        """Every host's fault episodes (a fault trace, an episode CSV, slurmctld's DOWN / DRAIN to RESUME)."""
        from clusterlab.account.fleet import episodes

        return episodes(self.con)

    def evidence(self, incident_id: str) -> pl.DataFrame:
        """The ranked evidence lines of one incident (root cause first), with file and line."""
        from clusterlab.account import attribution
        from clusterlab.account.ledger import LedgerError
        from clusterlab.diagnose import incidents
        from clusterlab.diagnose.root_cause import EVIDENCE_SCHEMA
        from clusterlab.reports.incident_report import runs_of

        ev = pl.DataFrame(schema=EVIDENCE_SCHEMA)
        for run in runs_of(self.con, incident_id):  # NOTE: not split on `:`, which a run's name may hold
            try:  # the ledger finds incidents of its own (a slowdown under NFS timeouts)
                ev = self.attribute(run).evidence
            except (LedgerError, KeyError):
                _, ev = attribution.incidents_of(self.con, run, incidents.Settings())
            ev = ev.filter(pl.col("incident_id") == incident_id)
            if ev.height:
                break
        return ev.sort("rank_in_incident")

    def annotate(self, incident_id: str, **fields) -> None:
        """Confirm or override an incident's failure_mode / host / blame; add a note, ticket, status.

        ValueError where there is no such incident. Over a lake without a database file it lasts as long as this
        Lab (a notebook's session)."""
        runs = [r for r in self.sql("SELECT DISTINCT run FROM attempts")["run"].to_list()
                if incident_id.startswith(f"{r}:")]
        ids = [] if not runs else self.incidents(max(runs, key=len))["incident_id"].to_list()
        if incident_id not in ids:
            raise ValueError(f"no incident {incident_id!r}" + (f"; {max(runs, key=len)} has {', '.join(ids)}"
                                                                if runs else "; no run in the store is named so"))
        from clusterlab.triage import annotations

        annotations.annotate(self.con, incident_id, **fields)

    def scorecard(self, week: str, providers: list[str] | None = None):
        """The weekly provider scorecard of an ISO week (`2026-W48`): frames per provider, cluster, run, host."""
        from clusterlab.reports import scorecard

        return scorecard(self.con, week, providers)

    def report(self, incident_id: str):
        """The exported report of one incident, as data; `clusterlab.reports.render` writes HTML or Markdown."""
        from clusterlab.reports import incident_report

        return incident_report(self.con, incident_id)

    def relaunch_plan(self, run: str, backend: str | None = None):
        """The dry-run relaunch plan of a run: hosts to exclude and drain, the verified checkpoint, the command."""
        from clusterlab.relaunch import relaunch_plan

        return relaunch_plan(self.con, run, backend=backend)

    def relaunch(self, plan, *, watch_s: float = 60.0, watch_dir: str | os.PathLike | None = None):
        """Execute a plan from `relaunch_plan`: drain, launch, watch its first steps, record an audit row.

        Idempotent per incident: a plan already executed launches nothing and says so.
        """
        from clusterlab.relaunch import execute

        return execute(self.con, plan, watch_s=watch_s, watch_dir=watch_dir)

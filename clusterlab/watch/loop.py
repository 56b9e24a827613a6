"""The watch loop: each tick re-ingests what grew, reads the live state, detects, records and alerts.

The database is held for writing only during a tick (open, ingest, detect, write, close): between ticks the
CLI, the notebook and the reports can open it, and while a tick writes they wait (store.connect retries while
`<db>.watching` names a live watch). Another process never sees half a tick: DuckDB's file lock keeps every
other process out until the tick's connection is closed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from clusterlab import store
from clusterlab.ingest.driver import IngestSummary, ingest
from clusterlab.ingest.reader import InputError
from clusterlab.watch.alerts import Alerter, to_json
from clusterlab.watch.detect import WatchSettings, detect
from clusterlab.watch.state import LiveState, load_state, read_state, save_state

LOCK_WAIT_S = 30.0  # a tick waits this long for readers to let go of the file before it skips itself
READER_GAP_S = 0.5  # the file is left free at least this long between two ticks
# NOTE: the ledger is a whole attribution of the run (seconds on a big run): worked out at most this often,
# so that a tick, and the time to a hang or failure alert, stays short
LEDGER_EVERY_S = 30.0


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


@dataclass
class TickResult:
    """What one tick did."""

    state: LiveState | None
    new: list[dict] = field(default_factory=list)  # detections seen for the first time, recorded
    alerted: list[dict] = field(default_factory=list)  # of those, the ones the rate limit let through
    ingest: IngestSummary | None = None
    missing: list[str] = field(default_factory=list)  # watched paths that do not exist (yet)
    held_s: float = 0.0  # how long the tick held the database
    skipped: str | None = None  # why the tick did nothing (the database was held by someone else)


class Watcher:
    """Follows one running job's evidence into a database (`tick()` once, `run()` until stopped)."""

    def __init__(self, db: str | os.PathLike | None, run: str, paths: list[str | Path], *,
                 settings: WatchSettings | None = None, alerter: Alerter | None = None,
                 con: duckdb.DuckDBPyConnection | None = None, with_ledger: bool = True,
                 ledger_every_s: float = LEDGER_EVERY_S,
                 after_tick: list[Callable[[duckdb.DuckDBPyConnection, TickResult], None]] | None = None,
                 after_close: list[Callable[[TickResult], None]] | None = None,
                 say: Callable[[str], None] = print) -> None:
        self.db = store.db_path(db) if con is None else None
        self.run_name, self.paths = run, [Path(p) for p in paths]
        self.settings = settings or WatchSettings()
        self.alerter = alerter or Alerter()
        self._con = con  # a connection of the caller's (in memory, a notebook's): used, never closed
        self.with_ledger, self.ledger_every_s = with_ledger, ledger_every_s
        self._ledger_at: dt.datetime | None = None
        self.after_tick, self.after_close = after_tick or [], after_close or []
        self.say = say
        self.state: LiveState | None = None
        self._missing_said: set[Path] = set()
        self._problems_said: dict[str, tuple[str, ...]] = {}  # file (or "" for the whole ingest) -> its last words

    @contextlib.contextmanager
    def _connection(self):
        if self._con is not None:
            yield self._con
            return
        con = store.connect(self.db, wait_s=LOCK_WAIT_S)
        try:
            yield con
        finally:
            con.close()

    def tick(self, now: dt.datetime | None = None) -> TickResult:
        """One pass: ingest what grew, update the state, record and alert what is new."""
        now = now or utcnow()
        present = [p for p in self.paths if p.exists()]
        res = TickResult(state=None, missing=[str(p) for p in self.paths if not p.exists()])
        for p in self.paths:
            if p.exists():
                self._missing_said.discard(p)
            elif p not in self._missing_said:  # a log that appears late: said once, looked for every tick
                self.say(f"watch: {p}: not there yet; looking again each tick")
                self._missing_said.add(p)
        t0 = time.monotonic()
        try:
            with self._connection() as con:
                t0 = time.monotonic()
                res.ingest = self._ingest(con, present)
                previous = self.state or load_state(con, self.run_name)
                fresh = self.state is None or res.ingest is None or any(res.ingest.rows.values())
                ledger = self.with_ledger and fresh and (
                    self._ledger_at is None or (now - self._ledger_at).total_seconds() >= self.ledger_every_s)
                st = read_state(con, self.run_name, previous, now, with_ledger=ledger)
                self._ledger_at = now if ledger else self._ledger_at
                found = detect(con, st, now, self.settings, fresh=fresh)
                con.execute("BEGIN")
                try:
                    res.new = record(con, found, now)
                    save_state(con, st, now)
                    con.execute("COMMIT")
                except BaseException:
                    con.execute("ROLLBACK")
                    raise
                outbox = unsent(con, self.run_name, res.new)
                res.state = self.state = st
                for hook in self.after_tick:
                    hook(con, res)
                res.held_s = time.monotonic() - t0
        except store.DatabaseLocked as e:
            res.skipped = f"{e}; tick skipped, trying again next tick"
            self.say(f"watch: {res.skipped}")
            return res
        res.alerted = self.alerter.send(outbox)
        if outbox:
            self._mark_sent(outbox, now)
        for hook in self.after_close:
            hook(res)
        return res

    def _mark_sent(self, events: list[dict], now: dt.datetime) -> None:
        """The outbox's events are out (sent, or held back by the rate limit on purpose): not sent again."""
        try:
            with self._connection() as con:
                con.execute("UPDATE watch_events SET sent_at = ? WHERE list_contains(?, event_key)",
                            [now, [e["key"] for e in events]])
        except (store.DatabaseLocked, duckdb.Error) as e:  # sent again by the next tick: at least once, never lost
            self.say(f"watch: could not mark {len(events)} alerts sent: {e}")

    def _ingest(self, con: duckdb.DuckDBPyConnection, present: list[Path]) -> IngestSummary | None:
        if not present:
            return None
        try:
            summary = ingest(con, present, run=self.run_name)
        except InputError as e:  # a file cut or replaced under us mid-read: the next tick reads it again
            self._tell("", [str(e)])
            return None
        self._tell("", summary.notes)
        for f in summary.files:
            # NOTE: an unchanged file is not read again and says nothing: what it said before still holds
            if f.messages or f.status != "unchanged":
                self._tell(f.display, f.messages)
        return summary

    def _tell(self, source: str, messages: list[str]) -> None:
        """Say what ingest reported about a file (an error, a gzip cut short, a line it could not read) once:
        a broken file read again every tick says it again only when what it says changes."""
        words = tuple(messages)
        before = self._problems_said.get(source, ())
        if not words:
            self._problems_said.pop(source, None)
            return
        if words != before:
            for msg in words:
                if msg not in before:
                    self.say(f"watch: {msg}")
            self._problems_said[source] = words

    def stopped_line(self) -> str:
        """The last line of a watch: where the run got to, or that none of its steps was seen."""
        st = self.state
        if st is None:
            return f"watch: stopped before a tick completed; nothing of run {self.run_name} was read"
        if st.last_step is None:
            return (f"watch: stopped; no step of run {self.run_name} seen in the watched paths (step records, or "
                    "a training log with step lines)")
        attempt = f" (attempt {st.attempt})" if st.attempt is not None else ""
        return f"watch: stopped; run {self.run_name} at step {st.last_step}{attempt}"

    def run(self, interval: float = 5.0, stop: threading.Event | None = None, max_ticks: int | None = None,
            on_tick: Callable[[TickResult], None] | None = None) -> None:
        """Tick every `interval` seconds until `stop` is set (SIGTERM in the CLI) or `max_ticks` ran."""
        stop = stop or threading.Event()
        mark = Path(self.db + store.WATCH_MARK) if self.db and self.db != ":memory:" else None
        if mark:
            mark.write_text(f"{os.getpid()}\n")
        try:
            n = 0
            while not stop.is_set():
                started = time.monotonic()
                try:
                    res = self.tick()
                except (duckdb.Error, OSError) as e:  # a file or the database in trouble this once: said, retried
                    self.say(f"watch: tick failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
                    res = TickResult(state=self.state, skipped=str(e))
                if on_tick:
                    on_tick(res)
                n += 1
                if max_ticks is not None and n >= max_ticks:
                    break
                # NOTE: at least READER_GAP_S between ticks, so that readers waiting for the file get their turn
                stop.wait(max(READER_GAP_S, interval - (time.monotonic() - started)))
        finally:
            if mark and store.watch_pid(self.db) == os.getpid():
                mark.unlink(missing_ok=True)


def unsent(con: duckdb.DuckDBPyConnection, run: str, new: list[dict]) -> list[dict]:
    """The outbox: this tick's new detections, after any a watch saved and was stopped before it alerted."""
    mine = {e["key"] for e in new}
    left = [json.loads(r[0]) for r in con.execute(
        """SELECT event_json FROM watch_events WHERE sent_at IS NULL AND (run = ? OR run IS NULL)
           ORDER BY detected_at, event_key""", [run]).fetchall()]
    return [e for e in left if e.get("key") not in mine] + new


def record(con: duckdb.DuckDBPyConnection, found: list[dict], now: dt.datetime) -> list[dict]:
    """Store the detections not seen before (by key); returns them in order."""
    fresh = list({e["key"]: e for e in found}.values())
    if not fresh:
        return []
    known = {r[0] for r in con.execute("SELECT event_key FROM watch_events WHERE event_key IN (SELECT unnest(?))",
                                       [[e["key"] for e in fresh]]).fetchall()}
    new = [e | {"detected_at": now} for e in fresh if e["key"] not in known]
    if not new:
        return []
    con.executemany("""INSERT INTO watch_events (event_key, run, attempt, kind, detected_at, evidence_ts, host,
                       failure_mode, incident_id, message, event_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                    [[e["key"], e["run"], e["attempt"], e["kind"], now, e["evidence_ts"], e["host"],
                      e["failure_mode"], e["incident_id"], e["message"], to_json(e)] for e in new])
    return new

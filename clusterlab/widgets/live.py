"""`Explorer.live(db, run)`: the Explorer on a database a `clusterlab watch` writes to, refreshed on demand.

A notebook that kept the watched database open would hold the watch off (DuckDB lets one process write, and
only while no other has the file open). So the live Explorer reads a snapshot: a copy of the file taken
while a read-only connection holds the watch off between two of its ticks (a whole tick, never half of one),
opened read-only, and taken again on each refresh. The watch waits at most the copy's time.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import ipywidgets as w
import polars as pl

from clusterlab import store
from clusterlab.lab import Lab
from clusterlab.widgets import html

EVENTS_SHOWN = 10  # the newest detections the panel lists


def snapshot(db: str, into: Path) -> Path:
    """A consistent copy of `db` at `into`: copied while a read-only connection keeps writers out."""
    con = store.connect(db, read_only=True)  # waits out a tick under way
    try:
        shutil.copyfile(db, into)
        if Path(db + ".wal").exists():  # what a killed writer left: DuckDB replays it on open
            shutil.copyfile(db + ".wal", str(into) + ".wal")
    finally:
        con.close()
    return into


class LiveExplorer(w.VBox):
    """The watch's live state and newest detections over the Explorer, both of one snapshot; `refresh()` again."""

    def __init__(self, db: str, run: str | None, view: Callable[..., w.Widget]):
        """`view(lab, run=...)` draws each snapshot: `Explorer.live` passes the Explorer class, so this module
        imports nothing of `explorer` and the two make no circle."""
        super().__init__()
        self.db, self.run, self._view = str(db), run, view
        self._dir = Path(tempfile.mkdtemp(prefix="clusterlab-live-"))
        self._n = itertools.count(1)
        self.lab: Lab | None = None
        self.explorer: w.Widget | None = None
        self.state_frame = self.events_frame = pl.DataFrame()
        self.state_view, self.events_view = w.HTML(), w.HTML()
        self.refresh_button = w.Button(description="Refresh", icon="refresh", layout=w.Layout(width="auto"))
        self.refresh_button.on_click(lambda _: self.refresh())
        self.refresh()

    def refresh(self) -> None:
        """Take a new snapshot and show it (the run and view the Explorer had stay selected)."""
        path = snapshot(self.db, self._dir / f"snapshot-{next(self._n)}.duckdb")
        old, self.lab = self.lab, Lab(path, read_only=True)
        run = self.explorer.run.value if self.explorer is not None else self.run
        has_watch = self.lab.sql("SELECT count(*) AS n FROM information_schema.tables "
                                 "WHERE table_name = 'watch_state'")["n"][0]
        if has_watch:
            self.state_frame = self.lab.sql("""SELECT run, updated_at, attempt, last_step, progress_seen_at,
                                                      baseline_step_s, recent_step_s, goodput FROM watch_state
                                               ORDER BY run""")
            self.events_frame = self.lab.sql(f"""SELECT detected_at, kind, run, host, message FROM watch_events
                                                 ORDER BY detected_at DESC LIMIT {EVENTS_SHOWN}""")
        self.state_view.value = (html.table(self.state_frame) if self.state_frame.height
                                 else html.note("no watch has written to this database yet"))
        self.events_view.value = html.table(self.events_frame, wrap=("message",)) if self.events_frame.height else ""
        self.explorer = self._view(self.lab, run=run)
        self.children = [w.HBox([w.HTML(f"<b>live: {html.esc(self.db)}</b>"), self.refresh_button]),
                         self.state_view, self.events_view, self.explorer]
        if old is not None:
            old_path = Path(old.path)
            old.close()
            old_path.unlink(missing_ok=True)
            Path(str(old_path) + ".wal").unlink(missing_ok=True)

    def close(self) -> None:
        """Close the snapshot and remove its files."""
        if self.lab is not None:
            self.lab.close()
        shutil.rmtree(self._dir, ignore_errors=True)
        super().close()

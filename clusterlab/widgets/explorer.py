"""`Explorer(lab)`: one run at a time — ledger, incidents, timeline, evidence, host history, review."""

from __future__ import annotations

import datetime as dt
import io
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field

import ipywidgets as w
import polars as pl

from clusterlab import taxonomy
from clusterlab.account import attribution, fleet, offenders
from clusterlab.account.attribution import Attribution
from clusterlab.account.ledger import LedgerError
from clusterlab.diagnose import incidents
from clusterlab.plots import charts as plots
from clusterlab.plots import telemetry as telemetry_plot
from clusterlab.widgets import frames, html

ALL = "(all)"
DPI = 80  # small PNGs: a re-render stays well under a second for a 1,024-node run
FIGURES_KEPT = 32  # drawn figures kept per run (two per time range viewed)
HEATMAP = "Loss heatmap"  # lost GPU-hours by host × day
# NOTE: a tab is 144 px wide in JupyterLab and cuts a longer title ("Lost by host × da"): 14 characters at most
TABS = ("Evidence", "Host history", "Review", "Step times", HEATMAP, "Providers", "Relaunch", "What-if")


@dataclass
class RunData:
    """What the Explorer keeps per run, computed once: attribution, attempts, checkpoints, incidents."""

    attribution: Attribution | None
    note: str | None
    attempts: pl.DataFrame
    checkpoints: pl.DataFrame
    incidents: pl.DataFrame
    evidence: pl.DataFrame | None
    # PNGs already drawn for a time range of this run: going back to a run or a range costs nothing. They go
    # with this object, which a review of one of the run's incidents replaces.
    figures: dict[tuple, bytes] = field(default_factory=dict)

    def figure(self, key: tuple, draw: Callable[[], bytes]) -> bytes:
        if key not in self.figures:
            if len(self.figures) >= FIGURES_KEPT:
                self.figures.pop(next(iter(self.figures)))
            self.figures[key] = draw()
        return self.figures[key]


def figure(draw: Callable, size: tuple[float, float], margins: tuple[float, float, float, float] | None = None):
    """A figure drawn by `draw(ax)`, without pyplot (nothing leaks into the notebook).

    `margins` (left, right, bottom, top, in inches) fixes the axes' place; without them matplotlib's
    constrained layout finds it, which measures every text first and costs about as much as drawing."""
    from matplotlib.figure import Figure

    if margins is None:
        fig = Figure(figsize=size, dpi=DPI, layout="constrained")
    else:
        (w, h), (left, right, bottom, top) = size, margins
        fig = Figure(figsize=size, dpi=DPI)
        fig.subplots_adjust(left=left / w, right=1 - right / w, bottom=bottom / h, top=1 - top / h)
    draw(fig.subplots())
    return fig


def png(draw: Callable, size: tuple[float, float], margins: tuple[float, float, float, float] | None = None) -> bytes:
    """`figure(draw, size, margins)` as PNG bytes."""
    buf = io.BytesIO()
    # NOTE: zlib's fastest level: a third of the encoding time for PNGs a few kB larger
    figure(draw, size, margins).savefig(buf, format="png", pil_kwargs={"compress_level": 1})
    return buf.getvalue()


# Fixed margins (inches) of the two figures every run switch and time range redraws: their labels are
# known (ledger categories, "attempt N", a three-entry legend), so the layout need not be measured.
# tests/test_figure_layout.py checks that nothing overlaps or is cut at these sizes.
LEDGER_SIZE, LEDGER_MARGINS = (6.0, 3.6), (1.75, 0.15, 0.5, 0.3)
TIMELINE_MARGINS = (0.85, 0.95, 0.62, 0.3)


def timeline_size(attempts: int) -> tuple[float, float]:
    return 7.5, min(1.8 + 0.45 * attempts, 9)


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v * 100:.1f}%"


def _image() -> w.Image:
    return w.Image(format="png", layout=w.Layout(max_width="100%", height="auto"))


class Explorer(w.VBox):
    """Pick provider / cluster / run / time range; the ledger, incidents table and timeline follow."""

    def __init__(self, lab, run: str | None = None):
        super().__init__()
        self.lab = lab
        self.render_s: dict[str, float] = {}  # how long each view last took to render
        self._runs: dict[str, RunData] = {}
        self._fleet: pl.DataFrame | None = None
        self._quiet = False
        self._dirty: set[str] = {"Providers"}
        self.attribution: Attribution | None = None
        self.ledger_frame = self.incidents_frame = self.evidence_frame = pl.DataFrame()
        self.host_frame = self.host_events_frame = self.step_stats_frame = pl.DataFrame()
        # the selected host's record across runs (incidents and fault episodes) and its fleet-memory totals
        self.host_history_frame = self.host_memory_frame = self.host_rule_frame = pl.DataFrame()
        self.step_series_frame = pl.DataFrame()
        self.heatmap_frame = self.mix_frame = self.rejected_frame = pl.DataFrame()
        self.relaunch_panel = None
        self.last_error: Exception | None = None  # what the error box reports, with its traceback
        self.runs_frame = self._runs_frame()
        self._build()
        self._safely(f"run {run or self.run.value}", lambda: self._first_view(run))

    @staticmethod
    def live(db: str, run: str | None = None):
        """The Explorer of a database a `clusterlab watch` writes to, on snapshots (`clusterlab.widgets.live`)."""
        from clusterlab.widgets.live import LiveExplorer

        return LiveExplorer(db, run, view=Explorer)

    def _first_view(self, run: str | None) -> None:
        if run is not None:
            with self._hold():
                self.select_run(run)
        self._load_run()

    # ---- layout -------------------------------------------------------------------------------
    def _build(self) -> None:
        """Create the controls and views and wire the selectors to what depends on them."""
        dd = {"layout": w.Layout(width="260px"), "style": {"description_width": "60px"}}
        providers = sorted(self.runs_frame["provider"].unique().to_list())
        self.provider = w.Dropdown(options=[ALL, *providers], description="provider", **dd)
        self.cluster = w.Dropdown(options=self._clusters(ALL), description="cluster", **dd)
        self.run = w.Dropdown(options=self._run_names(ALL, ALL), description="run", **dd)
        # NOTE: the slider's own readout is too narrow for two timestamps; a label beside it shows them
        self.window = w.SelectionRangeSlider(options=[("-", None)], description="time", continuous_update=False,
                                             readout=False, layout=w.Layout(width="520px"),
                                             style={"description_width": "60px"})
        self.window_label = w.HTML()
        self.incident = w.Dropdown(description="incident", layout=w.Layout(width="560px"),
                                   style={"description_width": "60px"})
        self.host = w.Dropdown(description="host", **dd)
        self.summary, self.incidents_html, self.error = w.HTML(), html.scrolling(), w.HTML()
        self.ledger_image, self.timeline_image = _image(), _image()
        self.evidence_html, self.host_html = html.scrolling(), html.scrolling()
        self.steps_image, self.heatmap_image, self.mix_image = _image(), _image(), _image()
        self.steps_series_image = _image()
        self.relaunch_box = w.VBox(layout=w.Layout(width="100%"))
        self.what_if_box = w.VBox(layout=w.Layout(width="100%"))  # clusterlab.widgets.what_if
        self.review = self._review_form()
        self.tabs = w.Tab(children=[self.evidence_html, self.host_html, self.review,
                                    w.VBox([self.steps_series_image, self.steps_image]),
                                    self.heatmap_image, self.mix_image, self.relaunch_box, self.what_if_box],
                              titles=TABS)
        self.provider.observe(lambda _: self._safely("the provider filter", self._on_provider), "value")
        self.cluster.observe(lambda _: self._safely("the cluster filter", self._on_cluster), "value")
        self.run.observe(lambda _: self._quiet or self._safely(f"run {self.run.value}", self._load_run), "value")
        self.window.observe(lambda _: self._quiet or self._safely("the time range", self._render_run), "value")
        self.incident.observe(lambda _: self._quiet or self._safely(f"incident {self.incident.value}",
                                                                     self._show_incident), "value")
        self.host.observe(lambda _: self._quiet or self._safely(f"host {self.host.value}", self._show_host), "value")
        self.tabs.observe(lambda _: self._safely("this tab", self._render_tab), "selected_index")
        self.children = [
            w.HBox([self.provider, self.cluster, self.run]), w.HBox([self.window, self.window_label]), self.error,
            self.summary,
            # side by side where there is room, one under the other where there is not: never cut off
            w.HBox([self.ledger_image, self.timeline_image], layout=w.Layout(flex_flow="row wrap")),
            w.HTML("<b>Incidents</b> (costliest first)"),
            self.incidents_html, w.HBox([self.incident, self.host]), self.tabs]

    def _review_form(self) -> w.VBox:
        """Confirm or correct the selected incident: mode, host, note, ticket, status."""
        self.review_mode = w.Dropdown(options=list(taxonomy.MODES), description="mode")
        self.review_host = w.Combobox(options=self.lab.inventory()["host"].to_list(), description="host",
                                      ensure_option=False)
        self.review_note = w.Text(description="note", layout=w.Layout(width="560px"))
        self.review_ticket = w.Text(description="ticket")
        self.review_status = w.Dropdown(options=["open", "with_provider", "resolved"], description="status")
        # NOTE: a button's default width is fixed and cuts a longer label with an ellipsis
        fit = {"layout": w.Layout(width="auto", min_width="150px")}
        self.confirm_button = w.Button(description="Confirm as detected", button_style="success", **fit)
        self.save_button = w.Button(description="Save correction", button_style="warning", **fit)
        self.review_message = w.HTML()
        self.confirm_button.on_click(lambda _: self._safely("the review", self.confirm))
        self.save_button.on_click(lambda _: self._safely("the review", self.correct))
        return w.VBox([w.HBox([self.review_mode, self.review_host]), self.review_note,
                       w.HBox([self.review_ticket, self.review_status]),
                       w.HBox([self.confirm_button, self.save_button]), self.review_message])

    def _safely(self, what: str, update: Callable[[], None]) -> None:
        """Run a view update; an error is shown in the widget as one line, and every view is cleared."""
        try:
            update()
        except Exception as e:  # NOTE: ipywidgets drops a callback's error: the last run's figures would stay
            self._fail(what, e)

    def _fail(self, what: str, e: Exception) -> None:
        """Say what could not be shown and why; clear every figure and table (never leave stale data)."""
        self.last_error = e
        lines = str(e).strip().splitlines()
        self.error.value = html.error(f"could not show {what}: {type(e).__name__}: {(lines or [''])[0][:300]}")
        for image in (self.ledger_image, self.timeline_image, self.steps_image, self.steps_series_image,
                      self.heatmap_image, self.mix_image):
            image.value = b""
        for view in (self.summary, self.incidents_html, self.evidence_html, self.host_html, self.window_label):
            view.value = ""
        self.attribution, self.relaunch_box.children, self.what_if_box.children = None, [], []
        self.ledger_frame = self.incidents_frame = self.evidence_frame = self.rejected_frame = pl.DataFrame()
        self.host_frame = self.host_events_frame = self.step_stats_frame = pl.DataFrame()
        self.host_history_frame = self.host_memory_frame = self.host_rule_frame = pl.DataFrame()
        self.step_series_frame = pl.DataFrame()
        self.heatmap_frame = self.mix_frame = pl.DataFrame()
        self._dirty = {"Step times", HEATMAP, "Providers", "Relaunch", "What-if"}
        with self._hold():
            self.incident.options, self.host.options = [], []

    @contextmanager
    def _hold(self):
        """Change selectors without each change re-rendering what depends on it."""
        was, self._quiet = self._quiet, True
        try:
            yield
        finally:
            self._quiet = was

    # ---- selectors ----------------------------------------------------------------------------
    def _runs_frame(self) -> pl.DataFrame:
        """Runs with their cluster and provider (`(none)` where the inventory does not say)."""
        runs = self.lab.runs().select("run", "cluster", "start_ts", "end_ts", "gpus")
        cl = self.lab.sql("SELECT cluster, provider FROM clusters")
        return runs.join(cl, on="cluster", how="left").with_columns(
            pl.col("cluster").fill_null("(none)"), pl.col("provider").fill_null("(none)"))

    def _clusters(self, provider: str) -> list[str]:
        f = self.runs_frame if provider == ALL else self.runs_frame.filter(pl.col("provider") == provider)
        return [ALL, *sorted(f["cluster"].unique().to_list())]

    def _run_names(self, provider: str, cluster: str) -> list[str]:
        f = self.runs_frame
        if provider != ALL:
            f = f.filter(pl.col("provider") == provider)
        if cluster != ALL:
            f = f.filter(pl.col("cluster") == cluster)
        return f["run"].to_list()

    def _on_provider(self, _=None) -> None:
        with self._hold():
            self.cluster.options = self._clusters(self.provider.value)
            self.cluster.value = ALL
        self._on_cluster()

    def _on_cluster(self, _=None) -> None:
        if self._quiet:
            return
        before = self.run.value
        with self._hold():
            names = self._run_names(self.provider.value, self.cluster.value)
            self.run.options = names
            self.run.value = before if before in names else (names[0] if names else None)
        if self.run.value != before:
            self._load_run()
        self._dirty.add("Providers")
        self._render_tab()

    def select_run(self, run: str) -> None:
        """Show `run`, widening the provider and cluster filters if they hide it."""
        if run not in self.run.options:
            with self._hold():
                self.provider.value, self.cluster.options = ALL, self._clusters(ALL)
                self.cluster.value, self.run.options = ALL, self._run_names(ALL, ALL)
        self.run.value = run

    # ---- per-run data (cached) ----------------------------------------------------------------
    def data(self, run: str) -> RunData:
        """The run's attribution and frames, computed on first use and kept."""
        if run not in self._runs:
            attempts = self.lab.attempts(run)
            ck = self.lab.sql("SELECT attempt, ts, action, step, ok FROM checkpoints WHERE run = ? ORDER BY ts",
                              [run])
            try:
                a = self.lab.attribute(run)
                self._runs[run] = RunData(a, None, attempts, ck, a.incidents, a.evidence)
            except (LedgerError, KeyError, ValueError) as e:  # the ledger cannot be built: show incidents alone
                why = str(e.args[0] if e.args else e).strip().splitlines() or ["unknown"]
                self._runs[run] = RunData(None, f"no GPU-time ledger for {run}: {why[0]}", attempts, ck,
                                          self.lab.incidents(run), None)
        return self._runs[run]

    def fleet_incidents(self) -> pl.DataFrame:
        """Incidents of every run (for host histories), without the per-run ledger's cost."""
        if self._fleet is None:
            self._fleet, _ = attribution.incidents_of(self.lab.con, None, incidents.Settings())
            costs = pl.concat([d.incidents.select("incident_id", "gpu_hours_lost") for d in self._runs.values()
                               if "gpu_hours_lost" in d.incidents.columns], how="diagonal_relaxed") \
                if self._runs else pl.DataFrame(schema={"incident_id": pl.String, "gpu_hours_lost": pl.Float64})
            self._fleet = self._fleet.join(costs, on="incident_id", how="left")
        return self._fleet

    def window_range(self) -> tuple[dt.datetime | None, dt.datetime | None]:
        """The selected time range."""
        lo, hi = self.window.value
        return lo, hi

    # ---- rendering ----------------------------------------------------------------------------
    def _load_run(self) -> None:
        """A new run: reset the time range to its whole span, then render."""
        run = self.run.value
        if run is None:
            self.summary.value = html.note("no runs match these filters")
            return
        att = self.data(run).attempts
        with self._hold():
            if att.height:
                marks = frames.time_marks(att["start_ts"].min(), att["end_ts"].max())
                self.window.options = [(m.strftime("%m-%d %H:%M"), m) for m in marks]
                self.window.index = (0, len(marks) - 1)
        self._render_run()

    def _render_run(self) -> None:
        """Ledger, incidents table and timeline for the run and range; mark the other tabs stale."""
        t0 = time.perf_counter()
        run, d = self.run.value, self.data(self.run.value)
        since, until = self.window_range()
        self.window_label.value = html.note(f"{html.esc(since)} → {html.esc(until)}" if since else "")
        self.attribution = (frames.window_attribution(d.attribution, d.attempts, since, until)
                            if d.attribution is not None else None)
        a = self.attribution
        self.ledger_frame = a.ledger if a is not None else pl.DataFrame()
        inc = frames.overlapping(d.incidents, "root_ts", "exit_ts", since, until)
        self.incidents_frame = frames.incident_view(inc)
        self.summary.value = self._summary(run, d)
        def waterfall(ax):
            return plots.ledger_waterfall(a.ledger, a.steady_mfu, a.gpu_hours, a.run, ax=ax)

        self.ledger_image.value = (d.figure(("ledger", since, until),
                                            lambda: png(waterfall, LEDGER_SIZE, LEDGER_MARGINS)) if a else b"")
        win = (since, until) if since is not None else None
        self.timeline_image.value = d.figure(("timeline", since, until), lambda: png(
            lambda ax: plots.run_timeline(d.attempts, inc, d.checkpoints, ax=ax, window=win),
            timeline_size(d.attempts.height), TIMELINE_MARGINS))
        self._set_incidents()
        with self._hold():
            hosts = frames.run_hosts(d.attempts, inc)
            keep = self.host.value if self.host.value in hosts else None
            self.host.options = hosts
            self.host.value = keep or (hosts[0] if hosts else None)
        self._show_incident()
        self._dirty = {"Step times", HEATMAP, "Relaunch", "What-if"} | (self._dirty & {"Providers"})
        self._render_tab()
        self.error.value = ""  # the whole view is the new run's: an earlier error no longer applies
        self.render_s["run"] = time.perf_counter() - t0

    def _summary(self, run: str, d: RunData) -> str:
        """One line of the run's headline figures."""
        a = self.attribution
        if a is None:  # what there is, and in one line why there is no ledger
            return (html.facts([("run", run), ("attempts", d.attempts.height),
                                ("incidents", self.incidents_frame.height)])
                    + html.note(d.note or "no GPU-time ledger", warn=True))
        lost = float(a.rows.filter(pl.col("category") != "productive")["usd"].sum() or 0.0)
        facts = html.facts([("run", run), ("GPUs", a.gpus), ("wall", f"{a.wall_hours:.2f} h"),
                            ("GPU-hours", f"{a.gpu_hours:,.1f}"), ("steady MFU", _pct(a.steady_mfu)),
                            ("effective MFU", _pct(a.effective_mfu)), ("lost", f"${lost:,.0f}"),
                            ("incidents", self.incidents_frame.height)])
        # what the ledger had to reconcile: host clocks off the log's, attempts whose evidence overlapped
        said = [n for n in a.notes if n.startswith(("host clock:", "ledger flagged"))]
        return facts + "".join(html.note(n, warn=n.startswith("ledger flagged")) for n in said)

    def _set_incidents(self) -> None:
        """Incident choices in table order; the previous choice is kept when it is still listed."""
        rows = self.incidents_frame.to_dicts()
        opts = [(f"{r['failure_mode']} @ {r['host'] or '?'} · attempt {r['attempt']} · "
                 f"{(r.get('gpu_hours_lost') or 0):.1f} GPU-h · {r['incident_id']}", r["incident_id"]) for r in rows]
        with self._hold():
            before = self.incident.value
            self.incident.options = opts
            ids = [v for _, v in opts]
            self.incident.value = before if before in ids else (ids[0] if ids else None)

    def _show_incident(self) -> None:
        """Evidence of the selected incident, its host's history, and the review form filled in."""
        t0 = time.perf_counter()
        inc_id = self.incident.value
        self.incidents_html.value = html.table(self.incidents_frame, key="incident_id", selected=inc_id,
                                               wrap=("note",), height_px=190)
        ev = self.evidence_of(inc_id)
        self.evidence_frame = ev
        self.rejected_frame = frames.rejected(self.data(self.run.value).incidents, inc_id)
        row = self.incidents_frame.filter(pl.col("incident_id") == inc_id).to_dicts() if inc_id else []
        self.evidence_html.value = (self._detail(row[0], ev) if row else html.note("no incident in this range"))
        if row:
            r = row[0]
            with self._hold():
                self.review_mode.value = r["failure_mode"] if r["failure_mode"] in taxonomy.MODES else "unknown"
                self.review_host.value = r["host"] or ""
                self.review_note.value, self.review_ticket.value = r.get("note") or "", r.get("ticket") or ""
                self.review_status.value = r.get("status") or "open"
                if r["host"] in self.host.options:
                    self.host.value = r["host"]
        self._show_host()
        self.render_s["incident"] = time.perf_counter() - t0

    def _detail(self, r: dict, ev: pl.DataFrame) -> str:
        """An incident's confidence, the candidates the attribution rejected (and why), then its evidence lines."""
        out = ""
        if r.get("confidence") is not None:
            out = html.facts([("confidence", f"{r['confidence']:.2f} (0-1)"),
                              ("candidates considered and rejected", self.rejected_frame.height)])
        if self.rejected_frame.height:
            out += html.table(self.rejected_frame, frames.REJECTED_VIEW, wrap=("reason",), paths=("where",),
                              height_px=160)
        return out + html.evidence(ev)

    def evidence_of(self, incident_id: str | None) -> pl.DataFrame:
        """The incident's ranked evidence lines, from the run's cached attribution where there is one."""
        if not incident_id:
            return pl.DataFrame()
        d = self.data(self.run.value)
        if d.evidence is not None:
            return d.evidence.filter(pl.col("incident_id") == incident_id).sort("rank_in_incident")
        return self.lab.evidence(incident_id)

    def host_incidents(self, host: str) -> pl.DataFrame:
        """The host's incidents in every run that named it, each costed by its run's ledger (computed once, kept):
        the incidents `Lab.incidents()` gives for the host."""
        runs = sorted(set(self.fleet_incidents().filter(pl.col("host") == host)["run"].drop_nulls().to_list()))
        incs = [self.data(r).incidents.filter(pl.col("host") == host) for r in runs]
        return pl.concat(incs, how="diagonal_relaxed") if incs else attribution.empty_incidents()

    def relaunch_rule(self, host: str) -> pl.DataFrame:
        """The relaunch plan's repeat-offender rule for `host` as a relaunch of the selected run reads it: faults in
        the HISTORY_DAYS before the run's last attempt ended (`account.fleet.repeat_offenders`)."""
        att = self.data(self.run.value).attempts
        end = att["end_ts"].max() if att.height else None
        if end is None:
            return pl.DataFrame(schema=offenders.RULE_SCHEMA)
        rule = fleet.repeat_offenders(self.lab.con, self.fleet_incidents(),
                                      end - dt.timedelta(days=offenders.HISTORY_DAYS))
        return rule.filter(pl.col("host") == host)

    def _show_host(self) -> None:
        """The host's record across runs (incidents and fault episodes, in time order), its fleet-memory totals
        (`account.fleet`, the row `clusterlab hosts` prints) and its failure-mode evidence: a repeat offender?"""
        host = self.host.value
        if not host:
            self.host_html.value = html.note("no host")
            return
        inc = self.host_incidents(host)
        self.host_frame = frames.host_history(inc, host)
        self.host_history_frame = fleet.host_history(self.lab.con, host, inc)
        self.host_memory_frame = fleet.fleet_memory(self.lab.con, fleet.incident_hosts(inc), host=host)
        self.host_events_frame = frames.host_events(self.lab.events(host=host))
        runs = self.host_frame["run"].n_unique() if self.host_frame.height else 0
        verdict = (f"{host}: {self.host_frame.height} incidents in {runs} run(s) — repeat offender"
                   if frames.repeat_offender(self.host_frame) else
                   f"{host}: {self.host_frame.height} incident(s) on record")
        self.host_rule_frame = self.relaunch_rule(host)
        self.host_html.value = (html.note(verdict, warn=frames.repeat_offender(self.host_frame))
                                + html.facts(frames.memory_facts(self.host_memory_frame))
                                + frames.rule_note(self.host_rule_frame, offenders.REPEAT_AFTER,
                                                   offenders.HISTORY_DAYS, self.run.value)
                                + "<b>Incidents and fault episodes across runs</b> (oldest first)"
                                + html.table(self.host_history_frame, frames.HOST_HISTORY_VIEW, wrap=("detail",),
                                             height_px=220)
                                + "<b>Evidence lines naming a failure mode</b>" + html.table(self.host_events_frame)
                                + telemetry_plot.host_html(self.lab.con, host, self.incidents_frame,
                                                           self.incident.value, self.run.value))

    def _render_tab(self) -> None:
        """Draw the selected tab if what it shows went stale (the costly plots render only when seen)."""
        title = TABS[self.tabs.selected_index or 0]
        if title not in self._dirty or self.run.value is None:
            return
        self._dirty.discard(title)
        t0 = time.perf_counter()
        {"Step times": self._render_steps, HEATMAP: self._render_heatmap,
         "Providers": self._render_mix, "Relaunch": self._render_relaunch, "What-if": self._render_what_if}[title]()
        self.render_s[title] = time.perf_counter() - t0

    def _render_steps(self) -> None:
        d = self.data(self.run.value)
        since, until = self.window_range()
        strag = d.incidents.filter(pl.col("kind") == "straggler")["host"].drop_nulls().to_list()
        self.step_stats_frame = frames.host_step_stats(self.lab.con, self.run.value, since, until, strag)
        self.steps_image.value = png(lambda ax: plots.step_time_boxes(self.step_stats_frame, ax=ax),
                                     (7.5, 1.4 + 0.26 * max(self.step_stats_frame.height, 1)))
        # the slow stretch itself, over time: the straggler hosts, else the slowest two
        slowest = [h for h in self.step_stats_frame["host"].head(2).to_list() if h not in strag]
        shown = (strag or slowest)[:4]
        self.step_series_frame = frames.host_step_series(self.lab.con, self.run.value, shown, since, until)
        windows = d.incidents.filter(pl.col("kind") == "straggler").select("root_ts", "exit_ts")
        self.steps_series_image.value = png(
            lambda ax: plots.step_time_over_time(self.step_series_frame, strag, windows, ax=ax), (7.5, 2.6))

    def _render_heatmap(self) -> None:
        rows = self.attribution.rows if self.attribution is not None else pl.DataFrame(
            schema={"category": pl.String, "gpu_hours": pl.Float64, "start_ts": pl.Datetime, "host": pl.String})
        self.heatmap_frame = frames.lost_by_host_day(rows)
        days = max(len(self.heatmap_frame.columns) - 1, 1)
        self.heatmap_image.value = png(lambda ax: plots.lost_hours_heatmap(self.heatmap_frame, ax=ax),
                                       (min(3 + 1.2 * days, 12), min(1.5 + 0.3 * self.heatmap_frame.height, 10)))

    def _render_mix(self) -> None:
        # costs need every listed run's ledger: built only when this tab is opened, then kept
        incs = [self.data(r).incidents for r in self._run_names(self.provider.value, ALL)]
        inc = pl.concat(incs, how="diagonal_relaxed") if incs else attribution.empty_incidents()
        # a run without a ledger has incidents without a provider: the inventory still names its provider
        inc = frames.with_run_provider(inc, self.runs_frame)
        if self.provider.value != ALL:
            inc = inc.filter(pl.col("provider") == self.provider.value)
        self.mix_frame = frames.failure_mix(inc)
        self.mix_image.value = png(lambda ax: plots.failure_mix(self.mix_frame, ax=ax),
                                   (7.5, 1.6 + 0.5 * max(self.mix_frame["provider"].n_unique(), 1)))

    def _render_relaunch(self) -> None:
        from clusterlab.widgets.relaunch import RelaunchPanel

        self.relaunch_panel = RelaunchPanel(self.lab, self.run.value)
        self.relaunch_box.children = [self.relaunch_panel]

    def _render_what_if(self) -> None:
        from clusterlab.widgets.what_if import WhatIfPanel

        self.what_if_panel = WhatIfPanel(self.lab, self.run.value, self.attribution)
        self.what_if_box.children = [self.what_if_panel]

    # ---- review -------------------------------------------------------------------------------
    def confirm(self) -> None:
        """Record that the selected incident's mode and host are right as detected."""
        r = self._selected()
        if r is not None:
            self._annotate(r["incident_id"], failure_mode=r["failure_mode"], host=r["host"],
                           note=self.review_note.value or "confirmed", ticket=self.review_ticket.value or None,
                           status=self.review_status.value)

    def correct(self) -> None:
        """Record the form's mode, host, note, ticket and status for the selected incident."""
        r = self._selected()
        if r is not None:
            self._annotate(r["incident_id"], failure_mode=self.review_mode.value,
                           host=self.review_host.value.strip() or None, note=self.review_note.value or None,
                           ticket=self.review_ticket.value or None, status=self.review_status.value)

    def _selected(self) -> dict | None:
        rows = self.incidents_frame.filter(pl.col("incident_id") == self.incident.value).to_dicts() \
            if self.incident.value else []
        if not rows:
            self.review_message.value = html.note("select an incident first", warn=True)
        return rows[0] if rows else None

    def _annotate(self, incident_id: str, **fields) -> None:
        """Write the annotation through the API, then recompute this run so every view shows it."""
        try:
            self.lab.annotate(incident_id, **fields)
        except ValueError as e:
            self.review_message.value = html.note(str(e), warn=True)
            return
        self._runs.pop(self.run.value, None)
        self._fleet = None
        self._dirty.add("Providers")
        self._render_run()
        self.review_message.value = html.note(f"saved: {incident_id}")

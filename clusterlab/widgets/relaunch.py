"""`RelaunchPanel(lab, run)`: the relaunch plan — hosts to exclude and why, checkpoint, command — and a dry run."""

from __future__ import annotations

import datetime as dt
import shlex

import ipywidgets as w
import polars as pl

from clusterlab.widgets import html


class RelaunchPanel(w.VBox):
    """Shows the dry-run relaunch plan of a run; the button builds it again and shows what would run."""

    def __init__(self, lab, run: str):
        super().__init__()
        self.lab, self.run = lab, run
        self.plan: dict | None = None
        self.message: str | None = None
        self.exclude_frame = self.drain_frame = pl.DataFrame()
        # NOTE: without a width the panel grows to its widest table and the command runs off-screen
        self.view = w.HTML(layout=w.Layout(width="100%"))
        self.layout.width = "100%"
        self.dry_run_button = w.Button(description="Dry run", icon="play", button_style="info",
                                       layout=w.Layout(width="auto"),
                                       tooltip="build the plan again and show the command; nothing is executed")
        self.status = w.HTML()
        self.dry_run_button.on_click(lambda _: self.dry_run())
        self.children = [w.HTML(f"<b>Relaunch plan for {html.esc(run)}</b>"), self.view,
                         w.HBox([self.dry_run_button, self.status])]
        self.refresh()

    def refresh(self) -> None:
        """Build the plan through `Lab.relaunch_plan` (a dry run: nothing is executed) and show it."""
        try:
            self.plan = self.lab.relaunch_plan(self.run).to_dict()
        except Exception as e:  # noqa: BLE001 - any planner failure is shown, the notebook goes on
            self._unavailable(f"could not plan a relaunch of {self.run}: {type(e).__name__}: {e}")
            return
        self.message = None
        self.dry_run_button.disabled = False
        self.view.value = self._render(self.plan)

    def dry_run(self) -> None:
        """Re-plan and state, with the time, that nothing was executed."""
        self.refresh()
        if self.plan is not None:
            now = dt.datetime.now().strftime("%H:%M:%S")
            self.status.value = html.note(f"dry run at {now}: nothing was executed "
                                          f"(executed = {self.plan.get('executed', False)})")

    def _unavailable(self, message: str) -> None:
        self.plan, self.message = None, message
        self.dry_run_button.disabled = True
        self.view.value = html.note(message, warn=True)

    def _render(self, plan: dict) -> str:
        """The plan as escaped HTML: exclusions, drains, checkpoint, capacity, cost and command."""
        self.exclude_frame = _frame(plan.get("exclude"), ["host", "reason", "failure_mode", "incident"])
        self.drain_frame = _frame(plan.get("drain"), ["host", "reason"])
        ck = plan.get("checkpoint") or {}
        skipped = ck.get("skipped") or []
        cmd = plan.get("command") or []
        cmd_text = shlex.join(str(c) for c in cmd) if isinstance(cmd, list) else str(cmd)
        recompute = plan.get("recompute_gpu_hours")
        parts = [
            html.facts([("nodes needed", plan.get("nodes_needed")), ("available", plan.get("nodes_available")),
                        ("recompute", f"{recompute:,.1f} GPU-h" if isinstance(recompute, int | float) else "n/a"),
                        ("backend", plan.get("backend"))]),
            "<b>Exclude</b>", html.table(self.exclude_frame, wrap=("reason",)),
            "<b>Drain</b>", html.table(self.drain_frame, wrap=("reason",)),
            "<b>Resume from</b>", html.facts([("step", ck.get("step")), ("path", ck.get("path")),
                                               ("verified", ck.get("verified"))]),
        ]
        if skipped:
            parts.append(html.note(f"skipped (lost or corrupt): {skipped}", warn=True))
        parts.append("<b>Command</b> (dry run)")
        # NOTE: a long option (`--export=ALL,...`) has no space to break at; it wraps anywhere rather than hide
        parts.append(f"<pre style='white-space:pre-wrap;overflow-wrap:anywhere'>{html.esc(cmd_text)}</pre>")
        need, have = plan.get("nodes_needed") or 0, plan.get("nodes_available") or 0
        if need > have:
            parts.append(html.note(f"not enough healthy nodes: {need} needed, {have} available", warn=True))
        return "".join(parts)


def _frame(items: list | None, columns: list[str]) -> pl.DataFrame:
    """A list of dicts as a frame with at least `columns` (as text: the plan is display here)."""
    rows = [{c: None if (v := (i or {}).get(c)) is None else str(v) for c in columns} for i in (items or [])]
    return pl.DataFrame(rows, schema={c: pl.String for c in columns})

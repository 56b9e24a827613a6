"""`WhatIfPanel(lab, run)`: the run's ledger re-priced under each policy, and any policy priced on demand."""

from __future__ import annotations

import ipywidgets as w
import polars as pl

from clusterlab.account.attribution import Attribution
from clusterlab.whatif import what_if
from clusterlab.widgets import html

SUMMARY_COLUMNS = ["policy", "setting", "gpu_hours_saved", "usd_saved", "gpu_hours_extra", "usd_extra", "categories",
                   "verdict"]


class WhatIfPanel(w.VBox):
    """Every policy at its default first; a policy typed in (`hang_timeout=120`) is priced and added on top."""

    def __init__(self, lab, run: str, attributed: Attribution | None = None):
        super().__init__(layout=w.Layout(width="100%"))
        self.lab, self.run, self.attributed = lab, run, attributed
        self.frame = pl.DataFrame()
        self.assumptions: list[str] = []
        self.view = w.HTML(layout=w.Layout(width="100%"))
        self.spec = w.Text(placeholder="hang_timeout=120, checkpoint_interval=600, provider=NAME ...",
                           description="policy", layout=w.Layout(width="420px"),
                           style={"description_width": "50px"})
        self.price_button = w.Button(description="Price it", icon="calculator", layout=w.Layout(width="auto"))
        self.status = w.HTML()
        self.price_button.on_click(lambda _: self.price(self.spec.value))
        self.children = [w.HTML(f"<b>What {html.esc(run)} would have cost under other policies</b>"), self.view,
                         w.HBox([self.spec, self.price_button, self.status])]
        self.price(None)

    def price(self, spec: str | None) -> None:
        """Price every policy (spec None) or one more; a bad spec or an unpriceable run is said, not raised."""
        try:
            policies = [s.strip() for s in spec.split(",") if s.strip()] if spec else None
            if self.attributed is None:  # once: every later pricing reads the same ledger
                self.attributed = self.lab.attribute(self.run)
            w_if = what_if.price(self.lab.con, self.attributed, policies)
        except Exception as e:  # noqa: BLE001 - any failure is shown, the notebook goes on
            self.status.value = html.error(f"could not price {spec or 'the policies'}: {type(e).__name__}: {e}")
            return
        new = w_if.summary.select(SUMMARY_COLUMNS)
        self.frame = new if spec is None or not self.frame.height else pl.concat([new, self.frame])
        self.assumptions = [f"{p.policy}: {a}" for p in w_if.pricings for a in p.assumptions] + (
            self.assumptions if spec else [])
        self.status.value = ""
        self.view.value = (html.table(self.frame, wrap=("setting", "verdict"))
                           + html.note("Savings and extra cost are never negative; a policy that would cost more "
                                       "says so. Assumptions: " + "; ".join(self.assumptions)))

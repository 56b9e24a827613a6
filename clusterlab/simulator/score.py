"""How well attribution recovers a simulated fleet: incidents found and ledger error against truth.json.

An injected incident counts as found when an incident of the same run, attempt and failure mode
names the same host (or, where the truth names no single host, none). A ledger category is off
when it differs from the truth by more than `rel` of the truth (or `floor` of the run's GPU-hours,
for categories that are nearly empty).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Score:
    incidents: int  # injected
    missed: list[dict] = field(default_factory=list)  # truth rows not found
    off: list[str] = field(default_factory=list)  # ledger categories outside the tolerance
    worst_rel_error: float = 0.0  # the largest |found - truth| / truth over categories above the floor

    @property
    def recall(self) -> float:
        return 1 - len(self.missed) / self.incidents if self.incidents else 1.0


def _host(h: str | None) -> str | None:
    return None if h in (None, "none", "") else h


def score(lab, bundle: Path | str, rel: float = 0.02, floor: float = 1e-4) -> Score:
    """Compare `lab`'s incidents and ledgers (the bundle already ingested) with the bundle's truth.json."""
    truth = json.loads((Path(bundle) / "truth.json").read_text())
    found = {(r["run"], r["attempt"], r["failure_mode"], _host(r["host"]))
             for r in lab.incidents().iter_rows(named=True)}
    out = Score(len(truth["incidents"]))
    out.missed = [i for i in truth["incidents"]
                  if (i["run"], i["attempt"], i["failure_mode"], _host(i["host"])) not in found]
    for run, want in truth["runs"].items():
        got = dict(lab.attribute(run).ledger.select("category", "gpu_hours").iter_rows())
        least = floor * want["gpu_hours"]
        for cat, hours in want["ledger"].items():
            err = abs(got.get(cat, 0.0) - hours)
            if hours > least:
                out.worst_rel_error = max(out.worst_rel_error, err / hours)
            if err > max(rel * hours, least):
                out.off.append(f"{run} {cat}: truth {hours:.4f} GPU-h, found {got.get(cat, 0.0):.4f}")
    return out

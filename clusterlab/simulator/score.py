"""How well attribution recovers a simulated fleet: incidents found, ledger error and decoys blamed.

An injected incident counts as found when an incident of the same run, attempt and failure mode
names the same host (or, where the truth names no single host, none). A ledger category is off
when it differs from the truth by more than `rel` of the truth (or `floor` of the run's GPU-hours,
for categories that are nearly empty). A decoy host is blamed when an incident of the decoy's run
(and attempt, where the decoy fell inside one) names that host although no injected incident of
that attempt does: harmless evidence was taken for a cause.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Score:
    incidents: int  # injected
    missed: list[dict] = field(default_factory=list)  # truth rows not found, each with what was found instead
    off: list[str] = field(default_factory=list)  # ledger categories outside the tolerance
    worst_rel_error: float = 0.0  # the largest |found - truth| / truth over categories above the floor
    decoys: int = 0  # decoys the truth lists
    decoys_blamed: list[dict] = field(default_factory=list)  # (run, attempt, host, mode, decoy kinds) blamed

    @property
    def recall(self) -> float:
        return 1 - len(self.missed) / self.incidents if self.incidents else 1.0

    @property
    def decoy_hosts_blamed(self) -> int:
        """Distinct (run, host) pairs where a decoy's host was blamed."""
        return len({(d["run"], d["host"]) for d in self.decoys_blamed})

    def report(self) -> list[str]:
        """One line per miss, ledger category off and decoy blamed (for test failures and the benchmark)."""
        out = [f"missed {m['run']} #{m['attempt']} {m['failure_mode']} on {m['host']}; found "
               f"{', '.join(m['found']) or 'nothing'}" for m in self.missed]
        out += [f"ledger {o}" for o in self.off]
        out += [f"decoy blamed {d['run']} #{d['attempt']}: {d['mode']} on {d['host']} ({', '.join(d['kinds'])})"
                for d in self.decoys_blamed]
        return out


# NOTE: `recompute` and `hang` meet at each failure's root event (the step it cut short is work thrown away, the
# time after it hang), and the evidence dates that event to its stamps' resolution (whole seconds in dmesg, syslog
# and Slurm) and its clock's correction, not to the simulator's millisecond: each of the two may be off by this
# much per failure, their sum only by the tolerance of every other category.
SPLIT = ("recompute", "hang")
ROOT_DATING_S = 2.0


def _host(h: str | None) -> str | None:
    return None if h in (None, "none", "") else h


def score(lab, bundle: Path | str, rel: float = 0.02, floor: float = 1e-4) -> Score:
    """Compare `lab`'s incidents and ledgers (the bundle already ingested) with the bundle's truth.json."""
    truth = json.loads((Path(bundle) / "truth.json").read_text())
    rows = list(lab.incidents().iter_rows(named=True))
    found = {(r["run"], r["attempt"], r["failure_mode"], _host(r["host"])) for r in rows}
    out = Score(len(truth["incidents"]))
    for i in truth["incidents"]:
        if (i["run"], i["attempt"], i["failure_mode"], _host(i["host"])) not in found:
            instead = sorted(f"{r['failure_mode']} on {_host(r['host'])}" for r in rows
                             if (r["run"], r["attempt"]) == (i["run"], i["attempt"]))
            out.missed.append({**i, "found": instead})
    for run, want in truth["runs"].items():
        got = dict(lab.attribute(run).ledger.select("category", "gpu_hours").iter_rows())
        least = floor * want["gpu_hours"]
        ended = sum(1 for i in truth["incidents"] if i["run"] == run and i["kind"] == "interruption")
        split = ended * ROOT_DATING_S * want["gpus"] / 3600
        for cat, hours in [*want["ledger"].items(), ("recompute+hang", sum(want["ledger"].get(c, 0.0) for c in SPLIT))]:
            found = sum(got.get(c, 0.0) for c in cat.split("+"))
            err = abs(found - hours)
            if hours > least:
                out.worst_rel_error = max(out.worst_rel_error, err / hours)
            if err > max(rel * hours, least) + (split if cat in SPLIT else 0.0):
                out.off.append(f"{run} {cat}: truth {hours:.4f} GPU-h, found {found:.4f}")
    decoys = truth.get("decoys", [])
    out.decoys = len(decoys)
    guilty = {(i["run"], i["attempt"], _host(i["host"])) for i in truth["incidents"]}
    blamed: dict[tuple, dict] = {}
    for r in rows:
        host = _host(r["host"])
        if host is None or (r["run"], r["attempt"], host) in guilty:
            continue
        kinds = sorted({d["kind"] for d in decoys if d["run"] == r["run"] and d["host"] == host
                        and d["attempt"] in (None, r["attempt"])})
        if kinds:
            key = (r["run"], r["attempt"], host, r["failure_mode"])
            blamed[key] = {"run": r["run"], "attempt": r["attempt"], "host": host, "mode": r["failure_mode"],
                           "kinds": kinds}
    out.decoys_blamed = list(blamed.values())
    return out

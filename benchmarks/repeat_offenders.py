"""Does "k faults within W days" predict a host's next fault? The repeat-offender rule scored on a real fleet.

    python benchmarks/repeat_offenders.py [--trace ../shared/datasets/infinitehbd-trace/fault_trace.json]
        [--epoch 2024-03-30] [--fleet-size 400] [--ks 1,2,3,4,5] [--windows 7,14,30,60,90,365] [--horizon 30]

The trace (InfiniteHBD-Trace, 584 fault episodes of 400 GPU servers over 348 days) is ingested as a user would
(`clusterlab ingest --epoch`), its episodes replayed in time order (clusterlab.account.offenders): at each fault a
host with k or more faults in the W days before is flagged, and the flag is right when the host faults again in
the next `horizon` days. The table gives each rule's precision (with its 95 % Wilson interval), recall, lift over
the fleet's base rate and the share of the fleet's host-days it keeps out; then the rule chosen: among those that
foresee at least one fault in five (recall >= 0.20), the most precise. `relaunch.plan.PlanSettings` holds it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

import polars as pl

from clusterlab.account.offenders import score_grid
from clusterlab.lab import Lab

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT.parent / "shared" / "datasets" / "infinitehbd-trace" / "fault_trace.json"
MIN_RECALL = 0.20  # the chosen rule foresees at least this share of faults


def choose(table: pl.DataFrame, min_recall: float = MIN_RECALL) -> dict:
    """The most precise rule among those with recall >= min_recall (ties: the smaller k, then the shorter W)."""
    ok = table.filter(pl.col("recall") >= min_recall)
    return ok.sort(["precision", "k", "window_days"], descending=[True, False, False]).row(0, named=True)


def run(trace: Path, epoch: dt.date, fleet_size: int, ks: list[int], windows: list[float],
        horizon: float) -> pl.DataFrame:
    """The score table of every k and W on the trace."""
    lab = Lab(":memory:")
    lab.ingest(trace, epoch=epoch, workers=1)
    return score_grid(lab.episodes(), ks, windows, fleet_size, horizon_days=horizon)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, default=TRACE)
    ap.add_argument("--epoch", type=dt.date.fromisoformat, default=dt.date(2024, 3, 30))
    ap.add_argument("--fleet-size", type=int, default=400, help="servers in the fleet (those never faulted too)")
    ap.add_argument("--ks", default="1,2,3,4,5")
    ap.add_argument("--windows", default="7,14,30,60,90,365")
    ap.add_argument("--horizon", type=float, default=30.0)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if not a.trace.exists():
        print(f"{a.trace}: no such trace (see ../shared/datasets/infinitehbd-trace/SOURCE.md)", file=sys.stderr)
        return 2
    table = run(a.trace, a.epoch, a.fleet_size, [int(k) for k in a.ks.split(",")],
                [float(w) for w in a.windows.split(",")], a.horizon)
    best = choose(table)
    if a.json:
        print(json.dumps({"rules": table.to_dicts(), "chosen": best}, default=str))
        return 0
    base = float(table["base_rate"][0])
    print(f"base rate: a host of {a.fleet_size} faults within {a.horizon:g} days from a given day: {base:.3f}")
    print(f"{'k':>2} {'W days':>6} {'flags':>5} {'precision (95% CI)':>20} {'recall':>6} {'lift':>5} "
          f"{'hosts':>5} {'capacity':>8}")
    for r in table.iter_rows(named=True):
        print(f"{r['k']:>2} {r['window_days']:>6g} {r['flags']:>5} {r['precision']:>7.3f} "
              f"({r['precision_lo']:.2f}-{r['precision_hi']:.2f}) {r['recall']:>6.3f} {r['lift']:>5.2f} "
              f"{r['flagged_hosts']:>5} {r['capacity_flagged']:>8.2%}")
    print(f"chosen (recall >= {MIN_RECALL:.2f}, most precise): k={best['k']} in W={best['window_days']:g} days: "
          f"precision {best['precision']:.3f} ({best['precision_lo']:.2f}-{best['precision_hi']:.2f}), recall "
          f"{best['recall']:.3f}, lift {best['lift']:.2f} (its lower bound {best['precision_lo'] / base:.1f}x the base "
          f"rate), {best['capacity_flagged']:.1%} of host-days flagged")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

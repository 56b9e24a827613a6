"""The README's fleet view: the InfiniteHBD trace's hosts by faults and by GPU-hours out of service.

    python docs/make_fleet_plot.py [--trace ../shared/datasets/infinitehbd-trace/fault_trace.json]
        [--epoch 2024-03-30] [--fleet-size 400] [--gpus-per-server 8] [--out docs/img/fleet-hosts.png]

The trace is ingested as a user would (`clusterlab ingest --epoch`) and read back through `Lab.hosts()`: the
fleet's memory per host. Left: how many servers had 0, 1, 2, ... faults (those never in the trace are the fleet
size less the hosts it names). Right: each faulty host's faults against its GPU-hours out of service (hours in
repair x GPUs a server: the trace does not give the GPU count, 8 is assumed), the rule `relaunch` uses marked.
"""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

from clusterlab.lab import Lab  # noqa: E402
from clusterlab.relaunch.plan import PlanSettings  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT.parent / "shared" / "datasets" / "infinitehbd-trace" / "fault_trace.json"


def fleet(trace: Path, epoch: dt.date) -> pl.DataFrame:
    """`Lab.hosts()` of the trace: one row per host that faulted."""
    lab = Lab(":memory:")
    lab.ingest(trace, epoch=epoch, workers=1)
    return lab.hosts()


def draw(hosts: pl.DataFrame, fleet_size: int, gpus: int, out: Path) -> None:
    """The two panels, from the frame alone."""
    counts = hosts.group_by("episodes").len().sort("episodes")
    never = fleet_size - hosts.height
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    left.bar([0, *counts["episodes"].to_list()], [never, *counts["len"].to_list()], color="#4477aa")
    left.set(xlabel="fault episodes in 348 days", ylabel="servers",
             title=f"{fleet_size} servers by faults ({hosts.height} faulted at least once)")
    k = PlanSettings().repeat_after
    gpu_h = hosts["repair_hours"] * gpus
    many = hosts["episodes"] >= k
    right.scatter(hosts["episodes"].filter(~many), gpu_h.filter(~many), s=14, color="#999999",
                  label=f"fewer than {k} faults")
    right.scatter(hosts["episodes"].filter(many), gpu_h.filter(many), s=14, color="#cc3311",
                  label=f"{k}+ faults ({int(many.sum())} servers, {gpu_h.filter(many).sum() / gpu_h.sum():.0%} "
                        "of the GPU-hours)")
    right.set_yscale("log")
    right.set(xlabel="fault episodes", ylabel=f"GPU-hours out of service (x{gpus} GPUs)",
              title="each faulty server: faults and GPU-hours lost to repair")
    right.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, default=TRACE)
    ap.add_argument("--epoch", type=dt.date.fromisoformat, default=dt.date(2024, 3, 30))
    ap.add_argument("--fleet-size", type=int, default=400)
    ap.add_argument("--gpus-per-server", type=int, default=8)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "fleet-hosts.png")
    a = ap.parse_args(argv)
    hosts = fleet(a.trace, a.epoch)
    draw(hosts, a.fleet_size, a.gpus_per_server, a.out)
    top = hosts.head(3).select("episodes", "repair_hours", "episode_modes")
    print(f"{a.out}: {hosts.height} hosts, {int(hosts['episodes'].sum())} episodes, "
          f"{hosts['repair_hours'].sum() * a.gpus_per_server:,.0f} GPU-hours out of service; worst: {top.to_dicts()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The what-if's predicted savings against simulation, on the even Llama 3 failure model and on the model fitted to
a real fleet (InfiniteHBD-Trace: heterogeneous per-node rates, its class mix, its repair times).

    python benchmarks/what_if_validation.py [--seeds 16] [--model llama3|calibrated|both] [--json]

Each seed's campaign (one cluster of 16 nodes, 14 in the run, 5 days, failures 40x the model's rates so that a
short run sees several) is simulated three times with common random numbers: as it ran (saves every 2 h, NCCL's
10-minute watchdog), with a hang detector of 60 s and with a save every 20 minutes. The what-if prices the first
run's evidence (`clusterlab.whatif.what_if`); the simulation's own ledgers give what the policies saved, for the
same work (the policy runs' lost time scaled by the ratio of productive time). On the calibrated model the node a
failure strikes is drawn by the nodes' rates and a struck node is out for a repair drawn from the trace's (median
22 h), so the policy runs can launch later attempts on other nodes: `same_nodes` says whether they did.
tests/test_what_if_validation.py (Llama 3) and tests/test_what_if_calibrated.py hold the agreement.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass

from clusterlab import Lab
from clusterlab.simulator import calibrated, endings
from clusterlab.simulator.failure_model import FailureModel
from clusterlab.simulator.fleet import Config
from clusterlab.simulator.policy import campaign, simulated_ledger, with_policy, write_run
from clusterlab.simulator.runs import Run
from clusterlab.whatif.what_if import what_if

SCALE = 40.0
HANG_S = 60.0
BASE_SAVE_S, POLICY_SAVE_S = 7200.0, 1200.0
MODELS = ("llama3", "calibrated")


@dataclass
class Check:
    """One policy on one seed: the what-if's saving against the simulation's, in GPU-hours."""

    model: str
    seed: int
    policy: str
    failures: int  # attempts that ended in a failure (time limit out)
    hangs: int  # of which hung until a watchdog or detector fired
    predicted: float
    simulated: float
    same_nodes: bool  # the policy's run launched every attempt on the nodes the base run did

    @property
    def error(self) -> float | None:
        """|predicted - simulated| / |simulated|; None where the policy changed nothing (no hang to cut short)."""
        return abs(self.predicted - self.simulated) / abs(self.simulated) if self.simulated else None


def config(seed: int) -> Config:
    return Config(seed=seed, providers=1, clusters_per_provider=1, nodes_per_cluster=16, days=5.0, step_s=10.0,
                  model=FailureModel(scale=SCALE), scenarios=False, save_every_s=BASE_SAVE_S)


def campaign_of(model: str) -> Callable[[Config], Run]:
    """The campaign builder of a failure model (the fit is InfiniteHBD-Trace's, `calibrated.infinitehbd`)."""
    if model == "llama3":
        return campaign
    fit = calibrated.infinitehbd()
    return lambda cfg: calibrated.campaign(cfg, fit, SCALE)


def training_between_saves_s(run: Run) -> float:
    """The policy as the what-if states it: training seconds between one save's end and the next's start."""
    gaps = [(b.start_ms - a.end_ms) / 1000 for att in run.attempts
            for a, b in zip(att.saves, att.saves[1:], strict=False) if a.complete and b.complete]
    return statistics.median(gaps)


def simulated_saving(base: dict, policy: dict, lost: tuple[str, ...]) -> float:
    """GPU-hours of `lost` categories the policy saved, for the base run's amount of work."""
    scale = base["productive"] / policy["productive"]
    return sum(base[c] for c in lost) - sum(policy[c] for c in lost) * scale


def hangs(run: Run) -> int:
    return sum(endings.family(a.ending.mode) == "hang" for a in run.attempts if a.ending.mode != "time_limit")


def validate(model: str, seed: int) -> list[Check]:
    """Both policies on one seed of one model: predicted and simulated savings."""
    build, cfg = campaign_of(model), config(seed)
    base = build(cfg)
    hang = build(with_policy(cfg, hang_timeout_s=HANG_S))
    saves = build(with_policy(cfg, save_every_s=POLICY_SAVE_S))
    with Lab(":memory:") as lab:
        name = write_run(lab.con, base)
        w = what_if(lab.con, name, [f"hang_timeout={HANG_S}",
                                    f"checkpoint_interval={training_between_saves_s(saves)}"])
    predicted = [p.gpu_hours_saved - p.gpu_hours_extra for p in w.pricings]
    ledger = simulated_ledger(base)
    simulated = [simulated_saving(ledger, simulated_ledger(hang), ("hang",)),
                 simulated_saving(ledger, simulated_ledger(saves), ("checkpoint", "recompute"))]
    failures = sum(a.ending.mode != "time_limit" for a in base.attempts)
    nodes = [a.hosts for a in base.attempts]
    return [Check(model, seed, policy, failures, hangs(base), got, want, [a.hosts for a in run.attempts] == nodes)
            for policy, got, want, run in zip(("hang detector", "checkpoint interval"), predicted, simulated,
                                              (hang, saves), strict=True)]


def pooled_error(checks: list[Check]) -> float | None:
    """|Σ predicted - Σ simulated| / Σ simulated over seeds: the what-if prices the expected loss of a run's
    failures, one seed's failures fall where they fall (a few of them late or early in their interval)."""
    want = sum(c.simulated for c in checks)
    return abs(sum(c.predicted for c in checks) - want) / want if want else None


def summary(checks: list[Check]) -> list[str]:
    """Per model and policy: seeds with a saving, the median and worst error per seed, and pooled over seeds."""
    out = []
    for model in MODELS:
        for policy in ("hang detector", "checkpoint interval"):
            mine = [c for c in checks if c.model == model and c.policy == policy]
            if not mine:
                continue
            errs = [c.error for c in mine if c.error is not None]
            idle = [c for c in mine if c.error is None]
            line = f"{model:<11} {policy:<20} {len(errs)} seeds priced"
            if errs:
                line += (f": error median {statistics.median(errs):.3f}, worst {max(errs):.3f}, "
                         f"{sum(e <= 0.10 for e in errs)} within 10 %; pooled {pooled_error(mine):.3f}")
            if idle:
                most = max(abs(c.predicted) for c in idle)
                line += f"; {len(idle)} with nothing to save (predicted at most {most:.3f})"
            out.append(line)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=16)
    ap.add_argument("--model", choices=(*MODELS, "both"), default="both")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    models = MODELS if a.model == "both" else (a.model,)
    checks = [c for m in models for s in range(a.seeds) for c in validate(m, s)]
    if a.json:
        print(json.dumps([asdict(c) | {"error": c.error} for c in checks], indent=2))
        return 0
    print(f"{'model':<11} {'seed':>4} {'policy':<20} {'fail':>4} {'hang':>4} {'predicted':>10} {'simulated':>10} "
          f"{'error':>6} same nodes")
    for c in checks:
        err = f"{c.error:.3f}" if c.error is not None else "-"
        print(f"{c.model:<11} {c.seed:>4} {c.policy:<20} {c.failures:>4} {c.hangs:>4} {c.predicted:>10.2f} "
              f"{c.simulated:>10.2f} {err:>6} {'yes' if c.same_nodes else 'no'}")
    print()
    print("\n".join(summary(checks)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

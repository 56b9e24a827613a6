"""The what-if's predicted saving against simulation: the same campaign simulated with and without the policy.

Each seed's campaign (one cluster, 5 days, failures 40x the Llama 3 rates so that a short run sees about ten)
is simulated three times with common random numbers (clusterlab/simulator/policy.py): as it ran (saves every
2 h, NCCL's 10-minute watchdog), with a hang detector of 60 s, and with a save every 20 minutes. The what-if
prices the first run's evidence; the simulation's own ledgers give what the policies really saved, for the
same work (the policy runs' lost time scaled by the ratio of productive time).
"""

from __future__ import annotations

import statistics

import pytest

from clusterlab import Lab
from clusterlab.simulator.failure_model import FailureModel
from clusterlab.simulator.fleet import Config
from clusterlab.simulator.policy import campaign, simulated_ledger, with_policy, write_run
from clusterlab.whatif.what_if import what_if

SEEDS = range(5)
HANG_S = 60.0
BASE_SAVE_S, POLICY_SAVE_S = 7200.0, 1200.0
AGREE = 0.10


def _config(seed: int) -> Config:
    return Config(seed=seed, providers=1, clusters_per_provider=1, nodes_per_cluster=16, days=5.0, step_s=10.0,
                  model=FailureModel(scale=40.0), scenarios=False, save_every_s=BASE_SAVE_S)


def _training_between_saves_s(run) -> float:
    """The policy as the what-if states it: training seconds between one save's end and the next's start."""
    gaps = [(b.start_ms - a.end_ms) / 1000 for att in run.attempts
            for a, b in zip(att.saves, att.saves[1:], strict=False) if a.complete and b.complete]
    return statistics.median(gaps)


def _simulated_saving(base: dict, policy: dict, lost: tuple[str, ...]) -> float:
    """GPU-hours of `lost` categories the policy saved, for the base run's amount of work."""
    scale = base["productive"] / policy["productive"]
    return sum(base[c] for c in lost) - sum(policy[c] for c in lost) * scale


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_predicted_saving_agrees_with_simulation(seed: int) -> None:
    cfg = _config(seed)
    base = campaign(cfg)
    hang = campaign(with_policy(cfg, hang_timeout_s=HANG_S))
    saves = campaign(with_policy(cfg, save_every_s=POLICY_SAVE_S))
    assert len(base.attempts) >= 4  # failures enough to price
    with Lab(":memory:") as lab:
        name = write_run(lab.con, base)
        w = what_if(lab.con, name, [f"hang_timeout={HANG_S}",
                                    f"checkpoint_interval={_training_between_saves_s(saves)}"])
    predicted = [p.gpu_hours_saved - p.gpu_hours_extra for p in w.pricings]
    ledger = simulated_ledger(base)
    simulated = [_simulated_saving(ledger, simulated_ledger(hang), ("hang",)),
                 _simulated_saving(ledger, simulated_ledger(saves), ("checkpoint", "recompute"))]
    for name, got, want in zip(("hang detector", "checkpoint interval"), predicted, simulated, strict=True):
        assert want > 0, f"{name}: the simulated policy saved nothing"
        assert abs(got - want) <= AGREE * want, f"{name}: predicted {got:.2f} GPU-hours, simulated {want:.2f}"

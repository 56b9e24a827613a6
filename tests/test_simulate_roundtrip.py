"""Round trip: simulate -> ingest -> incidents and ledger recover what was injected (truth.json).

Recall: at least 95 % of injected incidents found with the right run, attempt, failure mode and
host (None where truth names no single host). Ledger: every category within 2 % of the truth
(or 1e-4 of the run's GPU-hours, for categories that are nearly empty).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_unmatched import assert_only_noise

from clusterlab import Lab
from clusterlab.simulator import simulate
from clusterlab.simulator.failure_model import llama3_rates
from clusterlab.simulator.score import score

FLEET = dict(providers=2, clusters_per_provider=2, nodes_per_cluster=4, gpus_per_node=4, days=0.25, step_s=8.0,
             save_every_s=600, failure_scale=1500)
RECALL = 0.95
LEDGER_REL = 0.02


def round_trip(out: Path) -> tuple[list[dict], list[str]]:
    """Ingest a simulated bundle; the truth incidents missed, and ledger categories off."""
    with Lab(":memory:") as lab:
        assert lab.ingest(out).problems == []
        result = score(lab, out, rel=LEDGER_REL)
        assert_only_noise(lab.unmatched(limit=None))  # what no rule read is the writers' benign noise
    assert result.incidents
    return result.missed, result.off


def _check(truth_path: Path, missed: list[dict], off: list[str]) -> None:
    n = len(json.loads(truth_path.read_text())["incidents"])
    recall = 1 - len(missed) / n
    detail = [(m["run"], m["attempt"], m["failure_mode"], m["host"]) for m in missed]
    assert recall >= RECALL, f"recall {recall:.2%} of {n}: missed {detail}"
    assert not off, "\n".join(off)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_round_trip_fleet(tmp_path: Path, seed: int) -> None:
    simulate(tmp_path, seed=seed, **FLEET)
    missed, off = round_trip(tmp_path)
    _check(tmp_path / "truth.json", missed, off)


@pytest.mark.slow
def test_round_trip_bigger_nodes(tmp_path: Path) -> None:
    simulate(tmp_path, seed=4, **dict(FLEET, providers=1, nodes_per_cluster=8, gpus_per_node=8, days=0.15))
    missed, off = round_trip(tmp_path)
    _check(tmp_path / "truth.json", missed, off)


@pytest.mark.slow
@pytest.mark.parametrize("mode", sorted(llama3_rates()))
def test_round_trip_each_failure_mode(tmp_path: Path, mode: str) -> None:
    simulate(tmp_path, seed=2, providers=1, clusters_per_provider=1, nodes_per_cluster=4, gpus_per_node=2, days=0.08,
             step_s=8.0, save_every_s=300, rates={mode: 0.4}, scenarios=False)
    missed, off = round_trip(tmp_path)
    _check(tmp_path / "truth.json", missed, off)

"""The provider score is what the scorecard says: contracted GPU-time delivered and not lost to provider faults."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
from timelines import Attempt, write_events, write_run

from clusterlab import Lab
from clusterlab.reports import render, scorecard
from clusterlab.reports.scorecard import CONTRACT_BASIS, USED_BASIS

WEEK = "2026-W48"


def _inventory(tmp_path: Path, clusters: dict[str, tuple[str, int, int]]) -> Path:
    """inventory.toml (the format clusterlab ingests): cluster → (provider, nodes in inventory, contracted nodes)."""
    out = []
    for provider in sorted({p for p, _, _ in clusters.values()}):
        out.append(f"[providers.{provider}]\nusd_per_gpu_hour = 2.0\n")
    for name, (provider, nodes, contracted) in clusters.items():
        out.append(f'[clusters.{name}]\nprovider = "{provider}"\ngpus_per_node = 8\nnodes = "{name}-n[1-{nodes}]"\n'
                   f"contracted_nodes = {contracted}\n")
    path = tmp_path / "inventory.toml"
    path.write_text("\n".join(out))
    return path


def _xid_run(lab: Lab, run: str, cluster: str, hosts: list[str], fail_at_s: float, restart_s: float) -> None:
    """A run on `hosts` whose first attempt dies of an Xid 79 on its first host (its last step ends then) and
    restarts."""
    write_run(lab.con, run, 8 * len(hosts), [
        Attempt(0.0, 10, [5.0] * int((fail_at_s - 10.0) // 5.0), saves={50: 2.0}, hosts=hosts),
        Attempt(fail_at_s + restart_s, 10, [5.0] * 100, first_step=51, load_step=50, hosts=hosts)], cluster=cluster)
    write_events(lab.con, [{"t": fail_at_s, "host": hosts[0], "kind": "xid", "xid": 79,
                            "failure_mode": "gpu_fell_off_bus"}], name=f"dmesg-{run}")


def _clean_run(lab: Lab, run: str, cluster: str, hosts: list[str]) -> None:
    write_run(lab.con, run, 8 * len(hosts), [Attempt(0.0, 10, [5.0] * 200, hosts=hosts)], cluster=cluster)


def _provider(sc, name: str) -> dict:
    return sc.ranking.filter(pl.col("provider") == name).row(0, named=True)


def test_a_small_provider_loss_on_a_big_contract_scores_near_one(tmp_path: Path) -> None:
    # 24 nodes of 8 GPUs contracted for the whole week: 24 * 8 * 168 = 32,256 GPU-hours, all delivered
    with Lab(":memory:") as lab:
        lab.ingest(_inventory(tmp_path, {"big": ("acme", 24, 24)}))
        hosts = [f"big-n{i}" for i in range(1, 9)]
        _xid_run(lab, "r1", "big", hosts, fail_at_s=900.0, restart_s=400.0)
        sc = scorecard(lab.con, WEEK)
    prov = sc.providers.row(0, named=True)
    assert prov["contracted_gpu_hours"] == 32_256 and prov["delivered_share"] == 1.0
    lost = prov["provider_lost_gpu_hours"]
    assert 5 < lost < 100, lost  # the Xid's recompute, hang and restart on 64 GPUs
    r = _provider(sc, "acme")
    assert math.isclose(r["score"], (32_256 - lost) / 32_256, rel_tol=1e-9)
    assert r["score"] > 0.99 and r["score_basis"] == CONTRACT_BASIS
    assert r["verdict"].startswith("keep: score "), r["verdict"]


def test_missing_nodes_rank_below_a_fully_delivered_provider(tmp_path: Path) -> None:
    with Lab(":memory:") as lab:
        lab.ingest(_inventory(tmp_path, {"short": ("shorty", 8, 10), "full": ("healthy", 4, 4)}))
        _clean_run(lab, "r-short", "short", ["short-n1", "short-n2"])
        # a provider fault that costs a good share of what our (short) run used, but little of the contract
        _xid_run(lab, "r-full", "full", ["full-n1", "full-n2"], fail_at_s=900.0, restart_s=600.0)
        sc = scorecard(lab.con, WEEK)
    healthy, shorty = _provider(sc, "healthy"), _provider(sc, "shorty")
    used = sc.providers.filter(pl.col("provider") == "healthy").row(0, named=True)
    assert used["provider_lost_gpu_hours"] / used["gpu_hours"] > 0.2  # the old score: 1 * (1 - that) < 0.8
    assert sc.ranking["provider"].to_list() == ["healthy", "shorty"]
    assert math.isclose(shorty["score"], 0.8) and "2 of 10 contracted nodes missing" in shorty["verdict"]
    assert healthy["score"] > 0.95


def test_without_a_contract_the_score_falls_back_to_gpu_hours_used_and_says_so(tmp_path: Path) -> None:
    with Lab(":memory:") as lab:
        lab.ingest(_inventory(tmp_path, {"c": ("nocontract", 2, 0)}))
        _xid_run(lab, "r", "c", ["c-n1", "c-n2"], fail_at_s=900.0, restart_s=600.0)
        sc = scorecard(lab.con, WEEK)
    r, p = _provider(sc, "nocontract"), sc.providers.row(0, named=True)
    assert r["score_basis"] == USED_BASIS and USED_BASIS in r["verdict"]
    assert math.isclose(r["score"], (p["gpu_hours"] - p["provider_lost_gpu_hours"]) / p["gpu_hours"], rel_tol=1e-9)
    assert "(used − provider-lost) ÷ used" in render.render_scorecard(sc, "html", images={})

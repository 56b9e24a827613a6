"""What an ingest skips when nothing it reads changed: an inventory loaded twice in a row, the attempts' rebuild."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterlab import Lab
from clusterlab.ingest import attempts, inventory

INVENTORY = """[providers.{p}]
usd_per_gpu_hour = {usd}

[clusters.c1]
provider = "{p}"
gpu = "H100-SXM"
gpus_per_node = 8
nodes = "n-[01-02]"
"""


def _bundle(root: Path, name: str, provider: str, usd: float) -> Path:
    b = root / name / "bundle"
    (b / "runs" / "r" / "attempt-1").mkdir(parents=True)
    (b / "inventory.toml").write_text(INVENTORY.format(p=provider, usd=usd))
    (b / "runs" / "r" / "attempt-1" / "kern.log").write_text(
        f"Dec  3 08:00:0{len(name)} n-01 kernel: NVRM: Xid (PCI:0000:17:00): 79, pid=1, GPU has fallen off the bus.\n")
    return b


def _loads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    seen: list[Path] = []
    real = inventory.load_inventory
    monkeypatch.setattr(inventory, "load_inventory", lambda con, f, *more: seen.append(f) or real(con, f, *more))
    return seen


def test_the_same_inventory_in_bundle_after_bundle_is_loaded_once(tmp_path: Path, monkeypatch) -> None:
    roots = [_bundle(tmp_path, f"b{i}", "acme", 2.5) for i in range(3)]
    seen = _loads(monkeypatch)
    with Lab(tmp_path / "x.duckdb") as lab:
        summary = lab.ingest(*roots, workers=1)
        assert len(seen) == 1
        assert summary.inventory == {"providers": 3, "clusters": 3, "nodes": 6}  # as if each were loaded
        assert lab.sql("SELECT cluster FROM nodes ORDER BY host")["cluster"].to_list() == ["c1", "c1"]


def test_an_inventory_again_after_another_is_loaded_again(tmp_path: Path, monkeypatch) -> None:
    """A, then B (the same cluster under another provider), then A: the last one read wins, as it always did."""
    roots = [_bundle(tmp_path, "a1", "acme", 2.5), _bundle(tmp_path, "b2", "borealis", 1.9),
             _bundle(tmp_path, "a3", "acme", 2.5)]
    seen = _loads(monkeypatch)
    with Lab(tmp_path / "x.duckdb") as lab:
        lab.ingest(*roots, workers=1)
        assert len(seen) == 3
        assert lab.sql("SELECT provider FROM clusters")["provider"].to_list() == ["acme"]


def test_a_reingest_that_finds_nothing_new_does_not_rebuild_the_attempts(tmp_path: Path, monkeypatch) -> None:
    root = _bundle(tmp_path, "b", "acme", 2.5)
    with Lab(tmp_path / "x.duckdb") as lab:
        lab.ingest(root, workers=1)
        built = lab.attempts()
        rebuilt: list[int] = []
        real = attempts.refresh
        monkeypatch.setattr(attempts, "refresh", lambda con: rebuilt.append(1) or real(con))
        lab.ingest(root, workers=1)
        assert rebuilt == [] and lab.attempts().equals(built)
        (root / "runs" / "r" / "attempt-1" / "kern.log").write_text(
            "Dec  3 09:00:00 n-02 kernel: NVRM: Xid (PCI:0000:17:00): 79, pid=1, GPU has fallen off the bus.\n")
        lab.ingest(root, workers=1)
        assert rebuilt == [1]  # a file changed: rebuilt

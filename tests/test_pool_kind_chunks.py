"""The chunks sent to workers hold the files of a kind together (a bundle interleaves kinds per attempt directory,
and each kind's group in a chunk pays its collectors' fixed cost), and the results still come back in the plans'
order."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from clusterlab.ingest import pool


def _plans(attempts: int) -> list[SimpleNamespace]:
    """An attempt directory after another, each with a step file, an NCCL log, a node's kernel log and its output."""
    out = []
    for a in range(attempts):
        for rel in (f"runs/r/attempt-{a}/steps/rank-{a}.jsonl.gz", f"runs/r/attempt-{a}/nccl/n{a:02d}.log",
                    f"nodes/n{a:02d}/dmesg.log", f"runs/r/attempt-{a}/slurm-{a}.out"):
            out.append(SimpleNamespace(task=SimpleNamespace(path=Path("/b") / rel), size=1000))
    return out


def _run(plans: list[SimpleNamespace], chunks: int) -> tuple[list[list[SimpleNamespace]], list[SimpleNamespace]]:
    sent, back = [], []
    for window, places, chunk in pool._kind_chunks(plans, chunks):
        sent.append(chunk)
        back += window.put(places, chunk)  # a chunk's results: here the plans themselves
    return sent, back


def test_chunks_hold_one_kind_and_results_keep_the_plans_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pool, "CHUNK_FILES", 4)
    plans = _plans(12)  # 48 files of 4 kinds; windows of 4 chunks' worth (16 files: 4 of each kind)
    sent, back = _run(plans, 4)
    assert back == plans
    assert sorted(map(id, (p for c in sent for p in c))) == sorted(map(id, plans))
    kinds = [{pool._kind_hint(p) for p in c} for c in sent]
    assert all(len(k) == 1 for k in kinds), kinds
    assert len(sent) == 12


def test_the_byte_bound_still_cuts_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pool, "CHUNK_BYTES", 2500)
    plans = _plans(6)
    sent, back = _run(plans, 2)
    assert back == plans
    assert max(sum(p.size for p in c) for c in sent) <= 3000


def test_kind_hints_of_a_bundle() -> None:
    hint = [pool._kind_hint(p) for p in _plans(2)]
    assert hint[0] == hint[4] == ("jsonl", "steps")
    assert hint[1] == hint[5] == ("log", "nccl")
    assert hint[2] == hint[6] == ("log", "n")
    assert hint[3] == hint[7] == ("out", "attempt-")

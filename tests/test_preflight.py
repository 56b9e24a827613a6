"""Preflight: flags against the fleet median, a ring that isolates a bad link, and a real 2-process run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from clusterlab import Lab
from clusterlab.cli import main
from clusterlab.torchtools.preflight import assess, ring_links


def _rank(rank: int, host: str, tflops: float = 100.0, gbps: float = 1000.0) -> dict:
    return {"preflight": "rank", "ts": "2026-12-03T10:00:00+00:00", "host": host, "rank": rank,
            "matmul_tflops": tflops, "mem_gbps": gbps, "allreduce_busbw_gbps": 300.0}


@pytest.mark.parametrize("n", range(2, 10))
def test_ring_phases_cover_every_link_once_and_never_share_a_rank(n: int) -> None:
    phases = ring_links(n)
    links = [lk for p in phases for lk in p]
    assert sorted(links) == [(i, (i + 1) % n) for i in range(n if n > 2 else 1)]
    for p in phases:
        ends = [r for lk in p for r in lk]
        assert len(ends) == len(set(ends))


def test_a_slow_device_is_flagged_with_its_figure_and_the_median() -> None:
    ranks = [_rank(0, "a"), _rank(1, "a", tflops=60.0), _rank(2, "b"), _rank(3, "b", tflops=95.0)]
    recs = assess(ranks, {}, 0.2, 1 << 20)
    by_rank = {r["rank"]: r for r in recs if r["preflight"] == "rank"}
    assert [r for r, rec in by_rank.items() if rec["flagged"]] == [1]
    assert by_rank[1]["reason"] == "matmul_tflops 60 is 38% below the fleet median 97.5"
    hosts = {r["host"]: r for r in recs if r["preflight"] == "host"}
    assert hosts["a"]["flagged"] and not hosts["b"]["flagged"]


def test_the_ring_puts_a_bad_nic_on_the_rank_at_both_slow_links() -> None:
    ranks = [_rank(i, f"n{i}") for i in range(5)]
    links = {(0, 1): 40.0, (1, 2): 41.0, (2, 3): 5.0, (3, 4): 6.0, (4, 0): 39.0}
    recs = assess(ranks, links, 0.2, 1 << 20)
    flagged = [r["rank"] for r in recs if r["preflight"] == "rank" and r["flagged"]]
    assert flagged == [3]
    assert "both ring links slow (2<->3, 3<->4)" in recs[3]["reason"]
    hosts = {r["host"]: r for r in recs if r["preflight"] == "host"}
    assert hosts["n3"]["flagged"] and not any(hosts[h]["flagged"] or hosts[h]["suspect_link"] for h in ("n2", "n4"))


def test_one_bad_cable_makes_both_ends_suspect_but_flags_no_device() -> None:
    ranks = [_rank(i, f"n{i}") for i in range(4)]
    recs = assess(ranks, {(0, 1): 40.0, (1, 2): 4.0, (2, 3): 41.0, (3, 0): 39.0}, 0.2, 1 << 20)
    hosts = {r["host"]: r for r in recs if r["preflight"] == "host"}
    assert {h for h, r in hosts.items() if r["suspect_link"]} == {"n1", "n2"}
    assert not any(r["flagged"] for r in recs if r["preflight"] != "link")


@pytest.mark.slow
def test_preflight_on_two_cpu_processes_flags_the_slowed_one(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CLUSTERLAB_HOST", "node{rank}")
    out = tmp_path / "preflight.jsonl"
    res = CliRunner().invoke(main, ["preflight", "--nproc", "2", "--reps", "3", "--out", str(out), "--json",
                                    "--slow-rank", "1", "--slow-factor", "4"])
    assert res.exit_code == 1, res.output + res.stderr  # 1: something was flagged
    doc = json.loads(res.stdout)
    r0, r1 = doc["ranks"]
    for r in (r0, r1):
        assert r["device"] == "cpu" and r["backend"] == "gloo" and r["dtype"] == "float32"
        assert r["matmul_tflops"] > 0 and r["mem_gbps"] > 0 and r["allreduce_busbw_gbps"] > 0
    assert (r0["host"], r0["flagged"], r1["host"], r1["flagged"]) == ("node0", False, "node1", True)
    assert "below the fleet median" in r1["reason"] and r1["injected_slowdown"] == 4.0
    assert len(doc["links"]) == 1 and doc["links"][0]["p2p_gbps"] > 0
    with Lab(":memory:") as lab:
        summary = lab.ingest(out)
        assert summary.rows["events"] == 5 and summary.to_dict()["unparsed_lines"] == 0
        hosts = dict(lab.sql("SELECT host, severity FROM events WHERE kind = 'preflight_host'").rows())
    assert hosts == {"node0": "info", "node1": "error"}


def test_preflight_without_out_keeps_its_records_in_the_state_folder_not_the_working_one(tmp_path: Path,
                                                                                         monkeypatch) -> None:
    import subprocess

    from clusterlab.torchtools import preflight

    pytest.importorskip("torch")
    cwd, state = tmp_path / "checkout", tmp_path / "state"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    for var in ("RANK", "WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    launched: list[list[str]] = []

    def fake_torchrun(argv, **kwargs):  # the workers' part: rank 0 appends its records to --out
        launched.append(argv)
        out = Path(argv[argv.index("--out") + 1])
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({**_rank(0, "n0"), "flagged": False, "reason": ""}) + "\n")
        return subprocess.CompletedProcess(argv, 0, b"", b"")

    monkeypatch.setattr(preflight.subprocess, "run", fake_torchrun)
    res = CliRunner().invoke(main, ["preflight", "--nproc", "2", "--json"])
    assert res.exit_code == 0, res.output + res.stderr
    assert json.loads(res.stdout)["ranks"][0]["host"] == "n0" and launched
    assert list(cwd.iterdir()) == []
    written = list((state / "clusterlab" / "preflight").glob("preflight-*.jsonl"))
    assert len(written) == 1 and preflight.records_dir() == written[0].parent
    monkeypatch.delenv("XDG_STATE_HOME")
    assert preflight.records_dir() == Path.home() / ".local" / "state" / "clusterlab" / "preflight"

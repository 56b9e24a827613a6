"""Incidents find the cause, not the symptom; the ledger accounts for every GPU-second exactly once."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from timelines import Attempt, write_events, write_run

from clusterlab import Lab
from clusterlab.account import advice, ledger
from clusterlab.cli import main
from clusterlab.diagnose import incidents
from clusterlab.reports import render
from conftest import SAMPLES


def _conserves(a) -> None:
    led = a.ledger
    assert (led["gpu_hours"] >= -1e-6 * a.gpu_hours).all()  # microsecond timestamps round
    assert math.isclose(led["gpu_hours"].sum(), a.gpus * a.wall_hours, rel_tol=1e-6)
    if a.steady_mfu is not None:
        assert math.isclose(a.effective_mfu + led["lost_mfu"].sum(), a.steady_mfu, rel_tol=1e-6)


attempt_st = st.builds(
    Attempt,
    start_s=st.just(0.0),
    startup_s=st.floats(0, 600),
    step_s=st.lists(st.floats(0.5, 20), min_size=1, max_size=40),
    tail_s=st.floats(0, 900),
    saves=st.dictionaries(st.integers(1, 40), st.floats(0, 300), max_size=3),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=st.lists(attempt_st, min_size=1, max_size=4), gaps=st.lists(st.floats(0, 3600), min_size=4, max_size=4),
       gpus=st.integers(1, 4096))
def test_ledger_adds_up_to_gpus_times_wall_time(plan: list[Attempt], gaps: list[float], gpus: int) -> None:
    t, step = 0.0, 1
    for a, gap in zip(plan, gaps, strict=False):
        a.start_s, a.first_step = t, step
        a.saves = {a.first_step + k - 1: v for k, v in a.saves.items() if k <= len(a.step_s)}
        step = a.first_step + len(a.step_s) // 2  # each restart resumes half-way back
        t = a.end_s + gap
    with Lab(":memory:") as lab:
        write_run(lab.con, "r", gpus, plan)
        _conserves(lab.attribute("r"))


def test_overlapping_attempts_give_a_flagged_ledger_naming_the_sources(lab: Lab) -> None:
    # attempt 1's logs run 30 s past attempt 2's first line: the answer is still a ledger, exact over the run, and
    # it says which evidence disagreed and by how much (issue 28: never refuse a run)
    write_run(lab.con, "r", 8, [Attempt(0, 10, [5.0] * 10), Attempt(30, 10, [5.0] * 10, first_step=11)])
    a = lab.attribute("r")
    flags = [n for n in a.notes if n.startswith("ledger flagged")]
    assert flags and "attempt 1 (end from its logs) overlaps attempt 2 (start from its logs) by 30 s" in flags[0]
    assert (a.rows["seconds"] >= 0).all()
    _conserves(a)


def test_flood_of_watchdog_timeouts_points_to_the_xid_host(lab: Lab) -> None:
    hosts = [f"n-{i:03d}" for i in range(128)]
    write_run(lab.con, "big", 1024, [Attempt(0, 60, [2.0] * 100, tail_s=700, hosts=hosts),
                                     Attempt(2000, 60, [2.0] * 10, first_step=101, hosts=hosts)])
    end = 60 + 200 + 700
    write_events(lab.con, [{"t": end - 650, "host": "n-042", "kind": "xid", "xid": 79,
                            "failure_mode": "gpu_fell_off_bus"}], name="dmesg")
    write_events(lab.con, [{"t": end - 5 + r / 1000, "source": "torch", "kind": "watchdog_timeout", "rank": r,
                            "failure_mode": "nccl_timeout", "host": hosts[r // 8]} for r in range(1024)],
                 run="big", attempt=1)
    # harmless: an Xid 13 of another job on a host outside this run, and an ECC follow-on Xid 63
    write_events(lab.con, [{"t": end - 600, "host": "other-001", "kind": "xid", "xid": 13,
                            "failure_mode": "cuda_error"},
                           {"t": end - 700, "host": "n-001", "kind": "xid", "xid": 63,
                            "failure_mode": "gpu_memory_ecc"}], name="dmesg2")
    inc = lab.incidents("big")
    ends = inc.filter(inc["kind"] == "attempt_end")
    assert ends.height == 1
    row = ends.row(0, named=True)
    assert (row["host"], row["failure_mode"], row["blame"]) == ("n-042", "gpu_fell_off_bus", "provider")
    assert row["action"] == "drain node"
    assert row["evidence_count"] == 1025
    assert lab.evidence(row["incident_id"])["xid"][0] == 79


def test_attempt_without_evidence_is_unknown_not_guessed(lab: Lab) -> None:
    write_run(lab.con, "r", 8, [Attempt(0, 10, [5.0] * 10, tail_s=30), Attempt(200, 10, [5.0] * 10, first_step=6)])
    inc = lab.incidents("r")
    assert inc.height == 1
    assert (inc["failure_mode"][0], inc["host"][0], inc["blame"][0]) == ("unknown", None, "unknown")


def test_ib_error_naming_a_peer_blames_the_peer(lab: Lab) -> None:
    write_run(lab.con, "r", 16, [Attempt(0, 10, [5.0] * 10, tail_s=30, hosts=["a", "b"]),
                                 Attempt(200, 10, [5.0] * 5, first_step=6, hosts=["a", "b"])])
    lab.con.execute("INSERT INTO facts (file_id, run, attempt, line, host, key, value) VALUES "
                    "(1, 'r', 1, 1, 'a', 'nccl_bootstrap_if', 'ib0:10.0.0.1'),"
                    "(1, 'r', 1, 2, 'b', 'nccl_bootstrap_if', 'ib0:10.0.0.2')")
    write_events(lab.con, [{"t": 70, "source": "nccl", "host": "a", "kind": "ib_completion_error", "peer": "10.0.0.2",
                            "failure_mode": "network"},
                           {"t": 75, "source": "torch", "host": "a", "kind": "watchdog_timeout",
                            "failure_mode": "nccl_timeout"}], run="r", attempt=1)
    inc = lab.incidents("r")
    assert (inc["failure_mode"][0], inc["host"][0]) == ("network", "b")


def test_annotation_overrides_and_shows_it(lab: Lab) -> None:
    write_run(lab.con, "r", 8, [Attempt(0, 10, [5.0] * 10, tail_s=30), Attempt(200, 10, [5.0] * 10, first_step=6)])
    iid = lab.incidents("r")["incident_id"][0]
    lab.annotate(iid, failure_mode="host_hw", host="h-002", note="DIMM replaced", ticket="ACME-123",
                 status="with_provider")
    row = lab.incidents("r").row(0, named=True)
    assert (row["failure_mode"], row["host"], row["blame"], row["overridden"]) == ("host_hw", "h-002", "provider", True)
    assert (row["detected_failure_mode"], row["ticket"], row["status"]) == ("unknown", "ACME-123", "with_provider")
    by_mode = lab.attribute("r").by("failure_mode")
    assert "host_hw" in by_mode["failure_mode"].to_list()
    with pytest.raises(ValueError, match="unknown failure mode"):
        lab.annotate(iid, failure_mode="cosmic_rays")


def test_young_daly_interval() -> None:
    # small save cost: Daly's optimum is close to Young's sqrt(2 delta M)
    assert math.isclose(advice.daly_interval(10, 36_000), math.sqrt(2 * 10 * 36_000), rel_tol=0.02)
    best = advice.daly_interval(60, 7200)
    assert advice.waste_fraction(best, 60, 7200) < advice.waste_fraction(best * 2, 60, 7200)
    assert advice.waste_fraction(best, 60, 7200) < advice.waste_fraction(best / 2, 60, 7200)


@pytest.fixture(scope="module")
def bundle_lab(bundle_db_copy):
    with Lab(bundle_db_copy) as lab:
        yield lab


def test_bundle_incidents_name_the_root_cause_hosts(bundle_lab: Lab) -> None:
    inc = bundle_lab.incidents()
    got = {(r["incident_id"], r["failure_mode"], r["host"]) for r in inc.iter_rows(named=True)}
    assert got == {
        ("llama8b-pretrain:1:end", "gpu_fell_off_bus", "east-003"),  # Xid 79 ten minutes before 31 watchdogs
        ("llama8b-pretrain:2:end", "network", "east-002"),  # mlx5 link down; NCCL names 10.10.0.2
        ("llama8b-pretrain:2:straggler:east-005:331", "straggler", "east-005"),  # steps 331-390, +25% compute
        ("llama8b-pretrain:3:checkpoint-stall:600", "filesystem_io", "east-004"),  # 201 s save, Lustre errors
        ("llama8b-pretrain:3:end", "time_limit", None),
        ("mm7b-sft:1:checkpoint-stall:200", "filesystem_io", "bor-002"),  # 252 s save, NFS not responding
        ("mm7b-sft:1:end", "cuda_oom", "bor-001"),  # rank 5's OOM, not bor-002's "remote peer" errors
        ("ds1b-ablation:1:end", "preemption", "west-03"),
        ("hf-eval-sweep:1:end", "manual_stop", None),
    }


def test_bundle_ledger_by_hand(bundle_lab: Lab) -> None:
    """llama8b-pretrain, 32 GPUs, each attempt's span from its sacct record (jobs 4101-4103, the allocation):
    wall 08:00:00 → 09:44:35 = 6275 s → 55.778 GPU-h;
    restart (08:31:53 → 08:43:53) + (09:09:35 → 09:19:35) = 720 + 600 s → 11.733 GPU-h;
    hang: root event → attempt end (DESIGN's ledger): the Xid 79 at 08:20:25.507, 0.408 s after the last step's
    end, → 687.851 - 0.408 s; the link down at 09:08:52.972, 0.509 s after it, → 42.509 - 0.509 s; the time limit
    kills the step in flight, nothing hangs: 6.493 GPU-h;
    checkpoint: the 201 s save at 600 is most of it: 201 s x 32 = 1.787 GPU-h of the stall incident;
    recompute: steps 201-270, 501-520 and 701-792 at the 4.061 s baseline = 182 x 4.061 s, plus the three steps in
    flight the root events cut short, 0.408 + 0.509 + 2.872 s: x 32 ≈ 6.60 GPU-h."""
    a = bundle_lab.attribute("llama8b-pretrain")
    led = dict(zip(a.ledger["category"], a.ledger["gpu_hours"], strict=True))
    assert a.gpus == 32 and math.isclose(a.gpu_hours, 6275 * 32 / 3600, rel_tol=1e-9)
    assert math.isclose(led["restart"], (720 + 600) * 32 / 3600, rel_tol=1e-6)
    # the per-rank ends are moved onto the training log's clock (the median difference at the steps both
    # report, the log's whole-second stamps refined with its step times): under 0.1 s per attempt here
    assert math.isclose(led["hang"], (687.851 - 0.408 + 42.509 - 0.509) * 32 / 3600, abs_tol=0.3 * 32 / 3600)
    assert math.isclose(led["recompute"], (182 * 4.061 + 0.408 + 0.509 + 2.872) * 32 / 3600, rel_tol=0.01)
    stall = a.rows.filter(a.rows["incident_id"] == "llama8b-pretrain:3:checkpoint-stall:600")["gpu_hours"].sum()
    assert math.isclose(stall, 201 * 32 / 3600, rel_tol=0.01)
    assert led["straggler"] > 0.4  # east-005: 60 steps about 1 s slower
    _conserves(a)
    assert 0.40 < a.steady_mfu < 0.50  # 256 x 4096 tokens x 6N-plus-attention FLOPs / (4.061 s x 32 x 989 TFLOP/s)
    adv = a.checkpoint_advice
    # acme-east: 2 failures (Xid 79, IB link) in the ~44 GPU-hours its attempts ran (restarts excluded)
    # → a 32-GPU job fails every ~0.68 h; saves take ~20 s
    held = a.gpu_hours - led["restart"]
    assert adv.failures == 2 and math.isclose(adv.mtbf_job_hours, held / 2 / 32, rel_tol=1e-6)
    assert math.isclose(adv.optimal_interval_s, advice.daly_interval(adv.save_s, adv.mtbf_job_hours * 3600))
    assert adv.gpu_hours_saved >= 0


def test_attribute_json_has_the_documented_shape(tmp_path: Path) -> None:
    db = tmp_path / "b.duckdb"
    runner = CliRunner()
    assert runner.invoke(main, ["--db", str(db), "ingest", str(SAMPLES / "bundle")]).exit_code == 0
    res = runner.invoke(main, ["--db", str(db), "attribute", "--run", "mm7b-sft", "--json"])
    doc = json.loads(res.stdout)
    for key in ("run", "gpus", "wall_hours", "gpu_hours", "steady_mfu", "effective_mfu", "ledger",
                "by_failure_mode", "by_host", "by_cluster", "by_provider", "incidents"):
        assert key in doc
    assert [r["category"] for r in doc["ledger"]] == ledger.CATEGORIES
    assert {"gpu_hours_lost", "lost_mfu", "usd_lost"} <= set(doc["by_provider"][0])
    oom = next(i for i in doc["incidents"] if i["failure_mode"] == "cuda_oom")
    assert oom["evidence"][0]["file"].endswith("bor-001.log") and oom["evidence"][0]["line"] > 0
    res = runner.invoke(main, ["--db", str(db), "attribute", "--run", "no-such-run"])
    assert res.exit_code == 2 and "no-such-run" in res.stderr
    res = runner.invoke(main, ["--db", str(db), "incidents", "--json"])
    assert {"incident_id", "run", "attempt", "root_ts", "exit_ts", "failure_mode", "blame", "host", "cluster",
            "provider", "gpu_hours_lost", "evidence_count"} <= set(json.loads(res.stdout)[0])


def test_a_straggler_is_found_also_while_everyone_is_slowed() -> None:
    """Steps 10-20: h7 alone 25% slow. 25-35: the fleet 12% slow (contention) and h3 25% slower on top.
    36-40: the fleet slow and nobody in particular: a slowdown, not a straggler."""
    rows = []
    for step in range(1, 41):
        fleet = 1.12 if step >= 25 else 1.0
        slow = "h7" if 10 <= step <= 20 else "h3" if 25 <= step <= 35 else None
        mins, maxs = fleet * 0.99, fleet * (1.25 if slow else 1.01)
        rows.append({"run": "r", "attempt": 1, "step": step, "ts": None, "step_s": maxs, "data_s": 0.0,
                     "avg_c": fleet, "min_c": mins, "max_c": maxs, "n_c": 8, "slow_host": slow or "h1"})
    profile = pl.DataFrame(rows, schema_overrides={"attempt": pl.Int32, "ts": pl.Datetime("us")})
    s = incidents.Settings()
    found = incidents.straggler_incidents(incidents.slow_steps(profile, s), s)
    assert found.select("host", "first_step", "last_step").rows() == [("h7", 10, 20), ("h3", 25, 35)]


def test_a_slowdown_with_concurrent_evidence_is_an_incident_on_its_host(tmp_path: Path) -> None:
    """Steps 21-30 take 7 s instead of 5 with an NFS timeout on h-001 as they start; 41-60 take 9 s with no
    evidence at their onset, only a link flap on h-001 three minutes later, at their end (not why they began)."""
    step_s = [7.0 if 21 <= i <= 30 else 9.0 if 41 <= i <= 60 else 5.0 for i in range(1, 101)]
    end_of_second = 30 + 5 * 20 + 7 * 10 + 5 * 10 + 9 * 20 - 2
    with Lab(tmp_path / "db.duckdb") as lab:
        write_run(lab.con, "r", 16, [Attempt(0, 30, step_s, tail_s=5)])
        write_events(lab.con, [{"t": 30 + 5 * 20 + 3, "host": "h-001", "kind": "nfs_timeout",
                                "failure_mode": "filesystem_io", "text": "nfs: server fs1 not responding, timed out"},
                               {"t": 30 + 5 * 20 + 4, "host": "h-099", "kind": "ib_link_down",  # not the run's host
                                "failure_mode": "network", "text": "mlx5_core: link down"},
                               {"t": end_of_second, "host": "h-001", "kind": "ib_link_down", "failure_mode": "network",
                                "text": "mlx5_core 0000:40:00.0 mlx5_2: Port: 1 Link DOWN"}])
        a = lab.attribute("r")
        listed = lab.incidents("r")
        evidence = lab.evidence("r:1:slowdown:21")
        report = render.render_incident(lab.report("r:1:slowdown:21"), "md")
    slow = a.rows.filter(pl.col("category") == "slowdown")
    tied = slow.filter(pl.col("incident_id") == "r:1:slowdown:21")
    assert set(tied["host"]) == {"h-001"} and set(tied["failure_mode"]) == {"filesystem_io"}
    assert tied["seconds"].sum() == pytest.approx(10 * 2.0)
    assert slow.filter(pl.col("incident_id") == "none")["seconds"].sum() == pytest.approx(20 * 4.0)
    assert a.incidents.filter(pl.col("kind") == "slowdown").height == 1
    inc = a.incidents.filter(pl.col("kind") == "slowdown").row(0, named=True)
    assert (inc["host"], inc["failure_mode"], inc["first_step"], inc["last_step"]) == ("h-001", "filesystem_io", 21, 30)
    assert inc["gpu_hours_lost"] == pytest.approx(20.0 * 16 / 3600) and inc["blame"] == "provider"
    assert "r:1:slowdown:21" in listed["incident_id"].to_list()
    assert evidence["text"].to_list() == ["nfs: server fs1 not responding, timed out"]
    assert "slow steps begin" in report and "nfs: server fs1 not responding" in report


def test_a_ledger_that_still_contradicts_itself_is_flagged_not_refused() -> None:
    rows = pl.DataFrame({"category": ["productive", "restart", "hang"], "attempt": [1, 1, 2],
                         "seconds": [100.0, -20.0, 30.0]})
    with pytest.raises(ledger.LedgerError) as refused:
        ledger.check(rows, 110.0)
    fixed, note = ledger.flagged(rows, 110.0, refused.value)
    ledger.check(fixed, 110.0)  # exact over the run, nothing negative
    assert note.startswith("ledger flagged: category restart of attempt 1 would be -20.000 s")
    assert fixed["seconds"].to_list() == pytest.approx([100 * 110 / 130, 0.0, 30 * 110 / 130])
    short = pl.DataFrame({"category": ["productive", "restart"], "attempt": [1, 1], "seconds": [100.0, -20.0]})
    fixed, note = ledger.flagged(short, 130.0, refused.value)
    ledger.check(fixed, 130.0)
    assert fixed.filter(pl.col("category") == "idle")["seconds"].to_list() == [30.0] and "idle" in note

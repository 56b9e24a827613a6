"""What an incident report says is so: the relaunch of the attempt it ended (or why there is none), the time a
straggler lost apart from the span it lost it in, a hang only where the job stopped stepping, and a straggler's
own evidence (the slow host's step records, and the telemetry that explains them)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from clusterlab import Lab
from clusterlab.reports import incident_report, render
from clusterlab.simulator import simulate
from clusterlab.simulator.telemetry import add_telemetry

STRAGGLER = "llama8b-pretrain:2:straggler:east-005:331"
STALL = "llama8b-pretrain:3:checkpoint-stall:600"
TIME_LIMIT = "llama8b-pretrain:3:end"
XID_79 = "llama8b-pretrain:1:end"


@pytest.fixture(scope="module")
def blab(bundle_db_copy: Path):
    with Lab(bundle_db_copy, read_only=True) as lab:
        yield lab


@pytest.fixture(scope="module")
def reports(blab: Lab) -> dict:
    return {i: incident_report(blab.con, i) for i in (STRAGGLER, STALL, TIME_LIMIT, XID_79)}


def test_an_incident_inside_an_attempt_names_its_end_and_the_attempt_after_it(reports: dict) -> None:
    """The straggler of attempt 2 did not end it; attempt 3 exists: never 'no later attempt'."""
    rep = reports[STRAGGLER]
    assert rep.relaunch is None
    assert rep.relaunch_note == ("This incident did not end attempt 2: the attempt ran on to its end, incident "
                                 "llama8b-pretrain:2:end; attempt 3 followed it.")
    for fmt in ("md", "html"):
        doc = render.render_incident(rep, fmt)
        assert "No later attempt" not in doc and "attempt 3 followed it" in doc
    assert "no later attempt of this run is in the store" in reports[STALL].relaunch_note
    assert reports[TIME_LIMIT].relaunch_note == "No later attempt of this run in the store."
    assert reports[XID_79].relaunch["attempt"] == 2 and reports[XID_79].relaunch_note is None


def test_a_stragglers_time_lost_is_not_labelled_as_its_wall_time(reports: dict) -> None:
    """53 s lost by each GPU over 4 min 57 s of slow steps: both figures, each under its own name."""
    rep = reports[STRAGGLER]
    row = rep.ledger.row(0, named=True)
    assert row["category"] == "straggler"
    assert row["seconds"] == pytest.approx(53.176, abs=0.01)
    assert row["span_s"] == pytest.approx(296.884, abs=0.01)
    md = render.render_incident(rep, "md")
    assert "Wall time" not in md
    assert "| Span | Time lost per GPU |" in md and "| 4 min 57 s | 53 s |" in md
    assert "straggler: 53 s lost in the 4 min 57 s until" in md
    assert "Span" in render.render_incident(rep, "html")


def test_a_time_limit_one_step_after_the_last_record_is_no_hang(reports: dict) -> None:
    """The time limit came 3 s after the last step record of 4 s steps: the step under way, thrown away with the
    steps since the last save (recompute up to the kill), not a hang. The Xid 79's 11 min 27 s of silence, from the
    Xid to the exit, is one; the 0.4 s of the step it cut short are not."""
    rep = reports[TIME_LIMIT]
    assert "hang" not in rep.summary
    assert not rep.timeline.filter(pl.col("detail").str.starts_with("hang:")).height
    rec = rep.timeline.filter(pl.col("detail").str.starts_with("recompute:")).row(0, named=True)
    assert rec["detail"].endswith("until 2026-11-24 09:44:35 UTC")  # the kill, not the last step record
    assert "after 11 min 27 s of hang" in reports[XID_79].summary
    hang = reports[XID_79].timeline.filter(pl.col("detail").str.starts_with("hang:")).row(0, named=True)
    assert hang["event"] == "the root event: the job hangs until it exits"
    assert hang["ts"] == reports[XID_79].timeline.filter(pl.col("event") == "root cause: xid")["ts"][0]
    assert not any("not a hang" in n for n in reports[XID_79].notes)


def test_a_straggler_cites_the_slow_hosts_step_records(blab: Lab) -> None:
    """Its evidence is the slow host's slowest rank's records (file and line) of the slowest, first and last slow
    step, each as the file holds it."""
    ev = blab.evidence(STRAGGLER)
    assert ev["rank_in_incident"].to_list() == [1, 2, 3]
    assert set(ev["host"]) == {"east-005"} and set(ev["kind"]) == {"slow_step"}
    assert ev["text"][0].startswith("step 355: rank 31 on east-005 computed 4.415 s where the attempt's usual is ")
    assert ev["text"][0].endswith("; the slowest of 60 slow steps")
    assert [t.split(":")[0] for t in ev["text"]] == ["step 355", "step 331", "step 390"]
    for r in ev.iter_rows(named=True):
        rec = blab.sql("""SELECT r.host, r.rank, r.step FROM rank_steps r JOIN ingested_files f USING (file_id)
                          WHERE f.path = ? AND r.line = ?""", [r["file"], r["line"]])
        assert rec.height == 1 and rec.row(0) == (r["host"], r["rank"], int(r["text"].split(":")[0].split()[1]))
    inc = blab.incidents().filter(pl.col("incident_id") == STRAGGLER).row(0, named=True)
    assert inc["evidence_count"] == 3


def test_a_throttled_stragglers_evidence_leads_with_the_telemetry(tmp_path: Path) -> None:
    """With dcgm-exporter scrapes, the throttling GPU's episode explains the stretch and comes first; the step
    records that show it follow."""
    simulate(tmp_path / "sim", seed=3, providers=1, clusters_per_provider=1, nodes_per_cluster=4, days=0.2)
    add_telemetry(tmp_path / "sim", 3)
    with Lab(tmp_path / "sim.duckdb") as lab:
        lab.ingest(tmp_path / "sim")
        inc = lab.incidents().filter(pl.col("incident_id").str.contains(":straggler:")).row(0, named=True)
        ev = lab.evidence(inc["incident_id"])
    assert inc["failure_mode"] == "gpu_throttle"
    assert ev["source"][0] == "telemetry" and "throttled" in ev["text"][0] and ev["file"][0].endswith(".prom")
    steps = ev.filter(pl.col("kind") == "slow_step")
    assert steps.height == 3 and set(steps["host"]) == {inc["host"]}
    assert steps["file"].str.ends_with(".jsonl").all() and steps["line"].is_not_null().all()

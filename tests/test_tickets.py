"""Provider tickets: timelines from single steps and from a CSV export, and the scorecard's support table on a
hand-made ticket history."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from clusterlab import Lab
from clusterlab.cli import main
from clusterlab.reports import render
from clusterlab.reports.scorecard import scorecard
from clusterlab.triage import tickets

T = dt.datetime(2026, 11, 23, 8, 0)

# A hand-made history: borealis takes 31 h and 7 h to acknowledge, answers 2 of its 3 tickets about faults the
# evidence put on its hardware "no fault found" / "user's code", and h-003 fails again after its "fixed".
CSV = """Ticket,Provider,Host,Incident,Created,First response,Answered,Resolution,Resolved,Reopened
B-1,borealis,h-001,r:1:gpu,2026-11-23T08:00,2026-11-24T15:00,2026-11-25T08:00,No fault found,2026-11-25T09:00,
B-2,borealis,h-002,r:2:gpu,2026-11-23T10:00,2026-11-23T17:00,2026-11-24T10:00,user's code,2026-11-24T12:00,
B-3,borealis,h-003,r:3:gpu,2026-11-24T08:00,2026-11-24T09:00,2026-11-24T20:00,fixed,2026-11-24T20:00,2026-11-26T08:00
B-4,borealis,h-004,r:4:oom,2026-11-24T09:00,,,,,
C-1,cirrus,h-101,,2026-11-23T09:00,2026-11-23T10:00,,hardware replaced,2026-11-23T18:00,
"""

HISTORY = pl.DataFrame({
    "incident_id": ["r:1:gpu", "r:2:gpu", "r:3:gpu", "r:4:oom", "r:5:gpu", "r:6:gpu"],
    "host": ["h-001", "h-002", "h-003", "h-004", "h-003", "h-101"],
    "blame": ["provider", "provider", "provider", "user", "provider", "provider"],
    "root_ts": [T - dt.timedelta(hours=1), T, T + dt.timedelta(hours=20), T, T + dt.timedelta(days=3),
                T - dt.timedelta(hours=5)],
})


@pytest.fixture
def history_lab(tmp_path: Path) -> Lab:
    csv = tmp_path / "export.csv"
    csv.write_text(CSV)
    with Lab(":memory:") as lab:
        assert tickets.import_csv(lab.con, csv) == 17  # 4 + 4 + 5 + 1 + 3 steps
        assert tickets.import_csv(lab.con, csv) == 0  # the same export again adds nothing
        yield lab


def test_a_csv_export_gives_each_ticket_its_timeline(history_lab: Lab) -> None:
    t = {r["ticket"]: r for r in tickets.timelines(history_lab.con).to_dicts()}
    assert t["B-1"]["hours_to_acknowledge"] == 31.0 and t["B-1"]["hours_to_resolve"] == 49.0
    assert (t["B-1"]["answer"], t["B-2"]["answer"], t["C-1"]["answer"]) == ("no_fault_found", "user_code",
                                                                           "hardware_replaced")
    assert t["B-3"]["reopened"] == 1 and t["B-4"]["resolved_at"] is None and t["B-4"]["answer"] is None


def test_the_support_table_sets_answers_against_the_evidence(history_lab: Lab) -> None:
    s = {r["provider"]: r for r in tickets.support(history_lab.con, HISTORY).to_dicts()}
    b = s["borealis"]
    assert (b["tickets"], b["open"]) == (4, 1)
    assert b["median_hours_to_acknowledge"] == 7.0  # 31, 7, 1
    assert b["median_hours_to_resolve"] == 26.0  # 49, 26, 12
    assert (b["hardware_tickets"], b["denied"]) == (3, 2) and b["denied_share"] == pytest.approx(2 / 3)
    assert b["repeats_after_fix"] == 1  # r:5 on h-003 after B-3's "fixed"
    c = s["cirrus"]
    assert (c["tickets"], c["hardware_tickets"], c["denied"], c["repeats_after_fix"]) == (1, 0, 0, 0)
    assert c["denied_share"] is None


def test_single_steps_make_a_timeline_and_bad_ones_are_refused(tmp_path: Path) -> None:
    with Lab(":memory:") as lab:
        tickets.record(lab.con, "X-1", "opened", T, provider="borealis", host="h-001")
        tickets.record(lab.con, "X-1", "acknowledged", T + dt.timedelta(hours=3))
        tickets.record(lab.con, "X-1", "resolved", T + dt.timedelta(hours=9), answer="No fault found")
        row = tickets.timelines(lab.con).row(0, named=True)
        with pytest.raises(tickets.TicketError, match="unknown answer"):
            tickets.record(lab.con, "X-1", "answered", T, answer="rebooted it, works now")
        with pytest.raises(tickets.TicketError, match="unknown step"):
            tickets.record(lab.con, "X-1", "escalated", T)
    assert (row["hours_to_acknowledge"], row["hours_to_resolve"], row["answer"]) == (3.0, 9.0, "no_fault_found")
    bad = tmp_path / "bad.csv"
    bad.write_text("Ticket,Created\nY-1,2026-11-23T08:00\nY-2,next tuesday\n")
    with Lab(":memory:") as lab, pytest.raises(tickets.TicketError, match=r"bad.csv:3: opened time 'next tuesday'"):
        tickets.import_csv(lab.con, bad)


def test_the_cli_records_imports_and_lists_and_the_scorecard_shows_support(tmp_path: Path) -> None:
    db, csv = tmp_path / "db.duckdb", tmp_path / "export.csv"
    csv.write_text(CSV)
    with Lab(db):
        pass
    runner = CliRunner()
    out = runner.invoke(main, ["--db", str(db), "ticket", "import", str(csv)])
    assert out.exit_code == 0, out.output
    out = runner.invoke(main, ["--db", str(db), "ticket", "add", "Z-9", "opened", "--at", "2026-11-25T10:00",
                               "--provider", "cirrus", "--host", "h-102"])
    assert out.exit_code == 0, out.output
    bad = runner.invoke(main, ["--db", str(db), "ticket", "add", "Z-9", "answered", "--at", "2026-11-25T11:00",
                               "--answer", "meh"])
    assert bad.exit_code == 2 and "unknown answer" in bad.output
    listed = runner.invoke(main, ["--db", str(db), "ticket", "list"])
    assert listed.exit_code == 0 and "Z-9" in listed.output and "B-3" in listed.output
    with Lab(db, read_only=True) as lab:
        sc = scorecard(lab.con, "2026-W48")
    sup = {r["provider"]: r for r in sc.support.to_dicts()}
    assert sup["cirrus"]["tickets"] == 2 and sup["borealis"]["tickets"] == 4
    md = render.render_scorecard(sc, "md")
    assert "### Support" in md and "Median h to acknowledge" in md

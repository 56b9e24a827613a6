"""Fleet memory where a lead and an on-call engineer read it (issue 31): the Explorer's host history and the weekly
scorecard's fleet table, both from `clusterlab.account.fleet`, and the relaunch plan's repeat-offender rule.

The demo bundle (week 2026-W48) plus a provider's repair records: east-005 (a straggler incident on the 24th) was
repaired on the 10th and the 26th, spare-9 (in no run) twice in the weeks before, east-003's GPU was replaced an
hour after its Xid 79 (that incident's own repair), east-002 had a NIC out in September (outside the 30 days).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest

from clusterlab import Lab
from clusterlab.account import fleet, offenders
from clusterlab.relaunch.plan import relaunch_plan
from clusterlab.reports import render, scorecard
from clusterlab.widgets import Explorer

WEEK = "2026-W48"
REPAIRS = """\
host,start,end,class,detail
east-002,2026-09-01T00:00:00Z,2026-09-01T06:00:00Z,NIC,NIC Lost
spare-9,2026-11-05T00:00:00Z,2026-11-05T10:00:00Z,GPU,ECC DBE over threshold
spare-9,2026-11-12T00:00:00Z,2026-11-13T00:00:00Z,GPU,xid 79 GPU has fallen off the bus
east-005,2026-11-10T00:00:00Z,2026-11-10T04:00:00Z,Fan,fan 2 critical
east-005,2026-11-26T12:00:00Z,2026-11-26T20:00:00Z,GPU,xid 48 DBE
east-003,2026-11-24T09:00:00Z,2026-11-25T09:00:00Z,GPU,RMA ACME-77812 GPU replaced
"""


@pytest.fixture(scope="module")
def flab(bundle_db_copy: Path, tmp_path_factory: pytest.TempPathFactory) -> Lab:
    csv = tmp_path_factory.mktemp("repairs") / "repairs.csv"
    csv.write_text(REPAIRS)
    with Lab(bundle_db_copy) as lab:
        lab.ingest(csv, workers=1)
        yield lab


@pytest.fixture(scope="module")
def sc(flab: Lab):
    return scorecard(flab.con, WEEK)


def _row(frame: pl.DataFrame, host: str) -> dict:
    rows = frame.filter(pl.col("host") == host)
    assert rows.height == 1, host
    return rows.row(0, named=True)


def test_scorecard_fleet_table_is_the_weeks_fleet_memory(sc, flab: Lab) -> None:
    hosts = flab.hosts(WEEK)
    assert set(hosts["host"]) <= set(sc.fleet_hosts["host"])
    for h in hosts.iter_rows(named=True):
        got = _row(sc.fleet_hosts, h["host"])
        assert {c: got[c] for c in fleet.FLEET_COLUMNS} == h  # the same figures `clusterlab hosts --week` prints
    e3 = _row(sc.fleet_hosts, "east-003")
    # its drain (still open) and the provider's 24 h GPU replacement; the Xid 79 incident's 15.8 GPU-hours
    assert (e3["incidents"], e3["episodes"], e3["open_episodes"], e3["repair_hours"]) == (1, 2, 1, 24.0)
    # (to a hundredth: the ledger's conventions move it by thousandths, 15.8335 before step-time noise was work)
    assert e3["gpu_hours_lost"] == pytest.approx(15.836, abs=0.01)
    assert _row(sc.fleet_hosts, "east-002")["episodes"] == 1  # September's NIC is not this week's


def test_scorecard_flags_the_relaunch_plans_repeat_offenders(sc, flab: Lab) -> None:
    flagged = sc.fleet_hosts.filter(pl.col("repeat_offender"))
    assert sorted(flagged["host"]) == ["east-005", "spare-9"]
    e5, s9 = _row(sc.fleet_hosts, "east-005"), _row(sc.fleet_hosts, "spare-9")
    assert (e5["rule_incidents"], e5["rule_episodes"], e5["rule_faults"]) == (1, 2, 3)
    # no incident and no episode this week: listed for the rule, figures of the week at zero
    assert (s9["rule_faults"], s9["incidents"], s9["episodes"], s9["gpu_hours_lost"]) == (2, 0, 0, None)
    # east-003's replacement is its Xid 79's own repair: one fault, not two
    assert (_row(sc.fleet_hosts, "east-003")["rule_faults"], _row(sc.fleet_hosts, "east-003")["repeat_offender"]) \
        == (1, False)
    # the plan of a run at the week's end excludes the same hosts as repeat offenders, by the same k and W
    plan = relaunch_plan(flab.con, "mm7b-sft")
    repeat = {e.host for e in plan.exclude if e.reason.startswith("repeat offender")}
    assert repeat == set(flagged["host"])
    assert f"in {offenders.HISTORY_DAYS:g} days" in next(e.reason for e in plan.exclude if e.host == "spare-9")


def test_scorecard_prints_the_fleet_table_and_its_rule(sc) -> None:
    md = render.render_scorecard(sc, "md", images={})
    html = render.render_scorecard(sc, "html", images={})
    section = md[md.index("### Fleet memory: hosts by faults and GPU-hours lost"):md.index("### Straggler hosts")]
    rule = f"{offenders.REPEAT_AFTER} or more faults"
    assert rule in section and f"{offenders.HISTORY_DAYS:g} days" in section and rule in html
    e5 = next(ln for ln in section.splitlines() if ln.startswith("| east-005 |"))
    cells = [c.strip() for c in e5.strip("|").split("|")]
    row = _row(sc.fleet_hosts, "east-005")
    assert cells[4] == f"{row['gpu_hours_lost']:.2f}" and cells[5] == str(row["episodes"])
    assert cells[-2:] == [str(row["rule_faults"]), "yes"]
    assert "| spare-9 |" in section and "spare-9" in html
    doc = sc.to_dict()["fleet_hosts"]  # `clusterlab scorecard --json`
    assert [r["host"] for r in doc] == sc.fleet_hosts["host"].to_list() and doc[0]["first_incident"].startswith("2026")


def test_explorer_host_history_lists_episodes_and_incidents_in_time_order(flab: Lab) -> None:
    ex = Explorer(flab, run="llama8b-pretrain")
    ex.incident.value = "llama8b-pretrain:1:end"
    assert ex.host.value == "east-003"
    h = ex.host_history_frame
    assert h["ts"].is_sorted() and h["record"].to_list() == ["incident", "episode", "episode"]
    assert h["source"].to_list() == ["incident", "slurmctld", "fault_episodes"]  # 08:20 Xid 79, 08:33 drain, 09:00 RMA
    assert h.filter(pl.col("record") == "incident")["incident_id"].to_list() == ["llama8b-pretrain:1:end"]
    # the totals are `clusterlab hosts`' row for the host, read from account.fleet
    want = _row(flab.hosts(), "east-003")
    assert ex.host_memory_frame.to_dicts() == [want]
    assert "fault episodes</b> 2" in ex.host_html.value and "still out</b> 1" in ex.host_html.value
    assert "RMA ACME-77812 GPU replaced" in ex.host_html.value
    # east-005: its September-to-November repairs and its straggler incident, one record
    ex.host.value = "east-005"
    assert ex.host_history_frame["ts"].to_list() == sorted(ex.host_history_frame["ts"].to_list())
    assert ex.host_history_frame["record"].to_list() == ["episode", "incident", "episode"]
    assert ex.host_memory_frame.to_dicts() == [_row(flab.hosts(), "east-005")]
    # and the relaunch plan's rule as a relaunch of this run reads it: the plan excludes it, for the same count
    assert ex.host_rule_frame.select("rule_faults", "repeat_offender").row(0) == (3, True)
    assert "3 (1 incidents calling for an action on it, 2 fault episodes" in ex.host_html.value
    assert "a relaunch excludes it" in ex.host_html.value
    plan = relaunch_plan(flab.con, "llama8b-pretrain")
    assert next(e.reason for e in plan.exclude if e.host == "east-005").startswith(
        "repeat offender: 1 incidents and 2 fault episodes")
    ex.host.value = "east-003"  # the GPU replacement is its Xid 79's repair: one fault
    assert ex.host_rule_frame.select("rule_faults", "repeat_offender").row(0) == (1, False)
    assert "not excluded for its history" in ex.host_html.value


def test_host_history_of_a_host_with_no_record_is_empty(flab: Lab) -> None:
    out = fleet.host_history(flab.con, "no-such-host", flab.incidents())
    assert out.height == 0 and list(out.schema.items()) == list(fleet.HISTORY_SCHEMA.items())
    assert fleet.fleet_memory(flab.con, fleet.incident_hosts(flab.incidents()), host="no-such-host").height == 0
    assert dt.datetime(2026, 9, 1) in fleet.host_history(flab.con, "east-002", flab.incidents())["ts"].to_list()

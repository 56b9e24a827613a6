"""Fleet memory: each host's episodes, incidents, jobs killed and time in repair across runs and weeks."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from clusterlab.cli import main
from clusterlab.lab import Lab

TRACE = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "infinitehbd-trace" / "fault_trace.json"

CTLD = """\
[2026-10-05T08:00:00.000] slurmctld version 24.05.4 started on cluster fleet-a
[2026-10-05T09:00:00.000] error: Nodes gpu-k04 not responding, setting DOWN
[2026-10-05T09:00:00.100] Killing JobId=5120 on failed node gpu-k04
[2026-10-05T09:00:00.200] requeue job JobId=5121 due to failure of node gpu-k04
[2026-10-05T09:30:00.000] Node gpu-k04 now responding
[2026-10-05T10:00:00.000] update_node: node gpu-k09 reason set to: Xid 79 fell off the bus
[2026-10-05T10:00:00.000] update_node: node gpu-k09 state set to DRAIN
[2026-10-05T10:05:00.000] Node gpu-k09 now responding
[2026-10-05T16:00:00.000] update_node: node gpu-k09 state set to RESUME
[2026-10-06T01:00:00.000] update_node: node gpu-k09 reason set to: fan 2 critical
[2026-10-06T01:00:00.000] update_node: node gpu-k09 state set to DRAIN
"""


def _lab(tmp_path: Path, files: dict[str, str]) -> Lab:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    lab = Lab(":memory:")
    lab.ingest(*(tmp_path / n for n in files), workers=1)
    return lab


def test_slurmctld_down_and_drain_become_episodes_that_resume_closes(tmp_path: Path) -> None:
    lab = _lab(tmp_path, {"slurmctld.log": CTLD})
    eps = lab.episodes().select("host", "ts", "end_ts", "fault_class", "detail", "failure_mode").to_dicts()
    day = dt.datetime(2026, 10, 5)
    assert eps == [
        {"host": "gpu-k04", "ts": day.replace(hour=9), "end_ts": day.replace(hour=9, minute=30),
         "fault_class": "DOWN", "detail": None, "failure_mode": "node_failure"},
        # a drained node answers pings: only the operator's RESUME brings it back
        {"host": "gpu-k09", "ts": day.replace(hour=10), "end_ts": day.replace(hour=16), "fault_class": "DRAIN",
         "detail": "Xid 79 fell off the bus", "failure_mode": "gpu_fell_off_bus"},
        {"host": "gpu-k09", "ts": dt.datetime(2026, 10, 6, 1), "end_ts": None, "fault_class": "DRAIN",
         "detail": "fan 2 critical", "failure_mode": "host_hw"},
    ]


def test_hosts_joins_episodes_repair_time_and_jobs_killed(tmp_path: Path) -> None:
    csv = ("host,start,end,class,detail\n"
           "gpu-k04,2026-09-01T00:00:00Z,2026-09-01T12:00:00Z,GPU,ECC DBE over threshold\n"
           "gpu-k11,2026-10-20T00:00:00Z,2026-10-20T03:00:00Z,NIC,NIC Lost\n")
    lab = _lab(tmp_path, {"slurmctld.log": CTLD, "repairs.csv": csv})
    rows = {r["host"]: r for r in lab.hosts().to_dicts()}
    assert set(rows) == {"gpu-k04", "gpu-k09", "gpu-k11"}
    k04 = rows["gpu-k04"]
    assert (k04["episodes"], k04["open_episodes"], k04["jobs_killed"]) == (2, 0, 2)
    assert k04["repair_hours"] == pytest.approx(12.5)
    assert k04["episode_modes"] == "gpu_memory_ecc, node_failure"
    assert (rows["gpu-k09"]["episodes"], rows["gpu-k09"]["open_episodes"]) == (2, 1)
    assert rows["gpu-k09"]["repair_hours"] == pytest.approx(6.0)  # the open episode is not counted
    week = {r["host"]: r["episodes"] for r in lab.hosts("2026-W43").to_dicts()}
    assert week == {"gpu-k11": 1}
    res = CliRunner().invoke(main, ["hosts", "--help"])
    assert "episodes" in res.output


@pytest.mark.skipif(not TRACE.exists(), reason="the InfiniteHBD trace is not in ../shared/datasets/")
def test_the_trace_worst_host_has_its_14_episodes_first(tmp_path: Path) -> None:
    lab = Lab(":memory:")
    lab.ingest(TRACE, epoch=dt.date(2024, 3, 30), workers=1)
    hosts = lab.hosts()
    assert hosts.height == 231 and hosts["episodes"].sum() == 584
    assert hosts.row(0, named=True)["episodes"] == 14
    ends = {e["node_id"] for e in json.loads(TRACE.read_text())}
    assert set(hosts["host"]) == ends


def test_repair_time_counts_overlapping_episodes_once(tmp_path: Path) -> None:
    csv = ("host,start,end,class,detail\n"
           "gpu-m01,2026-03-01T00:00:00Z,2026-03-01T10:00:00Z,Parameter Plane Cable,Link Down\n"
           "gpu-m01,2026-03-01T00:00:00Z,2026-03-01T04:00:00Z,NIC,Rnic Gid Error\n"
           "gpu-m01,2026-03-01T08:00:00Z,2026-03-01T12:00:00Z,NIC,NIC Lost\n"
           "gpu-m01,2026-03-02T00:00:00Z,2026-03-02T01:00:00Z,Fan,Speed Critical\n")
    row = _lab(tmp_path, {"m.csv": csv}).hosts().row(0, named=True)
    assert (row["episodes"], row["repair_hours"]) == (4, pytest.approx(13.0))


def test_relaunch_excludes_a_host_whose_repair_records_repeat(tmp_path: Path) -> None:
    from clusterlab.account.fleet import episode_faults
    from conftest import SAMPLES

    csv = ("host,start,end,class,detail\n"
           "east-006,2026-11-05T10:00:00Z,2026-11-05T20:00:00Z,GPU,DBE over threshold\n"
           "east-006,2026-11-18T03:00:00Z,2026-11-18T09:00:00Z,Power Supply,PSU 1 failed\n"
           "east-008,2026-11-12T03:00:00Z,2026-11-12T05:00:00Z,Fan,fan 4 critical\n"
           "east-003,2026-11-24T08:40:00Z,2026-11-24T18:00:00Z,GPU,GPU Lost\n"  # the Xid 79 incident's own repair
           "east-009,2026-09-01T00:00:00Z,2026-09-02T00:00:00Z,NIC,NIC Lost\n"
           "east-009,2026-11-20T00:00:00Z,2026-11-20T04:00:00Z,NIC,NIC Lost\n")  # the first is 84 days before
    (tmp_path / "repairs.csv").write_text(csv)
    lab = Lab(":memory:")
    lab.ingest(SAMPLES / "bundle", tmp_path / "repairs.csv", workers=1)
    own = episode_faults(lab.con, dt.datetime(2026, 10, 25), lab.incidents())
    assert sorted(own["host"].to_list()) == ["east-006", "east-006", "east-008", "east-009"]
    plan = lab.relaunch_plan("llama8b-pretrain")
    rep = {e.host: e for e in plan.exclude if e.reason.startswith("repeat offender")}
    assert set(rep) == {"east-006"}
    e = rep["east-006"]
    assert e.reason == "repeat offender: 2 fault episodes in 30 days (gpu_memory_ecc, host_hw)"
    assert e.incident is None and [x["line"] for x in e.evidence] == [3, 2]
    assert {"host": "east-006", "reason": "clusterlab fault history: host_hw"} in plan.drain

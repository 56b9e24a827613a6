"""A time printed without its year takes the year of the evidence beside it, read from that evidence's own dated
stamps, not the year its files were written in: a bundle copied off a cluster months later, or replayed today with
its own dates, keeps its kernel's Xid lines inside the attempts that the dated lines (slurmctld, journals) make."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from test_yearless_dates import _written  # (a file written with a chosen write time)

from clusterlab import Lab
from clusterlab.ingest.era import last_stamp

XID = "{md} {hm} {host} kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, GPU has fallen off the bus.\n"


def _dated_beside(root: Path, day: dt.datetime, written: dt.datetime) -> None:
    """Two files that print their year: the controller's log and another node's journal (short-iso)."""
    iso = day.strftime("%Y-%m-%dT%H:%M:%S")
    _written(root / "scheduler" / "slurmctld.log",
             f"[{iso}.101] sched: Allocate JobId=7001 NodeList=gn[01-02] #CPUs=64 Partition=train\n"
             f"[{iso}.340] _job_complete: JobId=7001 WEXITSTATUS 1\n", written)
    _written(root / "nodes" / "gn02" / "journal.log",
             f"{iso}+0000 gn02 systemd[1]: Started Session 12 of user train.\n"
             f"{iso}+0000 gn02 kernel: mlx5_core 0000:18:00.0: mlx5_cmd_out_err:838: QUERY_VPORT_COUNTER ok\n",
             written)


def _event_times(lab: Lab) -> list[dt.datetime]:
    return [r[0] for r in lab.con.execute(
        "SELECT ts FROM events WHERE text LIKE '%Xid%' ORDER BY ts").fetchall()]


def test_a_bundle_logged_last_year_and_copied_now_keeps_its_year(tmp_path: Path) -> None:
    root = tmp_path / "bundle"
    now = dt.datetime(2026, 12, 7, 8)
    _dated_beside(root, dt.datetime(2025, 3, 14, 10, 0, 1), now)
    _written(root / "nodes" / "gn01" / "kern.log", XID.format(md="Mar 14", hm="10:02:03", host="gn01"), now)
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(root, run="r")
        assert _event_times(lab) == [dt.datetime(2025, 3, 14, 10, 2, 3)]


def test_evidence_dated_after_its_files_were_written_is_not_rolled_back_a_year(tmp_path: Path) -> None:
    # a campaign replayed with its own dates, months after the machine's clock: a glog line inside kubectl's
    # --timestamps envelope and a syslog line both take the year the dated stamps show
    root = tmp_path / "bundle"
    now = dt.datetime(2026, 12, 7, 8)
    for pod, pid in (("trainer-0", 77), ("trainer-1", 78)):
        _written(root / "runs" / "r" / "attempt-1" / "pods" / f"{pod}.log", "".join(
            f"2027-02-03T04:0{k}:06.123456789Z [rank{k}]: step {k} loss 2.31\n" for k in range(3)) +
            f"2027-02-03T04:05:06.123456789Z E0203 04:05:06.120000 140 torch/distributed/elastic/multiprocessing/"
            f"api.py:869] failed (exitcode: 1) local_rank: 0 (pid: {pid}) of binary: /usr/bin/python3\n", now)
    _written(root / "nodes" / "gn01" / "kern.log", XID.format(md="Feb  3", hm="04:04:59", host="gn01"), now)
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(root)
        assert _event_times(lab) == [dt.datetime(2027, 2, 3, 4, 4, 59)]
        years = {r[0] for r in lab.con.execute(
            "SELECT DISTINCT year(ts) FROM events WHERE source = 'torch' AND ts IS NOT NULL").fetchall()}
        assert years == {2027}


def test_a_campaign_across_new_year_puts_each_line_in_its_own_year(tmp_path: Path) -> None:
    for written in (dt.datetime(2027, 1, 5, 9), dt.datetime(2026, 12, 7, 8)):  # copied after it, or replayed before
        root = tmp_path / f"bundle-{written:%Y%m%d}"
        _dated_beside(root, dt.datetime(2026, 12, 31, 18, 0, 0), written)
        _written(root / "nodes" / "gn01" / "kern.log",
                 XID.format(md="Dec 31", hm="23:50:00", host="gn01")
                 + XID.format(md="Jan  1", hm="00:10:00", host="gn01").replace("4242", "4243"), written)
        with Lab(tmp_path / f"{written:%Y%m%d}.duckdb") as lab:
            lab.ingest(root, run="r")
            assert _event_times(lab) == [dt.datetime(2026, 12, 31, 23, 50), dt.datetime(2027, 1, 1, 0, 10)]


def test_the_latest_iso_stamp_of_a_head_is_its_log_time() -> None:
    head = (b"# built 2019-07-01 12:00 from release notes 2019-06-30T08:00\n"
            b"2025-03-14T10:00:01.101Z rank0 step 1\n2025-03-14T10:00:05.004Z rank0 step 2\n")
    assert last_stamp(head) == dt.datetime(2025, 3, 14, 10, 0)
    assert last_stamp(b"version 2.21.5, 12345.678 s\n") is None
    assert last_stamp(b"2025-02-31T10:00 is no day; 2025-02-28 10:00 is\n") == dt.datetime(2025, 2, 28, 10, 0)

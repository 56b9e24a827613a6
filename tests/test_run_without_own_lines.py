"""A run whose bundle holds none of its own lines (its evidence exported from a log store: the nodes' kernel logs and
the scheduler's records only) still gets an answer: its attempts are the scheduler's jobs named after it, its nodes'
faults explain their ends, and its ledger, with no step to show progress, is flagged as such rather than refused."""

from __future__ import annotations

from pathlib import Path

from clusterlab import Lab

SACCT = """JobID|JobName|State|ExitCode|Start|End|Elapsed|NNodes|NodeList
5100|wiki-7b|FAILED|1:0|2026-12-01T06:10:00|2026-12-01T09:03:50|02:53:50|2|gn-[01-02]
5100.batch|batch|FAILED|1:0|2026-12-01T06:10:00|2026-12-01T09:03:50|02:53:50|1|gn-01
5107|wiki-7b|COMPLETED|0:0|2026-12-01T09:30:00|2026-12-01T12:00:00|02:30:00|2|gn-[02-03]
5108|other-job|COMPLETED|0:0|2026-12-01T09:30:00|2026-12-01T12:00:00|02:30:00|1|gn-01
"""
XID = ("Dec  1 08:53:02 gn-01 kernel: [543165.8] NVRM: Xid (PCI:0000:4c:00): 79, pid='<unknown>', name=<unknown>, "
       "GPU has fallen off the bus.\n")


def test_a_run_with_only_its_nodes_and_scheduler_records_is_attributed_and_flagged(tmp_path: Path) -> None:
    b = tmp_path / "bundle"
    (b / "runs" / "wiki-7b").mkdir(parents=True)
    (b / "runs" / "wiki-7b" / "run.toml").write_text('cluster = "c1"\ngpus = 16\n')
    (b / "scheduler").mkdir()
    (b / "scheduler" / "sacct.psv").write_text(SACCT)
    (b / "nodes" / "gn-01").mkdir(parents=True)
    (b / "nodes" / "gn-01" / "kern.log").write_text(XID)
    with Lab(":memory:") as lab:
        lab.ingest(b)
        att = lab.sql("SELECT attempt, start_ts, end_ts, n_hosts FROM attempts WHERE run = 'wiki-7b' ORDER BY 1")
        assert att["attempt"].to_list() == [1, 2] and att["n_hosts"].to_list() == [2, 2]  # not 'other-job'
        a = lab.attribute("wiki-7b")
    end = a.incidents.filter(a.incidents["kind"] == "attempt_end").row(0, named=True)
    assert (end["attempt"], end["failure_mode"], end["host"]) == (1, "gpu_fell_off_bus", "gn-01")
    assert any("no step times" in n for n in a.notes)
    assert abs(a.rows["gpu_hours"].sum() - a.gpu_hours) < 1e-6  # still the whole run

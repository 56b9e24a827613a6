"""`scontrol reboot` is the operator's maintenance: slurmctld's "reboot request queued for nodes ..." names the nodes
(a hostlist) and nothing else; a job cancelled on one of them while the reboot waits was ended by the provider's
maintenance, not by its owner."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl
from test_collector_slurm import events
from timelines import T0, Attempt, write_events, write_run

from clusterlab import Lab
from clusterlab.collectors import slurmctld

REQUEST = "[2026-11-24T08:16:21.501] reboot request queued for nodes h-[001-002]"


def test_a_reboot_request_names_each_node_with_a_maintenance_reason() -> None:
    rows = events(slurmctld, REQUEST,
                  "[2026-11-24T08:17:00.010] _slurm_rpc_kill_job: REQUEST_KILL_JOB JobId=51234 uid 0")
    reboot = [r for r in rows if r["kind"] == "slurm_node_reboot_request"]
    assert [r["host"] for r in reboot] == ["h-001", "h-002"]
    assert all("reboot requested" in r["detail"]["reason"] and r["failure_mode"] is None for r in reboot)
    assert str(reboot[0]["ts"]) == "2026-11-24 08:16:21.501000"


def test_a_cancel_while_a_reboot_of_its_node_is_queued_is_the_provider_s_maintenance() -> None:
    """The controller's rows as its collector reads them, then the job's own cancel: preemption, not manual_stop."""
    with Lab(":memory:") as lab:
        write_run(lab.con, "r", 16, [Attempt(0, 30, [10.0] * 100)])
        start = T0 + dt.timedelta(seconds=990)
        ctld = [{"t": (start - T0).total_seconds(), "host": r["host"], "kind": r["kind"], "source": "slurmctld",
                 "severity": "warning", "detail": json.dumps(r["detail"]), "text": r["text"]}
                for r in events(slurmctld, REQUEST)]
        write_events(lab.con, ctld, name="slurmctld.log")
        write_events(lab.con, [{"t": 1_030, "host": "h-001", "kind": "slurm_cancelled", "source": "slurm",
                                "text": "slurmstepd: error: *** JOB 51234 ON h-001 CANCELLED AT "
                                        "2026-11-24T08:17:00 ***"}], run="r", attempt=1, name="slurm-51234.out")
        end = lab.incidents("r").filter(pl.col("kind") == "attempt_end").row(0, named=True)
    assert (end["failure_mode"], end["blame"]) == ("preemption", "provider"), end

"""The operator's words: a job cancelled while the operator drains its nodes for maintenance, or whose node is
rebooted under it after a maintenance drain, ended by the provider's maintenance; the same cancel without such a
drain is the user's stop, and a drain reason that names no maintenance changes nothing."""

from __future__ import annotations

import json

import polars as pl
import pytest
from timelines import Attempt, write_events, write_run

from clusterlab import Lab

CANCEL = "slurmstepd: error: *** JOB 51234 ON h-001 CANCELLED AT 2026-11-24T08:17:00 ***"


def _end(ctld: list[dict], own: list[dict]) -> dict:
    """A 100-step attempt on h-001/h-002 ending at 1,030 s; `ctld`: slurmctld lines (t, host, kind, reason);
    `own`: the job's own ending lines."""
    with Lab(":memory:") as lab:
        write_run(lab.con, "r", 16, [Attempt(0, 30, [10.0] * 100)])
        if ctld:
            write_events(lab.con, [{"t": c["t"], "host": c["host"], "kind": c["kind"], "source": "slurmctld",
                                    "severity": "info", "detail": json.dumps({"reason": c["reason"]}),
                                    "text": f"update_node: node {c['host']} reason set to: {c['reason']}"}
                                   for c in ctld], name="slurmctld.log")
        write_events(lab.con, [dict(o) for o in own], run="r", attempt=1, name="slurm-51234.out")
        inc = lab.incidents("r").filter(pl.col("kind") == "attempt_end").row(0, named=True)
        inc["evidence"] = lab.evidence(inc["incident_id"])
        return inc


CANCELLED = {"t": 1_030, "host": "h-001", "kind": "slurm_cancelled", "source": "slurm", "text": CANCEL}
NODE_DOWN = {"t": 1_030, "host": "h-002", "kind": "slurm_node_failure", "source": "slurm",
             "failure_mode": "node_failure", "text": "srun: error: Node failure on h-002"}


def test_a_cancel_while_the_operator_drains_for_maintenance_is_the_provider_s() -> None:
    drains = [{"t": 1_000, "host": h, "kind": "slurm_node_reason", "reason": "emergency maintenance"}
              for h in ("h-001", "h-002")]
    end = _end(drains, [CANCELLED])
    assert end["failure_mode"] == "preemption" and end["blame"] == "provider", end
    assert "maintenance" in end["evidence"]["text"][0]
    assert any(r["candidate"]["failure_mode"] == "manual_stop" for r in end["rejected"])


def test_a_node_rebooted_under_the_job_after_a_maintenance_drain_is_maintenance_not_a_node_failure() -> None:
    end = _end([{"t": 900, "host": "h-002", "kind": "slurm_node_reason", "reason": "Reboot ASAP"}], [NODE_DOWN])
    assert (end["failure_mode"], end["host"]) == ("preemption", "h-002"), end


@pytest.mark.parametrize(("ctld", "own", "mode"), [
    ([], [CANCELLED], "manual_stop"),
    ([{"t": 1_000, "host": "h-001", "kind": "slurm_node_reason", "reason": "bad GPU, see ticket 4411"}], [CANCELLED],
     "manual_stop"),
    # the maintenance is on another node than the one that failed
    ([{"t": 900, "host": "h-001", "kind": "slurm_node_reason", "reason": "maint"}], [NODE_DOWN], "node_failure"),
    # a cloud daemon's maintenance words for a node that broke: the node's fault, not a planned maintenance
    ([{"t": 1_000, "host": "h-002", "kind": "slurm_node_reason",
       "reason": "auto maintenance - instance failing status checks, replacing"}], [NODE_DOWN], "node_failure"),
], ids=["no-drain", "a-drain-that-names-no-maintenance", "maintenance-of-another-node", "maintenance-of-a-broken-node"])
def test_without_maintenance_of_its_nodes_the_end_keeps_its_own_cause(ctld: list, own: list, mode: str) -> None:
    assert _end(ctld, own)["failure_mode"] == mode

"""A node drained for `Kill task failed` (its processes stuck in the kernel on a hung GPU or filesystem) names where,
not why: a symptom-tier candidate, below the kernel's filesystem evidence and no node-failure verdict on the job."""

from __future__ import annotations

import duckdb

from clusterlab.diagnose import incidents


def _tier(source: str, kind: str, mode: str, detail: str, text: str = "") -> int:
    con = duckdb.connect()
    con.execute("CREATE TABLE e (source VARCHAR, kind VARCHAR, failure_mode VARCHAR, detail VARCHAR, text VARCHAR,"
                " severity VARCHAR)")
    con.execute("INSERT INTO e VALUES (?, ?, ?, ?, ?, 'error')", [source, kind, mode, detail, text])
    return con.execute(f"SELECT {incidents._tier_sql()} FROM e").fetchall()[0][0]


def test_kill_task_failed_drain_is_a_symptom_below_the_kernel_filesystem_evidence() -> None:
    for kind, detail in (("slurm_node_reason", '{"reason":"Kill task failed"}'),
                         ("slurm_node_drain", '{"state":"DRAINING","reason":"Kill task failed (JobId=7 StepId=0)"}')):
        t = _tier("slurmctld", kind, "node_failure", detail)
        assert t <= incidents.SYMPTOM_TIER
        assert t < _tier("kernel", "lustre_timeout", "filesystem_io", "{}")


def test_a_node_lost_for_another_reason_keeps_the_node_tier() -> None:
    assert _tier("slurmctld", "slurm_node_reason", "node_failure", '{"reason":"Not responding"}') == incidents.NODE_TIER

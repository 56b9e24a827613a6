"""A node rebooted under the job after a maintenance drain stopped the job when it went down, not minutes later when
the scheduler noticed (SlurmdTimeout): the incident starts at the job's last step record."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl
from timelines import T0, Attempt, write_events, write_run

from clusterlab import Lab

LAST_STEP_END = 30 + 100 * 10.0  # 100 steps of 10 s from 30 s
NOTICED = LAST_STEP_END + 300    # the controller's "not responding, setting DOWN" and the job's kill


def _end(reason: str) -> dict:
    with Lab(":memory:") as lab:
        write_run(lab.con, "r", 16, [Attempt(0, 30, [10.0] * 100)])
        write_events(lab.con, [{"t": 900, "host": "h-002", "kind": "slurm_node_reason", "source": "slurmctld",
                                "severity": "info", "detail": json.dumps({"reason": reason}),
                                "text": f"update_node: node h-002 reason set to: {reason}"}], name="slurmctld.log")
        write_events(lab.con, [{"t": NOTICED, "host": "h-002", "kind": "slurm_node_failure", "source": "slurm",
                                "failure_mode": "node_failure", "text": "srun: error: Node failure on h-002"}],
                     run="r", attempt=1, name="slurm-51234.out")
        return lab.incidents("r").filter(pl.col("kind") == "attempt_end").row(0, named=True)


def test_a_maintenance_reboot_starts_the_incident_at_the_last_step() -> None:
    end = _end("emergency maintenance: BMC firmware")
    assert end["failure_mode"] == "preemption", end
    assert abs((end["root_ts"] - (T0 + dt.timedelta(seconds=LAST_STEP_END))).total_seconds()) <= 10, end


def test_undated_step_lines_date_the_reboot_by_the_step_clock_not_their_borrowed_time() -> None:
    # Megatron-style: only every tenth step line (5, 15, ..., 95) has a stamp of its own; the others carry the last
    # stamped line's time (`dated`), so steps 96-100 all read as step 95's end, 50 s before the job's last step
    with Lab(":memory:") as lab:
        write_run(lab.con, "r", 16, [Attempt(0, 30, [10.0] * 100)])
        lab.con.execute("""
            UPDATE steps s SET ts = a.ts, dated = 'previous line', ts_lo = a.ts
            FROM steps a WHERE a.run = s.run AND a.attempt = s.attempt AND a.step = s.step - (s.step + 5) % 10
              AND (s.step + 5) % 10 <> 0""")
        write_events(lab.con, [{"t": 900, "host": "h-002", "kind": "slurm_node_reason", "source": "slurmctld",
                                "severity": "info", "detail": json.dumps({"reason": "maint: reboot issued"}),
                                "text": "update_node: node h-002 reason set to: maint: reboot issued"}],
                     name="slurmctld.log")
        write_events(lab.con, [{"t": NOTICED, "host": "h-002", "kind": "slurm_node_failure", "source": "slurm",
                                "failure_mode": "node_failure", "text": "srun: error: Node failure on h-002"}],
                     run="r", attempt=1, name="slurm-51234.out")
        end = lab.incidents("r").filter(pl.col("kind") == "attempt_end").row(0, named=True)
    assert end["failure_mode"] == "preemption", end
    assert abs((end["root_ts"] - (T0 + dt.timedelta(seconds=LAST_STEP_END))).total_seconds()) <= 10, end

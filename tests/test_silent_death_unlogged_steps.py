"""A node that dies without a word stops a job that logs every N steps between two records: the scheduler dates the
death minutes later ("not responding"), but the other ranks' collective watchdogs say when they began to wait (the
timeout's time less how long the collective ran). The whole steps the job ran after its last record and before that
moment did work (thrown away after a failure: recompute); only the rest of the attempt is hang."""

from __future__ import annotations

import polars as pl
from timelines import Attempt, write_events, write_run

from clusterlab import Lab

HOSTS = ["sv-201", "sv-202", "sv-203", "sv-204"]
STEP_S, EVERY = 5.0, 5
LAST_END = 40 + 200 * STEP_S  # the last record (step 200) ends 1,040 s after T0
DEATH = LAST_END + 17  # steps 201-203 ran unlogged; the death cut step 204 short
TAIL = 660.0  # the last record to the attempt's exit (the watchdogs at death + 600 s, then the cancel)


def _hang_s(watchdogs: bool) -> float:
    with Lab(":memory:") as lab:
        write_run(lab.con, "r", 32, [Attempt(0, 40, [STEP_S] * 200, hosts=HOSTS, tail_s=TAIL)])
        lab.con.execute(f"DELETE FROM steps WHERE step % {EVERY} <> 0")  # a log line every 5 steps
        write_events(lab.con, [{"t": DEATH + 300, "source": "slurmctld", "kind": "slurm_node_not_responding",
                                "failure_mode": "node_failure", "host": "sv-203", "severity": "critical",
                                "text": "error: Nodes sv-203 not responding"}], name="slurmctld.log")
        job = [{"t": LAST_END + TAIL - 2, "source": "slurm", "kind": "slurm_node_fail", "failure_mode": "node_failure",
                "host": "sv-203", "severity": "critical", "text": "srun: error: Node failure on sv-203"}]
        if watchdogs:
            job += [{"t": DEATH + 600.03 + 0.2 * r, "source": "torch", "kind": "watchdog_timeout", "rank": r,
                     "failure_mode": "nccl_timeout", "detail": '{"timeout_ms":600000,"ran_for_ms":600031}',
                     "text": f"[rank{r}]:[E] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL("
                             "SeqNum=9, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600031 milliseconds"}
                    for r in (0, 8, 24)]
        write_events(lab.con, sorted(job, key=lambda e: e["t"]), run="r", attempt=1, name="slurm-9001.out")
        att = lab.attribute("r")
        end = att.incidents.filter(pl.col("kind") == "attempt_end").row(0, named=True)
        assert end["failure_mode"] == "node_failure", end
        return att.rows.filter(pl.col("category") == "hang")["seconds"].sum()


def test_the_watchdogs_date_the_stall_and_the_unlogged_whole_steps_are_not_hang() -> None:
    # the exit within its stamp's second; the late verdict, the root event, dates no more: half the step in flight
    assert abs(_hang_s(watchdogs=True) - (TAIL - 3 * STEP_S - STEP_S / 2)) <= 1.0


def test_without_watchdogs_a_late_root_adds_no_unlogged_steps() -> None:
    # the scheduler's "not responding" comes after the next record was due: nothing says how long the steps went on
    assert abs(_hang_s(watchdogs=False) - (TAIL - STEP_S / 2)) <= 1.0

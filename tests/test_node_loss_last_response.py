"""A node that dies silently under a job that logs every N steps, and whose peers stamp nothing about it (their
NCCL lines carry no time of their own): the late verdicts (slurmctld's `not responding` after its SlurmdTimeout,
srun's `Node failure on H`) are minutes after the death. When the node comes back, slurmctld says when it last
answered (`validate_node_specs: Node H unexpectedly rebooted boot_time=B last response=L`, Slurm <= 18.08 without
the `=`): it was alive then, so the root of the attempt's end is that moment where it is after the job's last step
record, and the steps run unlogged up to it are thrown-away work, not hang (diagnose.onsets, collectors.slurmctld)."""

from __future__ import annotations

import datetime as dt

import polars as pl
from timelines import T0, Attempt, write_events, write_run

from clusterlab import Lab
from clusterlab.ingest.golden import golden_rows

HOSTS = ["qb-h1", "qb-h2", "qb-h3"]
STEP_S, EVERY = 6.0, 10
LAST_END = 30 + 200 * STEP_S   # the last record (step 200)
ALIVE = LAST_END + 25          # the node's last answer to the controller: 4 more steps ran unlogged
TAIL = 330.0                   # the last record to the attempt's exit (the controller gives up on the node)


def _epoch(t: float) -> int:
    return int((T0 + dt.timedelta(seconds=t)).replace(tzinfo=dt.UTC).timestamp())


def _hang_s(reboot_line: bool, alive: float = ALIVE, save_s: float = 0.0, cat: str = "hang") -> float:
    with Lab(":memory:") as lab:
        write_run(lab.con, "r", 24, [Attempt(0, 30, [STEP_S] * 200, hosts=HOSTS, tail_s=TAIL,
                                             saves={200: save_s} if save_s else {})])
        lab.con.execute(f"DELETE FROM steps WHERE step % {EVERY} <> 0")
        ctld = [{"t": LAST_END + TAIL - 1, "source": "slurmctld", "kind": "slurm_node_not_responding",
                 "failure_mode": "node_failure", "host": "qb-h1", "severity": "critical", "detail": None,
                 "text": "error: Nodes qb-h1 not responding, setting DOWN"}]
        if reboot_line:
            ctld.append({"t": LAST_END + TAIL + 60, "source": "slurmctld", "kind": "slurm_node_reboot",
                         "failure_mode": "node_failure", "host": "qb-h1", "severity": "error",
                         "detail": f'{{"boot_time":{_epoch(LAST_END + 250)},"last_response":{_epoch(alive)}}}',
                         "text": f"validate_node_specs: Node qb-h1 unexpectedly rebooted boot_time="
                                 f"{_epoch(LAST_END + 250)} last response={_epoch(alive)}"})
        write_events(lab.con, ctld, name="slurmctld.log")
        write_events(lab.con, [{"t": LAST_END + TAIL - 2, "source": "slurm", "kind": "slurm_node_fail",
                                "failure_mode": "node_failure", "host": "qb-h1", "severity": "critical",
                                "text": "srun: error: Node failure on qb-h1"}], run="r", attempt=1, name="job-9.log")
        att = lab.attribute("r")
        end = att.incidents.filter(pl.col("kind") == "attempt_end").row(0, named=True)
        assert (end["failure_mode"], end["host"]) == ("node_failure", "qb-h1"), end
        return att.rows.filter(pl.col("category") == cat)["seconds"].sum()


def test_the_last_response_dates_the_death_and_the_unlogged_steps_are_not_hang() -> None:
    assert abs(_hang_s(True) - (TAIL - (ALIVE - LAST_END))) <= 1.0


def test_without_the_reboot_line_nothing_moves() -> None:
    # the late verdicts date no step: half the step in flight is recompute (noticed, not struck), the rest hang
    assert abs(_hang_s(False) - (TAIL - STEP_S / 2)) <= 1.0


def test_a_last_response_before_the_last_record_moves_nothing() -> None:
    assert abs(_hang_s(True, alive=LAST_END - 90) - (TAIL - STEP_S / 2)) <= 1.0


def test_a_save_finished_after_the_last_response_is_later_proof_of_life() -> None:
    # the save after step 200 ends 40 s after the last record, 15 s after the node's last answer: every rank, the
    # node's too, finished it, so it is a checkpoint stall, and the hang runs from its end
    assert abs(_hang_s(True, save_s=40.0, cat="checkpoint") - 40.0) <= 1.0
    assert abs(_hang_s(True, save_s=40.0) - TAIL) <= 1.0


def test_the_controller_line_carries_the_last_response_in_both_wordings(tmp_path) -> None:
    p = tmp_path / "slurmctld.log"
    p.write_text("[2026-12-01T20:17:34.280] validate_node_specs: Node qb-h7 unexpectedly rebooted "
                 "boot_time=1796156144 last response=1796155849\n"
                 "[2018-03-01T10:00:00.100] validate_node_specs: Node qb-h8 unexpectedly rebooted "
                 "boot_time 1519898000last response 1519897700\n")
    ev = [r for r in golden_rows(p)[0] if r["table"] == "events" and r.get("kind") == "slurm_node_reboot"]
    got = sorted((r["host"], str(r.get("detail"))) for r in ev)
    assert len(got) == 2, ev
    assert '"last_response": 1796155849' in got[0][1].replace('":', '": ') or "1796155849" in got[0][1], got
    assert "1519897700" in got[1][1] and "1519898000" in got[1][1], got

"""A node that dies without a word, no watchdog having fired before the scheduler's kill: its peers' network errors
about it (stamped, seconds after the death) say the job had stopped by then, so the whole steps it ran after its
last record of every N steps were work (recompute), not hang, also where the error came just after the next record
was due (the death cut that record's step short). A network error before that record says nothing, nor one that
came long after the record was due (more than a step and NCCL's InfiniBand transport timeout, 30 s at its recent
default). Hang runs from the root event (DESIGN's ledger): the step in flight up to it is recompute, half a step where
the root came too late to have cut it (`ledger.FLIGHT_STEPS`)."""

from __future__ import annotations

import json

import polars as pl
from timelines import Attempt, write_events, write_run

from clusterlab import Lab
from clusterlab.account import transport_lag

HOSTS = ["gx-11", "gx-12", "gx-13"]
STEP_S, EVERY = 6.0, 8
LAST_END = 25 + 240 * STEP_S  # the last record (step 240) ends 1,465 s after T0
DEATH = LAST_END + 20  # steps 241-243 ran unlogged
TAIL = 330.0  # the last record to the exit: "not responding" at the death + 100 s, DOWN and the kill at + 300 s


def _hang_s(peer_error_at: float | None, nccl: str | None = None) -> float:
    with Lab(":memory:") as lab:
        write_run(lab.con, "r", 24, [Attempt(0, 25, [STEP_S] * 240, hosts=HOSTS, tail_s=TAIL)])
        lab.con.execute(f"DELETE FROM steps WHERE step % {EVERY} <> 0")
        write_events(lab.con, [{"t": DEATH + 100, "source": "slurmctld", "kind": "slurm_node_not_responding",
                                "failure_mode": "node_failure", "host": "gx-12", "severity": "critical",
                                "text": "error: Nodes gx-12 not responding"}], name="slurmctld.log")
        job = [{"t": LAST_END + TAIL - 2, "source": "slurm", "kind": "slurm_node_fail", "failure_mode": "node_failure",
                "host": "gx-12", "severity": "critical", "text": "srun: error: Node failure on gx-12"}]
        if peer_error_at is not None:
            job.append({"t": peer_error_at, "source": "torch", "kind": "watchdog_terminated", "rank": 16,
                        "failure_mode": "network", "host": "gx-13", "severity": "critical",
                        "detail": json.dumps({"nccl_version": nccl}) if nccl else None,
                        "text": "[rank16]:[E1204 05:48:07.123456789 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID "
                                "0(default_pg) Rank 16] Process group watchdog thread terminated with exception: "
                                "NCCL error: remote process exited or there was a network error, NCCL version 2.26.3"})
        write_events(lab.con, sorted(job, key=lambda e: e["t"]), run="r", attempt=1, name="slurm-4242.out")
        att = lab.attribute("r")
        end = att.incidents.filter(pl.col("kind") == "attempt_end").row(0, named=True)
        assert (end["failure_mode"], end["host"]) == ("node_failure", "gx-12"), end
        return att.rows.filter(pl.col("category") == "hang")["seconds"].sum()


def test_the_peers_network_error_dates_the_stall_and_the_unlogged_steps_are_not_hang() -> None:
    # three whole steps ran unlogged; the step in flight ran until the error 5 s into it; hang is from there
    assert abs(_hang_s(DEATH + 3) - (TAIL - 3 * STEP_S - 5)) <= 1.0


def test_without_a_peer_error_after_the_last_record_the_late_root_adds_no_steps() -> None:
    # the controller's "not responding" 120 s on dates no step: half the step in flight, the rest hang
    assert abs(_hang_s(None) - (TAIL - STEP_S / 2)) <= 1.0
    assert abs(_hang_s(LAST_END - 30) - (TAIL - STEP_S / 2)) <= 1.0  # a network error the job stepped past


def test_a_peer_error_seen_within_a_transport_timeout_after_the_next_record_was_due_dates_the_stall_there() -> None:
    """The death 46 s after the last record (steps 241-247 ran, the record of step 248 never came, due at 48 s);
    the peers' error 6 s later, at 52 s, or at the end of a 30 s transport timeout, at 76 s: the N - 1 = 7 whole
    steps ran. A minute after that it says nothing of them."""
    late_death = LAST_END + 46
    assert abs(_hang_s(late_death + 6) - (TAIL - 7 * STEP_S - STEP_S / 2)) <= 1.0  # 10 s on: noticed, not struck
    assert abs(_hang_s(late_death + 30) - (TAIL - 7 * STEP_S - STEP_S / 2)) <= 1.0
    assert abs(_hang_s(LAST_END + 8 * STEP_S * 1.05 + 2 * STEP_S + 60) - (TAIL - STEP_S / 2)) <= 1.0


def test_the_nccl_release_says_how_long_after_the_death_its_peers_error_came() -> None:
    """NCCL 2.23+ retries a dead peer for 8 x 4.096 us x 2^20 = 34 s before it errs: an error 34 s after a death 20 s
    past the last record dates that death, not one 54 s past it (three unlogged steps, not eight). Under NCCL 2.18
    the same error lags 8.6 s, under 2.10 half a second; where no release is named the error is taken as printed."""
    assert transport_lag.lag_s("2.10.3") < 1 < transport_lag.lag_s("2.18.3+cuda12.2") < 10
    assert 34 < transport_lag.lag_s("2.23.4") == transport_lag.lag_s("2.26.3") < 35
    assert transport_lag.lag_s(None) is None and transport_lag.lag_s("unknown") is None
    lag = transport_lag.lag_s("2.26.3")
    # the death, then the step in flight cut 2 s in: hang from the error (the root event), less nothing more
    assert abs(_hang_s(DEATH + lag, nccl="2.26.3") - (TAIL - 3 * STEP_S - STEP_S / 2)) <= 1.0
    late = _hang_s(DEATH + lag)  # the release unknown: the error dates the death as printed, 7 unlogged steps
    assert abs(late - (TAIL - 7 * STEP_S - STEP_S / 2)) <= 1.0

"""A node that dies silently in the middle of a job that logs every N steps: the verdicts that name it come late
(srun's "Node failure on H" once the controller gives up on it, slurmctld's "not responding" after its
SlurmdTimeout), but its peers stamp their loss of it seconds after the death (their c10d store client's reset
connection when it hosted the rendezvous store, an IB completion error towards it). The root of the attempt's end
is the first of those after the job's last step record, so that the whole steps run unlogged before it are the
thrown-away work they were (recompute), not hang (diagnose.onsets.node_loss_onsets); the TCPStore client's line
is read as such (collectors.torch_dist kind store_lost)."""

from __future__ import annotations

import polars as pl
from timelines import Attempt, write_events, write_run

from clusterlab import Lab
from clusterlab.ingest.golden import golden_rows

HOSTS = ["qa-h1", "qa-h2", "qa-h3"]
STEP_S, EVERY = 4.0, 8
LAST_END = 30 + 240 * STEP_S  # the last record (step 240) ends 990 s after T0
DEATH = LAST_END + 21  # steps 241-245 ran unlogged; the death cut step 246 short
TAIL = 95.0  # the last record to the attempt's exit (srun gives up on the step)


def _hang_s(peer_lines: bool, peer_before_last_record: bool = False) -> float:
    with Lab(":memory:") as lab:
        write_run(lab.con, "r", 24, [Attempt(0, 30, [STEP_S] * 240, hosts=HOSTS, tail_s=TAIL)])
        lab.con.execute(f"DELETE FROM steps WHERE step % {EVERY} <> 0")  # a log line every 8 steps
        write_events(lab.con, [{"t": DEATH + 62, "source": "slurmctld", "kind": "slurm_node_not_responding",
                                "failure_mode": "node_failure", "host": "qa-h1", "severity": "critical",
                                "text": "error: Nodes qa-h1 not responding, setting DOWN"}], name="slurmctld.log")
        job = [{"t": LAST_END + TAIL - 3, "source": "slurm", "kind": "slurm_node_fail", "failure_mode": "node_failure",
                "host": "qa-h1", "severity": "critical", "text": "srun: error: Node failure on qa-h1"}]
        if peer_lines:
            t0 = (LAST_END - 30) if peer_before_last_record else DEATH + 1.5  # a reset within a step
            job += [{"t": t0 + 0.4 * k, "source": "torch", "kind": "store_lost", "host": h, "rank": 8 * (k + 1),
                     "severity": "warning",
                     "text": f"[rank{8 * (k + 1)}]:[W] TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=41, "
                             f"addr=[{h}]:50112, remote=[qa-h1]:29400): Connection reset by peer"}
                    for k, h in enumerate(HOSTS[1:])]
        write_events(lab.con, sorted(job, key=lambda e: e["t"]), run="r", attempt=1, name="job-77.log")
        att = lab.attribute("r")
        end = att.incidents.filter(pl.col("kind") == "attempt_end").row(0, named=True)
        assert (end["failure_mode"], end["host"]) == ("node_failure", "qa-h1"), end
        return att.rows.filter(pl.col("category") == "hang")["seconds"].sum()


def test_the_peers_first_store_reset_dates_the_death_and_the_unlogged_steps_are_not_hang() -> None:
    # five whole steps unlogged, then step 246 up to the reset (the root event, 2.5 s into it) thrown away too
    assert abs(_hang_s(peer_lines=True) - (TAIL - 5 * STEP_S - 2.5)) <= 1.0


def test_without_peer_lines_the_late_verdict_adds_no_unlogged_steps() -> None:
    # the verdict a minute on dates no step: half the step in flight is recompute, the rest hang
    assert abs(_hang_s(peer_lines=False) - (TAIL - STEP_S / 2)) <= 1.0


def test_a_peer_line_before_the_last_record_moves_nothing() -> None:
    # the job stepped on after it: it was not the node's death
    assert abs(_hang_s(peer_lines=True, peer_before_last_record=True) - (TAIL - STEP_S / 2)) <= 1.0


def test_the_tcpstore_client_lines_are_read_as_a_store_loss(tmp_path) -> None:
    p = tmp_path / "train.log"
    p.write_text(
        "[rank5]:[W1103 04:12:09.118811912 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=63, "
        "addr=[gpu-b7]:41866, remote=[gpu-b1]:29400): Connection reset by peer\n"
        "[rank5]:[W1103 04:12:09.119021733 ProcessGroupNCCL.cpp:1662] [PG ID 0 PG GUID 0 Rank 5] Failed to check "
        "the \"should dump\" flag on TCPStore, (maybe TCPStore server has shut down too early), with error: "
        "Connection reset by peer\n")
    kinds = [r.get("kind") for r in golden_rows(p)[0] if r["table"] == "events"]
    assert kinds.count("store_lost") == 2, kinds

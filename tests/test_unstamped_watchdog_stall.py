"""torch 2.1 prints its collective watchdog lines without a stamp ("[E ProcessGroupNCCL.cpp:475] [Rank 9] Watchdog
caught collective operation timeout: ... ran for 600107 milliseconds"): ingest dates them by the stamped lines around
them, the lower one maybe the job's last step record ten minutes before they were printed. Read at that lower bound,
the wait they report began a whole timeout before the job stopped, and the whole steps a log printed every N steps
ran between its last record and the fault (an Xid 79 in the middle of the silence) were booked as hang instead of
recompute. Only the latest such a line can have been printed (its upper bound) may date when the ranks began to
wait."""

from __future__ import annotations

import datetime as dt

import polars as pl
from timelines import T0, Attempt, write_events, write_run

from clusterlab import Lab

HOSTS = ["qa-n11", "qa-n12", "qa-n13"]
STEP_S, EVERY = 3.0, 10
LAST_END = 25 + 300 * STEP_S  # the last record (step 300) ends 925 s after T0
FAULT = LAST_END + 14.5  # steps 301-304 ran unlogged; the Xid cut step 305 short
TAIL = 640.0  # the last record to the attempt's exit


def _at(sec: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=sec)


def _hang_s(stamped: bool) -> float:
    with Lab(":memory:") as lab:
        write_run(lab.con, "r", 24, [Attempt(0, 25, [STEP_S] * 300, hosts=HOSTS, tail_s=TAIL)])
        lab.con.execute(f"DELETE FROM steps WHERE step % {EVERY} <> 0")  # a log line every 10 steps
        write_events(lab.con, [{"t": FAULT, "host": "qa-n11", "kind": "xid", "xid": 79,
                                "failure_mode": "gpu_fell_off_bus", "severity": "critical",
                                "text": "NVRM: Xid (PCI:0000:3b:00): 79, pid=4411, GPU has fallen off the bus."}],
                     name="kern.log")
        printed, torchrun = FAULT + 600.2, FAULT + 603.0
        rows = []
        for r in (0, 5, 17):
            row = {"t": printed if stamped else LAST_END, "source": "torch", "kind": "watchdog_timeout", "rank": r,
                   "failure_mode": "nccl_timeout", "detail": '{"timeout_ms":600000,"ran_for_ms":600107}',
                   "text": f"[E ProcessGroupNCCL.cpp:475] [Rank {r}] Watchdog caught collective operation timeout: "
                           "WorkNCCL(SeqNum=77, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600107 milliseconds"}
            if not stamped:  # between the last step record and torchrun's stamped failure line
                row |= {"dated": "between", "ts_lo": _at(LAST_END), "ts_hi": _at(torchrun)}
            rows.append(row)
        rows.append({"t": torchrun, "source": "torch", "kind": "elastic_child_failed", "failure_mode": "nccl_timeout",
                     "text": "torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -6)"})
        write_events(lab.con, rows, run="r", attempt=1, name="slurm-5120.out")
        att = lab.attribute("r")
        end = att.incidents.filter(pl.col("kind") == "attempt_end").row(0, named=True)
        assert (end["failure_mode"], end["host"]) == ("gpu_fell_off_bus", "qa-n11"), end
        return att.rows.filter(pl.col("category") == "hang")["seconds"].sum()


def test_unstamped_watchdog_lines_do_not_move_the_stall_a_timeout_early() -> None:
    # the four whole steps after the last record did work: hang runs from the fault to the exit
    # steps 301-304 and the 2.5 s of step 305 the Xid cut short are work thrown away; hang runs from the Xid
    assert abs(_hang_s(stamped=False) - (TAIL - (FAULT - LAST_END))) <= 1.0


def test_stamped_watchdog_lines_date_the_same_stall() -> None:
    assert abs(_hang_s(stamped=True) - (TAIL - (FAULT - LAST_END))) <= 1.0

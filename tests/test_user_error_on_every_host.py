"""A user's CUDA error that the ranks on many hosts raise together (an illegal address in the job's own kernel) is
the job's bug, no host's: the first host to print it is chance. Its traceback line has no stamp of its own and is
dated back to the last step record; the kernel's stamped Xid of the same mode inside the line's interval dates it.
And steps a log never printed after a save that followed its last record ran from the save's end."""

from __future__ import annotations

import datetime as dt

import polars as pl
from timelines import T0, Attempt, write_events, write_run

from clusterlab import Lab

HOSTS = ["h-001", "h-002", "h-003"]


def _at(s: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=s)


def _end(hosts_raising: list[str]) -> dict:
    """100 steps of 10 s on three hosts, the last record at 1,030 s; CUDA errors dated back to it (their interval
    runs to the exit at 1,075 s), the kernel's Xid 31 of each raising host at 1,061 s."""
    with Lab(":memory:") as lab:
        write_run(lab.con, "r", 24, [Attempt(0, 30, [10.0] * 100, hosts=HOSTS)])
        write_events(lab.con, [{"t": 1_030, "host": h, "kind": "cuda_error", "source": "torch",
                                "failure_mode": "cuda_error", "rank": 8 * HOSTS.index(h),
                                "text": "RuntimeError: CUDA error: an illegal memory access was encountered",
                                "ts_lo": _at(1_030), "ts_hi": _at(1_075), "dated": "between"}
                               for h in hosts_raising] +
                     [{"t": 1_075, "host": h, "kind": "worker_failed", "source": "torch", "failure_mode": "unknown",
                       "text": "failed (exitcode: 1) local_rank: 0"} for h in HOSTS], run="r", attempt=1,
                     name="slurm-77.out")
        write_events(lab.con, [{"t": 1_061, "host": h, "kind": "xid", "xid": 31, "failure_mode": "cuda_error",
                                "text": "NVRM: Xid (PCI:0000:18:00): 31, pid=4242, name=python3, channel 0x00000010, "
                                        "intr 00000000. MMU Fault: ENGINE GRAPHICS GPC1 GPCCLIENT_T1_2 faulted @ "
                                        "0x7f3a_12000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ"}
                               for h in hosts_raising], name="kern.log")
        return lab.incidents("r").filter(pl.col("kind") == "attempt_end").row(0, named=True)


def test_the_same_cuda_error_on_every_host_is_the_jobs_own_bug_dated_by_the_kernel() -> None:
    end = _end(HOSTS)
    assert (end["failure_mode"], end["host"], end["blame"]) == ("cuda_error", None, "user"), end
    assert end["root_ts"] == _at(1_061), end


def test_a_cuda_error_on_one_host_stays_that_hosts() -> None:
    end = _end(["h-002"])
    assert (end["failure_mode"], end["host"]) == ("cuda_error", "h-002"), end
    assert end["root_ts"] == _at(1_061), end


def test_steps_after_a_save_that_followed_the_last_record_count_from_its_end() -> None:
    """A record every 10 steps of 10 s; the last at step 100 (1,030 s) is saved for 60 s; the time limit comes 75 s
    after the save: 7 whole steps ran and are thrown away (recompute), not hang, and so is the eighth the kill cut
    short 5 s in; nothing hung."""
    with Lab(":memory:") as lab:
        write_run(lab.con, "r", 8, [Attempt(0, 30, [10.0] * 100, saves={100: 60.0})])
        lab.con.execute("DELETE FROM steps WHERE step % 10 <> 0")      # a record every 10 steps
        write_events(lab.con, [{"t": 1_165, "host": "h-001", "kind": "slurm_time_limit", "source": "slurm",
                                "failure_mode": "time_limit",
                                "text": "slurmstepd: error: *** JOB 88 ON h-001 CANCELLED AT 2026-11-24T08:19:25 "
                                        "DUE TO TIME LIMIT ***"}], run="r", attempt=1, name="slurm-88.out")
        rows = lab.attribute("r").rows
    got = dict(rows.group_by("category").agg(pl.col("seconds").sum()).iter_rows())
    assert abs(got.get("recompute", 0) - 75.0) < 1.0, got
    assert got.get("hang", 0) < 1.0, got

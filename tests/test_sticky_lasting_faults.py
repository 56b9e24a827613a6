"""Faults that last until a reset, a reboot or a remount: the job that starts on a host whose GPU fell off the bus
while it was idle (CUDA one device short: `invalid device ordinal` on the last local rank), or whose filesystem client
was evicted and would not mount again (the job dies in its first seconds, no rank's own error naming why), died of
that host's fault; the same start-up death with the fault hours before, or a fault the hardware coped with, or a job
that trained past its start, is the job's own."""

from __future__ import annotations

import polars as pl
import pytest
from timelines import Attempt, write_events, write_run

from clusterlab import Lab

XID79 = "NVRM: Xid (PCI:0000:90:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
EVICTED = ("LustreError: 167-0: ckpt-MDT0000-mdc-ffff9b2c3f1e6000: This client was evicted by ckpt-MDT0000; in "
           "progress operations using this service will fail.")
ORDINAL = "RuntimeError: CUDA error: invalid device ordinal"


def _end_of_second_attempt(fault: dict | None, death: dict, steps: int = 0) -> dict:
    """Attempt 1 runs 100 steps on h-001/h-002; attempt 2 starts at 2,000 s and dies with `death` (running `steps`
    steps first), attempt 3 at 5,000 s; `fault`: a kernel event on h-001 before attempt 2, or none."""
    with Lab(":memory:") as lab:
        write_run(lab.con, "r", 16, [Attempt(0, 30, [10.0] * 100), Attempt(2_000, 40, [10.0] * steps, tail_s=45),
                                     Attempt(5_000, 30, [10.0] * 5)])
        if fault is not None:
            write_events(lab.con, [{"host": "h-001", **fault}], name="kern.log")
        write_events(lab.con, [dict(death)], run="r", attempt=2, name="stderr.log")  # (it takes keys out)
        inc = lab.incidents("r").filter(pl.col("kind") == "attempt_end", pl.col("attempt") == 2)
        assert inc.height == 1, inc
        return inc.row(0, named=True)


_LOST = {"t": 1_640, "kind": "xid", "xid": 79, "failure_mode": "gpu_fell_off_bus", "text": XID79}
_ORDINAL_DEATH = {"t": 2_030, "host": "h-001", "kind": "cuda_error", "source": "torch", "failure_mode": "cuda_error",
                  "rank": 7, "text": ORDINAL}


def test_a_gpu_lost_from_the_bus_before_the_start_explains_a_start_up_cuda_error() -> None:
    end = _end_of_second_attempt(_LOST, _ORDINAL_DEATH)
    assert (end["failure_mode"], end["host"]) == ("gpu_fell_off_bus", "h-001"), end
    why = [r["reason"] for r in end["rejected"] if r["candidate"]["failure_mode"] == "cuda_error"]
    assert why and "GPU lost from the bus on h-001" in why[0]


def test_an_evicted_filesystem_client_explains_a_hostless_start_up_death() -> None:
    fault = {"t": 1_800, "kind": "lustre_error", "failure_mode": "filesystem_io", "severity": "error",
             "text": EVICTED}
    death = {"t": 2_012, "host": None, "kind": "worker_failed", "source": "torch", "failure_mode": "unknown",
             "text": "failed (exitcode: 2) local_rank: 0 (pid: 771623) of binary: /usr/bin/python3"}
    end = _end_of_second_attempt(fault, death)
    assert (end["failure_mode"], end["host"]) == ("filesystem_io", "h-001"), end


@pytest.mark.parametrize(("fault", "steps"), [
    ({**_LOST, "t": 2_000 - 3 * 3600}, 0),  # hours before: a reset or reboot in between is likely, unseen or not
    (_LOST, 60),  # the job trained for ten minutes on that host: whatever killed it later is its own story
    ({"t": 1_640, "kind": "pcie_aer", "failure_mode": "pcie_error", "severity": "warning",
      "text": "pcieport 0000:8f:01.0: AER: Corrected error received: 0000:90:00.0"}, 0),  # coped with
], ids=["hours-before", "trained-past-start", "a-corrected-error"])
def test_the_same_death_without_a_lasting_fault_just_before_is_the_jobs_own(fault: dict, steps: int) -> None:
    end = _end_of_second_attempt(fault, {**_ORDINAL_DEATH, "t": 2_070 + 10 * steps}, steps)
    assert end["failure_mode"] == "cuda_error", end

"""Sticky faults: the job that starts on a GPU right after its memory failed, and dies at start-up of what looks
like its own error, died of that GPU; the same start-up error without the earlier fault, or a day later, is the
job's own."""

from __future__ import annotations

import polars as pl
import pytest
from timelines import Attempt, write_events, write_run

from clusterlab import Lab

XID48 = ("NVRM: Xid (PCI:0000:4e:00): 48, pid=51822, name=python, An uncorrectable double bit error (DBE) has been "
         "detected on GPU in the framebuffer at physAddr 0x3e8a21000.")
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB. GPU 3 has a total capacity of "
       "79.10 GiB of which 12.31 MiB is free.")


def _end_of_second_attempt(fault_s: float | None) -> dict:
    """Attempt 1 runs 100 steps on h-001/h-002; attempt 2 starts at 2,000 s and dies at start-up with a CUDA OOM
    on h-001; `fault_s`: when h-001 logged an Xid 48 (seconds after T0), or never."""
    with Lab(":memory:") as lab:
        write_run(lab.con, "r", 16, [Attempt(0, 30, [10.0] * 100), Attempt(2_000, 40, [])])
        if fault_s is not None:
            write_events(lab.con, [{"t": fault_s, "host": "h-001", "kind": "xid", "xid": 48,
                                    "failure_mode": "gpu_memory_ecc", "text": XID48}], name="kern.log")
        write_events(lab.con, [{"t": 2_035, "host": "h-001", "kind": "python_exception", "source": "torch",
                                "failure_mode": "cuda_oom", "rank": 3, "text": OOM}], run="r", attempt=2,
                     name="train.log")
        inc = lab.incidents("r").filter(pl.col("kind") == "attempt_end", pl.col("attempt") == 2)
        assert inc.height == 1, inc
        row = inc.row(0, named=True)
        row["evidence"] = lab.evidence(row["incident_id"])
        return row


def test_a_start_up_oom_right_after_the_gpu_s_memory_failed_is_that_gpu_s_fault() -> None:
    end = _end_of_second_attempt(fault_s=1_031)  # the Xid 48 that ended attempt 1
    assert (end["failure_mode"], end["host"]) == ("gpu_memory_ecc", "h-001"), end
    assert end["evidence"]["xid"][0] == 48 and "cuda_oom" in end["evidence"]["failure_mode"].to_list()
    why = [r["reason"] for r in end["rejected"] if r["candidate"]["failure_mode"] == "cuda_oom"]
    assert why and "GPU memory fault on h-001" in why[0]
    assert end["confidence"] < 0.9  # inferred from time and place, not printed by the job


@pytest.mark.parametrize("fault_s", [None, 2_000 - 30 * 3600], ids=["no-earlier-fault", "a-day-and-more-before"])
def test_the_same_start_up_oom_without_a_recent_memory_fault_is_the_job_s_own(fault_s: float | None) -> None:
    end = _end_of_second_attempt(fault_s)
    assert (end["failure_mode"], end["host"]) == ("cuda_oom", "h-001"), end

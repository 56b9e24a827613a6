"""Sticky GPU memory faults (`clusterlab.diagnose.sticky`) on hand-made tables: a row remap still pending when a later
attempt dies of a CUDA error on that GPU, a fault cleared by a reset or reboot seen before the attempt, the start-up
rule, the GPU named by NCCL's init against the bus the fault names."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl
import pytest

from clusterlab import Lab
from clusterlab.diagnose import sticky
from clusterlab.diagnose.root_cause import EVIDENCE_SCHEMA, INCIDENT_SCHEMA

T0 = dt.datetime(2026, 11, 20, 8, 0)
HOST = "gpu-007"
XID63 = ("NVRM: Xid (PCI:0000:5d:00): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row (0x00000000a7c31f00) "
         "marked for remapping, reset gpu to activate.")
XID48 = ("NVRM: Xid (PCI:0000:5d:00): 48, pid=4242, name=python, An uncorrectable double bit error (DBE) has been "
         "detected on GPU in the framebuffer at partition 6, subpartition 0.")


@pytest.fixture()
def lab():
    with Lab(":memory:") as lab:
        lab.con.execute("INSERT INTO ingested_files (file_id, path) VALUES (1, 'nodes/gpu-007/kern.log'), "
                        "(2, 'runs/r/train.log'), (3, 'scheduler/slurmctld.log'), (4, 'nodes/gpu-007/nvsmi.txt')")
        # attempt 1 ran 00:00-07:00 on the host; attempt 2 begins at 08:00 and runs 500 steps before it dies at 10:00
        _attempt(lab, 1, T0 - dt.timedelta(hours=8), T0 - dt.timedelta(hours=1), 1, 3000)
        _attempt(lab, 2, T0, T0 + dt.timedelta(hours=2), 3001, 3500)
        # NCCL's init: rank 3 is the host's GPU on bus 5d
        lab.con.execute("INSERT INTO nccl_ranks (file_id, source, run, attempt, line, ts, host, rank, bus_id) VALUES "
                        "(2, 'nccl', 'r', 2, 1, ?, ?, 3, '0000:5d:00.0')", [T0, HOST])
        yield lab


def _attempt(lab: Lab, k: int, start: dt.datetime, end: dt.datetime, first: int, last: int) -> None:
    lab.con.execute("INSERT INTO attempts VALUES ('r', ?, ?, ?, ?, ?, ?, ?, 1)", [k, start, end, start, first, last,
                                                                                   [HOST]])


def _event(lab: Lab, ts: dt.datetime, kind: str, *, xid: int | None = None, mode: str | None = None,
           bus: str | None = None, source: str = "kernel", file_id: int = 1, text: str = "",
           detail: dict | None = None, line: int = 1) -> None:
    lab.con.execute("INSERT INTO events (file_id, source, line, ts, host, kind, failure_mode, xid, pci_bus, text, "
                    "detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [file_id, source, line, ts, HOST, kind, mode, xid, bus, text, json.dumps(detail or {})])


def _xid63(lab: Lab, ts: dt.datetime) -> None:
    _event(lab, ts, "xid", xid=63, mode="gpu_memory_ecc", bus="0000:5d:00", text=XID63)


def _decide(lab: Lab, mode: str, *, attempt: int = 2, rank: int | None = 3
            ) -> tuple[dict, pl.DataFrame]:
    """Root cause's incident of the attempt (its own mode, 0.9) through the sticky rules: the incident, its evidence."""
    inc = pl.DataFrame([{"incident_id": "i1", "run": "r", "attempt": attempt, "kind": "interruption",
                         "root_ts": T0 + dt.timedelta(hours=2), "exit_ts": T0 + dt.timedelta(hours=2),
                         "failure_mode": mode, "host": HOST, "rank": rank, "tier": 80, "confidence": 0.9,
                         "rejected": []}], schema=INCIDENT_SCHEMA)
    ev = pl.DataFrame([{"run": "r", "attempt": attempt, "incident_id": "i1", "rank_in_incident": 1,
                        "ts": T0 + dt.timedelta(hours=2), "host": HOST, "source": "torch", "kind": "cuda_error",
                        "failure_mode": mode, "xid": None, "rank": rank, "file": "runs/r/train.log", "line": 9,
                        "text": "[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered",
                        "tier": 80}], schema={"run": pl.String, "attempt": pl.Int32, **EVIDENCE_SCHEMA})
    inc, ev = sticky.with_sticky_faults(lab.con, inc, ev, EVIDENCE_SCHEMA)
    return inc.row(0, named=True), ev.sort("rank_in_incident")


def test_a_cuda_error_on_a_gpu_whose_row_remap_is_pending_is_that_gpus_memory(lab: Lab) -> None:
    _xid63(lab, T0 - dt.timedelta(hours=3))  # under attempt 1, which stepped past it; nobody reset the GPU
    inc, ev = _decide(lab, "cuda_error")
    assert (inc["failure_mode"], inc["host"], inc["rank"], inc["confidence"]) == ("gpu_memory_ecc", HOST, 3,
                                                                                  sticky.STICKY_CONFIDENCE)
    assert ev["xid"][0] == 63 and ev["text"][0] == XID63 and ev.height == 2
    (was,) = inc["rejected"]
    assert was["candidate"]["failure_mode"] == "cuda_error" and "remapped" in was["reason"]


def test_an_uncorrectable_error_at_the_death_keeps_its_mode_and_the_pending_remap_leads(lab: Lab) -> None:
    _xid63(lab, T0 - dt.timedelta(hours=3))
    inc, ev = _decide(lab, "gpu_memory_ecc")
    assert (inc["failure_mode"], inc["confidence"], inc["rejected"]) == ("gpu_memory_ecc", 0.9, [])
    assert ev["xid"].to_list()[:1] == [63] and ev["rank_in_incident"].to_list() == [1, 2]


@pytest.mark.parametrize("reset", [
    {"kind": "slurm_node_resume", "source": "slurmctld", "file_id": 3},  # drained, reset, returned to service
    {"kind": "slurm_node_reboot", "source": "slurmctld", "file_id": 3, "mode": "node_failure"},
    # nvidia-smi -q of that GPU with nothing pending: the remap was activated
    {"kind": "gpu_state", "source": "nvidia_smi", "file_id": 4, "bus": "0000:5d:00",
     "detail": {"remap_pending": False, "remap_failure": False, "page_retirement_pending": False}},
], ids=["node-resumed", "node-rebooted", "gpu-report-clear"])
def test_a_reset_seen_before_the_attempt_clears_the_pending_remap(lab: Lab, reset: dict) -> None:
    _xid63(lab, T0 - dt.timedelta(hours=3))
    _event(lab, T0 - dt.timedelta(minutes=20), **reset)
    inc, ev = _decide(lab, "cuda_error")
    assert (inc["failure_mode"], inc["confidence"]) == ("cuda_error", 0.9) and ev.height == 1


@pytest.mark.parametrize("when", [T0 - dt.timedelta(hours=4), T0 + dt.timedelta(minutes=5)],
                         ids=["before-the-remap", "after-the-attempt-began"])
def test_a_reset_outside_the_gap_clears_nothing(lab: Lab, when: dt.datetime) -> None:
    _xid63(lab, T0 - dt.timedelta(hours=3))
    _event(lab, when, "slurm_node_resume", source="slurmctld", file_id=3)
    assert _decide(lab, "cuda_error")[0]["failure_mode"] == "gpu_memory_ecc"


def test_another_gpus_clear_report_clears_nothing(lab: Lab) -> None:
    _xid63(lab, T0 - dt.timedelta(hours=3))
    _event(lab, T0 - dt.timedelta(minutes=20), "gpu_state", source="nvidia_smi", file_id=4, bus="0000:18:00",
           detail={"remap_pending": False, "remap_failure": False})
    assert _decide(lab, "cuda_error")[0]["failure_mode"] == "gpu_memory_ecc"


def test_a_cuda_error_on_another_gpu_of_the_host_is_not_the_pending_rows(lab: Lab) -> None:
    _xid63(lab, T0 - dt.timedelta(hours=3))
    lab.con.execute("UPDATE nccl_ranks SET bus_id = '0000:18:00.0'")
    assert _decide(lab, "cuda_error")[0]["failure_mode"] == "cuda_error"
    # where NCCL names no GPU for the rank, the host's pending remap is believed
    lab.con.execute("DELETE FROM nccl_ranks")
    assert _decide(lab, "cuda_error")[0]["failure_mode"] == "gpu_memory_ecc"


@pytest.mark.parametrize(("mode", "at", "want"), [
    ("user_code_error", T0 - dt.timedelta(hours=3), "user_code_error"),  # the user's own exception, hours in
    ("cuda_error", T0 + dt.timedelta(minutes=30), "cuda_error"),  # marked under this attempt: not a later attempt's
    ("cuda_error", T0 - sticky.PENDING_WINDOW - dt.timedelta(hours=1), "cuda_error"),  # too long ago
], ids=["user-code", "during-the-attempt", "past-the-window"])
def test_what_the_pending_remap_does_not_explain(lab: Lab, mode: str, at: dt.datetime, want: str) -> None:
    _xid63(lab, at)
    assert _decide(lab, mode)[0]["failure_mode"] == want


def test_the_nvidia_smi_pending_flag_is_a_pending_remap_too(lab: Lab) -> None:
    _event(lab, T0 - dt.timedelta(hours=2), "row_remap_pending", source="nvidia_smi", file_id=4, bus="0000:5d:00",
           mode="gpu_memory_ecc", detail={"remap_pending": True})
    assert _decide(lab, "cuda_error")[0]["failure_mode"] == "gpu_memory_ecc"


def test_start_up_death_after_an_ecc_error_unless_the_node_was_rebooted_between(lab: Lab) -> None:
    lab.con.execute("UPDATE attempts SET last_step = first_step WHERE attempt = 2")  # died in its first step
    _event(lab, T0 - dt.timedelta(hours=1, minutes=2), "xid", xid=48, mode="gpu_memory_ecc", bus="0000:5d:00",
           text=XID48)
    inc, ev = _decide(lab, "cuda_oom", rank=2)  # any rank's OOM: the first to fail need not be the faulty GPU's
    assert inc["failure_mode"] == "gpu_memory_ecc" and ev["xid"][0] == 48
    _event(lab, T0 - dt.timedelta(minutes=30), "slurm_node_reboot", source="slurmctld", file_id=3,
           mode="node_failure")
    assert _decide(lab, "cuda_oom", rank=2)[0]["failure_mode"] == "cuda_oom"

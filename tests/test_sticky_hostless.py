"""A hostless device fault of a later attempt (a launcher relays `RuntimeError: CUDA error: uncorrectable ECC error
encountered` of global rank 29, naming no node) is asked of every host of its attempt: where one host alone kept a GPU
memory fault from before the attempt began (an Xid 48 and a row remap still pending, no reset or reboot since), it
was that host's GPU; where two hosts did, no host is guessed."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl

from clusterlab import Lab
from clusterlab.diagnose import sticky
from clusterlab.diagnose.root_cause import EVIDENCE_SCHEMA, INCIDENT_SCHEMA

T0 = dt.datetime(2026, 7, 2, 14, 0)
HOSTS = ["bm-a3", "bm-a4", "bm-a5"]


def _lab(faulty: list[str]) -> tuple[dict, pl.DataFrame]:
    with Lab(":memory:") as lab:
        lab.con.execute("INSERT INTO ingested_files (file_id, path) VALUES (1, 'nodes/kern.log'), (2, 'runs/q/o.log')")
        for k, start, end, first, last in ((1, T0 - dt.timedelta(hours=9), T0 - dt.timedelta(minutes=20), 1, 9000),
                                           (2, T0, T0 + dt.timedelta(minutes=3), None, None)):
            lab.con.execute("INSERT INTO attempts VALUES ('q', ?, ?, ?, ?, ?, ?, ?, 3)",
                            [k, start, end, start if first else None, first, last, HOSTS])
        for i, h in enumerate(faulty):  # the end of attempt 1 on those hosts: a double-bit error, a pending row
            t = T0 - dt.timedelta(minutes=21)
            for line, (xid, text) in enumerate(((48, "NVRM: Xid (PCI:0000:9b:00): 48, pid=1717, name=python, An "
                                                     "uncorrectable double bit error (DBE) has been detected on GPU "
                                                     "in the framebuffer at partition 2, subpartition 1."),
                                                (63, "NVRM: Xid (PCI:0000:9b:00): 63, pid=1717, name=python, Row "
                                                     "Remapper: New row (0x00000001f0a3c000) marked for remapping, "
                                                     "reset gpu to activate.")), start=1):
                lab.con.execute("INSERT INTO events (file_id, source, line, ts, host, kind, failure_mode, xid, "
                                "pci_bus, text, detail) VALUES (1, 'kernel', ?, ?, ?, 'xid', 'gpu_memory_ecc', ?, "
                                "'0000:9b:00', ?, ?)", [10 * i + line, t, h, xid, text, json.dumps({})])
        inc = pl.DataFrame([{"incident_id": "q:2:end", "run": "q", "attempt": 2, "kind": "attempt_end",
                             "root_ts": T0 + dt.timedelta(minutes=2), "exit_ts": T0 + dt.timedelta(minutes=3),
                             "failure_mode": "gpu_memory_ecc", "host": None, "rank": None, "tier": 100,
                             "confidence": 0.9, "rejected": []}], schema=INCIDENT_SCHEMA)
        ev = pl.DataFrame([{"run": "q", "attempt": 2, "incident_id": "q:2:end", "rank_in_incident": 1,
                            "ts": T0 + dt.timedelta(minutes=2), "host": None, "source": "torch", "kind": "cuda_error",
                            "failure_mode": "gpu_memory_ecc", "xid": None, "rank": None, "file": "runs/q/o.log",
                            "line": 40, "text": "RuntimeError: CUDA error: uncorrectable ECC error encountered",
                            "tier": 100}], schema={"run": pl.String, "attempt": pl.Int32, **EVIDENCE_SCHEMA})
        inc, ev = sticky.with_sticky_faults(lab.con, inc, ev, EVIDENCE_SCHEMA)
        return inc.row(0, named=True), ev.sort("rank_in_incident")


def test_the_one_host_that_kept_a_memory_fault_is_the_hostless_faults() -> None:
    inc, ev = _lab(["bm-a4"])
    assert (inc["failure_mode"], inc["host"]) == ("gpu_memory_ecc", "bm-a4"), inc
    assert ev["host"][0] == "bm-a4" and ev["xid"][0] == 63, ev  # the pending remap leads its evidence


def test_two_hosts_with_faults_name_no_host() -> None:
    inc, _ = _lab(["bm-a3", "bm-a5"])
    assert (inc["failure_mode"], inc["host"]) == ("gpu_memory_ecc", None), inc


def test_no_earlier_fault_leaves_it_hostless() -> None:
    inc, ev = _lab([])
    assert inc["host"] is None and ev.height == 1

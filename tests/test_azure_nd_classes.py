"""Classes of defect the azure_nd_accelerate campaign (tests/campaigns/azure_nd_accelerate.py: HF Trainer + DeepSpeed
under accelerate on Azure ND H100 v5, CycleCloud Slurm) showed, each on evidence of our own:

- what a DataLoader worker raised is re-raised in the main process by torch's ExceptionWrapper (`OSError: Caught
  OSError in DataLoader worker process 3.`, then `Original Traceback (most recent call last):` and the worker's own
  traceback): the worker's exception is the cause, and its mode is the chain's (an I/O error on the dataset's mount
  is the storage's, not the user's code);
- Azure's Scheduled Events, as a poller on the VM logs the metadata service's document: a platform `Reboot` or
  `Redeploy` that has `Started` is the provider taking the host (`preemption`, dated by the syslog record), a
  `Scheduled` one only a notice, a `Freeze` or an event the user started no fault;
- an unknown key in inventory.toml is a warning, not the loss of every host's cluster and provider
  (tests/test_metadata.py).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from excerpt_events import modes

from clusterlab import Lab


def _wrapped(where: str, outer: str, inner: str, prefix: str = "") -> str:
    lines = ["Traceback (most recent call last):",
             '  File "/srv/job/pretrain.py", line 311, in <module>',
             "    trainer.train()",
             '  File "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py", line 1480, in _process_data',
             "    data.reraise()",
             '  File "/usr/lib/python3/dist-packages/torch/_utils.py", line 733, in reraise',
             "    raise exception",
             f"{outer}: Caught {outer} in {where}.",
             "Original Traceback (most recent call last):",
             '  File "/srv/job/data/packed.py", line 88, in __getitem__',
             "    chunk = self.reader.read(idx)",
             inner,
             ""]
    return "\n".join(prefix + line for line in lines)


@pytest.mark.parametrize(("where", "outer", "inner", "expect"), [
    ("DataLoader worker process 0", "OSError", "OSError: [Errno 116] Stale file handle: '/lustre/ds/part-0031.bin'",
     "filesystem_io"),
    ("DataLoader worker process 7", "OSError", "OSError: [Errno 5] Input/output error", "filesystem_io"),
    ("pin memory thread for device 2", "RuntimeError",
     "RuntimeError: CUDA error: an illegal memory access was encountered", "cuda_error"),
    # a plain bug in the worker stays the user's: the wrapper adds no cause of its own
    ("DataLoader worker process 1", "KeyError", "KeyError: 'input_ids'", "user_code_error"),
])
@pytest.mark.parametrize("prefix", ["", "[rank12]: "])
def test_what_a_dataloader_worker_raised_is_the_cause_of_its_re_raise(tmp_path: Path, where: str, outer: str,
                                                                      inner: str, expect: str, prefix: str) -> None:
    got = modes(tmp_path, _wrapped(where, outer, inner, prefix))
    assert got == {expect}, got


def _doc(kind: str, status: str, source: str = "Platform", quote: str = '"') -> str:
    entry = {"EventId": "9F0C4E21-55AA-4B7C-9D3E-2F1A0B6C7D8E", "EventType": kind, "ResourceType": "VirtualMachine",
             "Resources": ["nd-vm-04"], "EventStatus": status, "NotBefore": "Tue, 02 Mar 2027 03:10:00 GMT",
             "Description": "Virtual machine is being paused because of a memory-preserving Live Migration "
                            "operation." if kind == "Freeze" else "", "EventSource": source, "DurationInSeconds": 9}
    body = ", ".join(f'"{k}": ' + (f'"{v}"' if isinstance(v, str) else str(v).replace("'", '"'))
                     for k, v in entry.items())
    return ('{"DocumentIncarnation": 3, "Events": [{' + body + "}]}").replace('"', quote)


@pytest.mark.parametrize(("kind", "status", "source", "expect"), [
    ("Reboot", "Started", "Platform", {"preemption"}),
    ("Redeploy", "Started", "Platform", {"preemption"}),
    ("Reboot", "Scheduled", "Platform", set()),  # a notice: the job may end first, the event may be cancelled
    ("Freeze", "Started", "Platform", set()),  # seconds of pause the job usually survives
    ("Reboot", "Started", "User", set()),  # the team's own reboot, not the provider's
])
@pytest.mark.parametrize("quote", ['"', "'"])  # a poller that logs the parsed document prints Python's quotes
def test_a_platform_reboot_that_started_is_the_providers_maintenance(tmp_path: Path, kind: str, status: str,
                                                                     source: str, expect: set[str], quote: str) -> None:
    line = f"Mar  2 03:10:02 nd-vm-04 azure-events[2210]: {_doc(kind, status, source, quote)}\n"
    assert modes(tmp_path, line, "syslog") == expect


def test_the_started_reboot_is_dated_by_the_syslog_record_that_logged_it(tmp_path: Path) -> None:
    (tmp_path / "nodes" / "nd-vm-04").mkdir(parents=True)
    (tmp_path / "nodes" / "nd-vm-04" / "syslog").write_text(
        f"Mar  2 03:10:02 nd-vm-04 azure-events[2210]: {_doc('Reboot', 'Started')}\n")
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path, year=2027)
        got = lab.sql("SELECT ts, host FROM events WHERE failure_mode = 'preemption'").rows()
    assert got == [(dt.datetime(2027, 3, 2, 3, 10, 2), "nd-vm-04")]

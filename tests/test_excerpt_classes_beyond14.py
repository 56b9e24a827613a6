"""The classes of defect the fourteenth round of real excerpts showed (tests/real_excerpts/mixed_beyond14.toml), each
stated on shapes of its own: Xid 45 on its own (the driver cleaning up the channels of a process that was killed) is
no fault, one that names its cause carries the cause's mode; a traceback Python prints for an exception the process
outlives (`Exception ignored in:`, `Exception in thread X:`) is no fault of the user's code, though a storage error in
it is still the storage's; NCCL failing to bind NVLink SHARP's multicast memory is the NVLink fabric."""

from __future__ import annotations

from pathlib import Path

import pytest
from excerpt_events import events as _events
from excerpt_events import modes as _modes


def test_xid_45_alone_is_no_fault_one_naming_its_cause_is_that_cause(tmp_path: Path) -> None:
    alone = ("[Mon Apr  6 10:20:31 2026] NVRM: Xid (PCI:0000:1b:00): 45, pid=88123, name=python, Ch 00000010\n"
             "[Mon Apr  6 10:20:31 2026] NVRM: Xid (PCI:0000:1b:00): 45, pid=88123, name=python, Ch 00000011\n")
    assert _events(tmp_path, alone, "dmesg.txt") == [("xid", None), ("xid", None)]
    caused = ("[Mon Apr  6 10:20:31 2026] NVRM: Xid (PCI:0000:1b:00): 45, pid=88123, name=python, Ch 00000010 "
              "caused by previous Xid 149\n")
    assert _modes(tmp_path, caused, "dmesg-2.txt") == {"nvlink_error"}


def _traced(header: str, last: str) -> str:
    return (f"{header}\nTraceback (most recent call last):\n"
            '  File "/opt/venv/lib/python3.11/site-packages/logger/uploader.py", line 71, in _flush\n'
            "    self._sock.sendall(payload)\n"
            f"{last}\n")


@pytest.mark.parametrize("header", ["Exception in thread MetricsUploader:",
                                    "Exception in thread Thread-4 (_flush_loop):",
                                    "Exception ignored in: <function Uploader.__del__ at 0x7f00c1a2b3c0>"])
def test_an_exception_the_process_outlives_is_no_fault(tmp_path: Path, header: str) -> None:
    text = "step 5000/5000 done; saved final checkpoint\n" + _traced(header, "BrokenPipeError: [Errno 32] Broken pipe")
    assert _events(tmp_path, text, "train.log") == [("python_exception", None)]


def test_an_outlived_exception_naming_the_storage_is_still_the_storage(tmp_path: Path) -> None:
    text = _traced("Exception in thread CheckpointWriter:", "OSError: [Errno 5] Input/output error")
    assert _modes(tmp_path, text, "train.log") == {"filesystem_io"}


def test_the_main_threads_exception_is_still_the_users(tmp_path: Path) -> None:
    text = _traced("step 12 loss 2.31", "KeyError: 'input_ids'")
    assert _modes(tmp_path, text, "train.log") == {"user_code_error"}


def test_nvls_multicast_memory_the_fabric_would_not_bind_is_an_nvlink_fault(tmp_path: Path) -> None:
    text = ("gpu-b7:4120:4188 [3] NCCL INFO NVLS multicast support is available on dev 3\n"
            "gpu-b7:4120:4188 [3] transport/nvls.cc:379 NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory "
            "of size 4194304 : CUDA error 401 'the operation cannot be performed in the present state'.\n")
    assert _modes(tmp_path, text, "nccl.log") == {"nvlink_error"}

"""Issue 30: a torchrun summary or a traceback alone in a file is evidence, and names the mode its content implies."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterlab import Lab


def _summary(exitcode: str, trace: str) -> str:
    return "\n".join([
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
        "============================================================",
        "pretrain.py FAILED",
        "------------------------------------------------------------",
        "Failures:",
        "  <NO_OTHER_FAILURES>",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-03-02_07:14:55",
        "  host      : trn-node-31",
        "  rank      : 12 (local_rank: 4)",
        f"  exitcode  : {exitcode} (pid: 771204)",
        "  error_file: <N/A>",
        f"  traceback : {trace}",
        "============================================================",
    ]) + "\n"


def _traceback(last: str) -> str:
    return ("Traceback (most recent call last):\n  File \"/srv/job/train.py\", line 88, in <module>\n"
            f"    save(state, out_dir)\n{last}\n")


def _modes(tmp_path: Path, text: str, name: str = "excerpt.log") -> set[str]:
    path = tmp_path / name
    path.write_text(text)
    with Lab(":memory:") as lab:
        lab.ingest(path)
        return set(lab.sql("SELECT DISTINCT failure_mode FROM events WHERE failure_mode IS NOT NULL")
                   ["failure_mode"].to_list())


@pytest.mark.parametrize(("exitcode", "trace", "mode"), [
    ("-9", "Signal 9 (SIGKILL) received by PID 771204", "host_oom"),
    ("-6", "Signal 6 (SIGABRT) received by PID 771204", "nccl_timeout"),
    ("-11", "Signal 11 (SIGSEGV) received by PID 771204", "user_code_error"),
    ("1", "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html", "user_code_error"),
])
def test_a_summary_alone_names_the_mode_its_exit_implies(tmp_path: Path, exitcode: str, trace: str, mode: str) -> None:
    assert _modes(tmp_path, _summary(exitcode, trace)) == {mode}


def test_the_agents_failed_line_alone_names_the_mode_its_exit_implies(tmp_path: Path) -> None:
    text = ("E0302 07:14:55.301000 771100 torch/distributed/elastic/multiprocessing/api.py:882] failed (exitcode: -9) "
            "local_rank: 4 (pid: 771204) of binary: /srv/venv/bin/python3\n")
    assert _modes(tmp_path, text) == {"host_oom"}


def test_a_summary_after_the_agent_was_signalled_names_no_cause(tmp_path: Path) -> None:
    # Slurm (or a person) sent the launcher SIGTERM: the workers' SIGKILL is the launcher's, not the OOM killer's
    head = ("W0302 07:14:50.118000 771100 torch/distributed/elastic/agent/server/api.py:704] Received Signals.SIGTERM "
            "death signal, shutting down workers\n")
    assert _modes(tmp_path, head + _summary("-9", "Signal 9 (SIGKILL) received by PID 771204")) == {"unknown"}


def test_a_summary_keeps_the_cause_a_line_above_it_names(tmp_path: Path) -> None:
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 4 has a total capacity of 79 GiB"
    modes = _modes(tmp_path, _traceback(oom) + _summary("-6", "Signal 6 (SIGABRT) received by PID 771204"))
    assert "cuda_oom" in modes and "nccl_timeout" not in modes


@pytest.mark.parametrize(("last", "mode"), [
    ("OSError: [Errno 28] No space left on device", "filesystem_io"),
    ("OSError: [Errno 5] Input/output error: '/lustre/ckpt/step_4000/optim.pt'", "filesystem_io"),
    ("OSError: [Errno 116] Stale file handle", "filesystem_io"),
    ("RuntimeError: [enforce fail at inline_container.cc:603] . unexpected pos 2101248 vs 2101140: "
     "No space left on device", "filesystem_io"),
    ("KeyError: 'attention_mask'", "user_code_error"),
    ("RuntimeError: cuda runtime error (39) : uncorrectable ECC error encountered at "
     "/pytorch/aten/src/THC/THCCachingHostAllocator.cpp:278", "gpu_memory_ecc"),
    ("RuntimeError: transform: failed to synchronize: cudaErrorECCUncorrectable: uncorrectable ECC error "
     "encountered", "gpu_memory_ecc"),
])
def test_a_plain_traceback_alone_in_a_file_is_read(tmp_path: Path, last: str, mode: str) -> None:
    assert _modes(tmp_path, _traceback(last)) == {mode}


def test_the_aborts_what_alone_carries_the_watchdog_timeout(tmp_path: Path) -> None:
    text = ("terminate called after throwing an instance of 'c10::DistBackendError'\n"
            "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 6] Process group watchdog thread terminated with "
            "exception: [Rank 6] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, "
            "OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for 600102 milliseconds "
            "before timing out.\n")
    assert _modes(tmp_path, text) == {"nccl_timeout"}


def test_nccl_system_error_in_torch_2_is_the_network(tmp_path: Path) -> None:
    text = ("[rank0]: torch.distributed.DistBackendError: NCCL error in: "
            "../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, unhandled system error "
            "(run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
            "[rank0]: ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device "
            "error.\n")
    assert _modes(tmp_path, text) == {"network"}


@pytest.mark.parametrize(("last", "mode"), [
    ("RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered", "cuda_error"),
    ("cupy_backends.cuda.api.driver.CUDADriverError: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was "
     "encountered", "cuda_error"),
    ("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`", "cuda_oom"),
    # /dev/shm full under a DataLoader: host memory, not the filesystem
    ("RuntimeError: unable to write to file </torch_40211_3310928870_0>: No space left on device (28)", "host_oom"),
    ("RuntimeError: NCCL Error 3: internal error", "unknown"),
    ("torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 3/4 clients joined.",
     "nccl_timeout"),
])
def test_library_wordings_of_a_known_failure(tmp_path: Path, last: str, mode: str) -> None:
    assert _modes(tmp_path, _traceback(last)) == {mode}


def test_a_childs_traceback_the_agent_logs_behind_its_glog_header_is_read(tmp_path: Path) -> None:
    head = "E0228 00:35:58.954000 724855 site-packages/torch/distributed/elastic/multiprocessing/api.py:732] "
    body = ["Traceback (most recent call last):", '  File "/srv/job/train.py", line 41, in _wrap', "    fn(i, *args)",
            "KeyError: 'input_ids'"]
    assert _modes(tmp_path, "".join(head + b + "\n" for b in body)) == {"user_code_error"}


def test_a_communicator_aborted_without_a_reason_is_a_hang(tmp_path: Path) -> None:
    assert _modes(tmp_path, _traceback("RuntimeError: NCCL communicator was aborted.")) == {"nccl_timeout"}


def test_a_watchdog_report_wrapped_at_the_terminals_width_is_read(tmp_path: Path) -> None:
    text = ("[rank6]:[E429 13:51:12.384372190 ProcessGroupNCCL.cpp:632] [Rank 6] Watchdog caught collective operati\n"
            "on timeout: WorkNCCL(SeqNum=311, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 6\n"
            "00045 milliseconds before timing out.\n")
    assert _modes(tmp_path, text) == {"nccl_timeout"}

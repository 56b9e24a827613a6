"""The classes of defect the fifth round of real excerpts showed (tests/real_excerpts/*_beyond5.toml), each stated
on shapes of its own: the kernel's other lockup detectors (the workqueue watchdog, RCU's stall detector), a CUDA
library's status outside torch's 'CUDA error:' wording (THC, CNTK, Caffe), Moab's 'job preempted (node failure)',
and headerless `sacct --brief` rows."""

from __future__ import annotations

from pathlib import Path

import pytest
from excerpt_events import events as _events
from excerpt_events import modes as _modes


@pytest.mark.parametrize(("line", "kind"), [
    ("[90211.004417] BUG: workqueue lockup - pool cpus=3 node=0 flags=0x0 nice=0 stuck for 41s!", "workqueue_lockup"),
    ("Oct  9 04:05:06 gpu-c12 kernel: [90211.004417] BUG: workqueue lockup - pool cpus=0-95 flags=0x4 nice=0 stuck "
     "for 1022s!", "workqueue_lockup"),
    ("[ 7731.551002] rcu: INFO: rcu_sched self-detected stall on CPU", "rcu_stall"),
    ("[ 7731.551002] INFO: rcu_preempt detected stalls on CPUs/tasks:", "rcu_stall"),
    ("[ 7731.551002] rcu: INFO: rcu_preempt detected expedited stalls on CPUs/tasks: { 12-... } 21002 jiffies",
     "rcu_stall"),
])
def test_the_kernels_other_lockup_detectors_are_node_faults_of_unknown_cause(tmp_path: Path, line: str,
                                                                             kind: str) -> None:
    assert _events(tmp_path, line + "\n", "dmesg.txt") == [(kind, "unknown")]


@pytest.mark.parametrize(("line", "mode"), [
    ("CUBLAS failure 13: CUBLAS_STATUS_EXECUTION_FAILED ; GPU=0 ; hostname=w7 ; expr=cublas_gemm(cuHandle, ...)",
     "cuda_error"),
    ("CUDNN failure 8: CUDNN_STATUS_EXECUTION_FAILED ; GPU=2 ; hostname=w7 ; expr=cudnnConvolutionForward(...)",
     "cuda_error"),
    ("F0311 04:05:06.778899 31337 cudnn_conv_layer.cu:28] Check failed: status == CUDNN_STATUS_SUCCESS (8 vs. 0)  "
     "CUDNN_STATUS_EXECUTION_FAILED", "cuda_error"),
    ("RuntimeError: cublas runtime error : the GPU program failed to execute at /opt/pytorch/aten/src/THC/THCBlas.cu:"
     "258", "cuda_error"),
    # the library's own allocation failure is the GPU's memory, whatever wording carries it
    ("CUBLAS failure 3: CUBLAS_STATUS_ALLOC_FAILED ; GPU=1 ; hostname=w7 ; expr=cublasCreate(&handle)", "cuda_oom"),
])
def test_a_cuda_librarys_status_outside_torchs_wording_is_a_cuda_error(tmp_path: Path, line: str, mode: str) -> None:
    assert _modes(tmp_path, line + "\n", "job.err") == {mode}


def test_a_library_alloc_failure_inside_torchs_wording_is_out_of_memory(tmp_path: Path) -> None:
    text = ("Traceback (most recent call last):\n  File \"fit.py\", line 9, in <module>\n    y = lin(x)\n"
            "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`\n")
    assert _modes(tmp_path, text, "fit.err") == {"cuda_oom"}


@pytest.mark.parametrize(("line", "mode"), [
    ("job preempted (node failure)", "node_failure"),
    ("Message[1] job cancelled - job preempted (node failure)", "node_failure"),
    ("Message[0] job cannot be cancelled, reason='job preempted (node failure)' - job 7781 - Server could not connect "
     "to MOM", "node_failure"),
    ("Job preempted by job 99120.fe1 (priority)", "preemption"),
])
def test_moabs_preemption_reasons_are_read(tmp_path: Path, line: str, mode: str) -> None:
    assert _modes(tmp_path, f"PBS Job Id: 7781.fe1\nJob Name:   sft\n{line}\n", "mail.txt") == {mode}


@pytest.mark.parametrize(("rows", "mode"), [
    (["88120|FAILED|1:0", "88120.batch|FAILED|1:0"], "user_code_error"),
    (["88121|OUT_OF_MEMORY|0:125", "88121.batch|OUT_OF_MEMORY|0:125", "88121.extern|COMPLETED|0:0"], "host_oom"),
    (["88122_4|TIMEOUT|0:0|", "88122_4.batch|CANCELLED|0:15|"], "time_limit"),
    (["88123|NODE_FAIL|0:0", "88123.0|CANCELLED|0:9"], "node_failure"),
])
def test_headerless_sacct_brief_rows_are_read_as_jobid_state_exitcode(tmp_path: Path, rows: list[str],
                                                                       mode: str) -> None:
    assert mode in _modes(tmp_path, "".join(r + "\n" for r in rows), "sacct.txt")


def test_headerless_brief_rows_of_healthy_jobs_carry_no_mode(tmp_path: Path) -> None:
    text = "$ sacct -b -P -n\n5120|COMPLETED|0:0\n5120.batch|COMPLETED|0:0\n5121|RUNNING|0:0\n"
    assert _modes(tmp_path, text, "sacct.txt") == set()


@pytest.mark.parametrize(("text", "kind"), [
    ("[  164.012147] Oops: invalid opcode: 0000 [#1] SMP NOPTI\n"
     "[  164.015081] RIP: 0010:FhgfsOpsCommkit_communicate+0x3d6/0x1620 [beegfs]\n", "fs_module_fault"),
    ("[ 9120.331200] BUG: unable to handle kernel NULL pointer dereference at 0000000000000018\n"
     "[ 9120.331214] RIP: 0010:[<ffffffffc0a1b2c3>]  [<ffffffffc0a1b2c3>] ll_file_read_iter+0x53/0x380 [lustre]\n",
     "fs_module_fault"),
    ("Sep 17 15:08:01 gpu-a01 systemd[1]: Failed to start beegfs-client.service - Start BeeGFS Client.\n",
     "fs_client_failed"),
    ("2026-09-17T15:08:01+0000 gpu-a01 systemd[1]: Failed to mount mnt-lustre.mount - /mnt/lustre.\n",
     "fs_client_failed"),
])
def test_a_shared_filesystem_clients_fault_on_the_node_is_a_filesystem_failure(tmp_path: Path, text: str,
                                                                               kind: str) -> None:
    assert (kind, "filesystem_io") in _events(tmp_path, text, "kern.log")


def test_a_fault_outside_a_filesystems_module_or_another_units_failure_is_not_a_filesystem_one(tmp_path: Path
                                                                                                ) -> None:
    text = ("Sep 17 15:08:01 gpu-a01 kernel: [ 164.015081] RIP: 0010:nvkms_call_rm+0x3d6/0x1620 [nvidia_modeset]\n"
            "Sep 17 15:08:02 gpu-a01 systemd[1]: Failed to start docker.service - Docker Application Container.\n"
            "Sep 17 15:08:03 gpu-a01 kernel: [ 165.000100] nfs: server 10.0.0.9 OK\n")
    assert "filesystem_io" not in _modes(tmp_path, text, "kern.log")


@pytest.mark.parametrize("line", [
    "THCudaCheck FAIL file=/opt/pytorch/torch/lib/THC/THCGeneral.c line=70 error=46 : all CUDA-capable devices are "
    "busy or unavailable",
    "RuntimeError: cuda runtime error (46) : all CUDA-capable devices are busy or unavailable at /opt/pytorch/torch/lib"
    "/THC/THCStream.cpp:40",
    "RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable",
])
def test_cudas_older_wording_of_devices_unavailable_is_a_gpu_the_job_cannot_use(tmp_path: Path, line: str) -> None:
    assert _modes(tmp_path, line + "\n", "train.err") == {"gpu_hw_other"}

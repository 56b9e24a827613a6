"""The classes of defect the fifteenth round of real excerpts showed (tests/real_excerpts/mixed_beyond15.toml), each
stated on shapes of its own: c10d's store timing out a rank that waited for a peer (torch 2.5+'s `wait timeout
after`, the store-based barrier before 2.2) is a hang; NCCL finding no interface to bootstrap over is the launch's
configuration; a launcher's ssh to a node no route leads to is a lost node; a step asking for a node configuration
its allocation lacks and torch built for a newer driver than the node's are the job's configuration; a BMC's SEL
names PCIe faults, the host's hardware and a watchdog reset, and its corrected or cleared records are notices;
gpu-burn's FAULTY verdict is the GPU's hardware."""

from __future__ import annotations

from pathlib import Path

import pytest
from excerpt_events import events as _events
from excerpt_events import modes as _modes


@pytest.mark.parametrize("text", [
    "[rank5]: torch.distributed.DistBackendError: [5] is setting up NCCL communicator and retrieving ncclUniqueId "
    "from [0] via c10d key-value store by key '0', but store->get('0') got error: wait timeout after 1800000ms, keys: "
    "/default_pg/0//cuda//0\n",
    "2026-04-07 08:10:00 | INFO | torch.distributed.distributed_c10d | Waiting in store based barrier to initialize "
    "process group for rank: 0, key: store_based_barrier_key:1 (world_size=64, worker_count=56, timeout=0:30:00)\n"
    "RuntimeError: Timed out initializing process group in store based barrier on rank: 0, for key: "
    "store_based_barrier_key:1 (world_size=64, worker_count=56, timeout=0:30:00)\n",
])
def test_the_store_timing_out_a_rank_that_waited_for_a_peer_is_a_hang(tmp_path: Path, text: str) -> None:
    assert _modes(tmp_path, text, "rank0.log") == {"nccl_timeout"}


def test_nccl_finding_no_interface_to_bootstrap_over_is_the_launchs_configuration(tmp_path: Path) -> None:
    text = ("node-4:7001:7001 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth9\n"
            "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:"
            "1691, internal error - please report this issue to the NCCL developers, NCCL version 2.19.3\n"
            "ncclInternalError: Internal check failed.\n"
            "Last error:\n"
            "Bootstrap : no socket interface found\n")
    assert "user_code_error" in _modes(tmp_path, text, "train.log")


def test_a_launchers_ssh_to_a_node_no_route_leads_to_is_a_lost_node(tmp_path: Path) -> None:
    text = ("ssh: connect to host 10.7.0.31 port 22: No route to host\n"
            "pdsh@login-1: 10.7.0.31: ssh exited with exit code 255\n")
    assert _modes(tmp_path, text, "launch.log") == {"node_failure"}
    refused = "ssh: connect to host 10.7.0.31 port 22: Connection refused\n"
    assert _modes(tmp_path, refused, "launch-2.log") == set()


@pytest.mark.parametrize("line", [
    "srun: error: Unable to create step for job 90122: Requested node configuration is not available",
    "RuntimeError: The NVIDIA driver on your system is too old (found version 12020). Please update your GPU driver "
    "by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx",
])
def test_a_request_the_nodes_cannot_meet_is_the_jobs_configuration(tmp_path: Path, line: str) -> None:
    assert _modes(tmp_path, line + "\n", "job.out") == {"user_code_error"}


def test_a_bmcs_event_log(tmp_path: Path) -> None:
    text = ("$ ipmitool sel elist\n"
            "   1 | 04/01/2026 | 08:00:01 | Event Logging Disabled #0x07 | Log area reset/cleared | Asserted\n"
            "   2 | 04/02/2026 | 10:11:12 | Memory #0x88 | Correctable ECC (CPU0_A1) | Asserted\n"
            "   3 | 04/02/26 | 10:15:40 UTC | Critical Interrupt #0xa1 | PCI SERR (Bus 3a/Dev 00/Func 0) | Asserted\n"
            "   4 | 04/02/2026 | 10:20:00 | Memory #0x88 | Uncorrectable ECC (CPU0_A1) | Asserted\n"
            "   5 | 04/02/2026 | 10:21:30 | Power Supply #0x51 | Failure detected () | Deasserted\n"
            "   6 | 04/02/2026 | 10:25:09 | Watchdog2 #0xca | Hard reset | Asserted\n")
    got = _events(tmp_path, text, "sel.txt")
    assert [m for _, m in got] == [None, None, "pcie_error", "host_hw", None, "node_failure"]
    assert {k for k, _ in got} == {"bmc_sel"}


def test_gpu_burns_faulty_verdict_is_the_gpus_hardware(tmp_path: Path) -> None:
    text = "Tested 4 GPUs:\n\tGPU 0: OK\n\tGPU 1: OK\n\tGPU 2: FAULTY\n\tGPU 3: OK\n"
    assert _events(tmp_path, text, "burn.log") == [("gpu_burn_faulty", "gpu_hw_other")]
    assert _modes(tmp_path, "Tested 2 GPUs:\n\tGPU 0: OK\n\tGPU 1: OK\n", "burn-ok.log") == set()

"""The classes of defect the seventh round of real excerpts showed (tests/real_excerpts/*_beyond7.toml), each on
lines of our own: transport libraries' completion errors outside NCCL's own words (UCX's mlx5 layer, libfabric's
EFA provider), Lustre's watchdog on a stuck service thread, and an NVSwitch SXid kept without its severity line."""

from __future__ import annotations

from pathlib import Path

from excerpt_events import events, modes


def test_ucx_mlx5_completion_errors_are_network_faults_in_each_releases_words(tmp_path: Path) -> None:
    text = (
        "[trn-h04:40211 :0:40211] ib_mlx5_log.c:115  FATAL: Error on mlx5_2:1 QP 0x1a2b wqe[88]: Transport retry "
        "count exceeded (synd 0x15 vend 0x81) opcode RDMA_WRITE\n"
        "ib_mlx5_log.c:143  Receive not ready retry count exceeded on mlx5_4:1/RoCE (synd 0x15 vend 0x82 hw_synd 0/0)\n"
        "ib_mlx5_log.c:143  RC QP 0x77aa wqe[12]: SEND s-e [inl len 44]\n"
    )
    got = events(tmp_path, text, "mpi-job.err")
    assert got == [("ucx_completion_error", "network"), ("ucx_completion_error", "network")]  # not the QP line


def test_a_local_protection_error_is_not_blamed_on_the_fabric(tmp_path: Path) -> None:
    text = "[trn-h04:40212:0:40212] ib_mlx5_log.c:177  Local protection error on mlx5_1:1/IB (synd 0x4 vend 0x56)\n"
    assert events(tmp_path, text, "mpi-job.err") == [("ucx_completion_error", None)]


def test_libfabric_completion_queue_errors_are_network_faults(tmp_path: Path) -> None:
    text = (
        "libfabric:7712:1815000101::core:core:ofi_register_provider():530<info> registering provider: efa (1.0)\n"
        "libfabric:7712:1815000102::core:core:fi_getinfo_():1392<warn> fi_getinfo: provider tcp output empty list\n"
        "libfabric:7712:1815000901::efa:cq:efa_rdm_rxe_handle_error():514<warn> err: 113, message: Remote "
        "unreachable (113)\n"
    )
    assert events(tmp_path, text, "rank3.log") == [("ofi_warning", None), ("ofi_completion_error", "network")]


def test_a_lustre_service_thread_inactive_is_a_filesystem_stall(tmp_path: Path) -> None:
    for line in ("[ 812.220184] LNet: Service thread pid 4410 was inactive for 212.41s. The thread might be hung, or "
                 "it might only be slow and will resume later. Dumping the stack trace for debugging purposes:\n",
                 "[ 812.220184] Lustre: ll_ost_io01_012: service thread pid 4411 was inactive for 301.07s. The thread "
                 "might be hung, or it might only be slow and will resume later.\n"):
        assert modes(tmp_path, line, "dmesg.log") == {"filesystem_io"}


def test_an_sxid_data_line_without_its_severity_line_is_a_flagged_nvlink_error(tmp_path: Path) -> None:
    data = ("[ 90.000101] nvidia-nvswitch0: SXid (PCI:0000:86:00.0): 20034, Data {0x00000010, 0x00000010, "
            "0x00000000, 0x00000010, 0x80005302, 0x00000000, 0x00000000, 0x00000000, 0x00000000}\n")
    assert events(tmp_path, data, "dmesg.log") == [("sxid_data", "nvlink_error")]
    # with its severity line, before or after it, the Data line is that SXid's and adds nothing of its own
    nonfatal = "[ 90.000099] nvidia-nvswitch0: SXid (PCI:0000:86:00.0): 20034, Non-fatal, Link 08 LTSSM fault\n"
    assert events(tmp_path, data + nonfatal, "dmesg.log") == [("sxid", None)]
    assert events(tmp_path, nonfatal + data, "dmesg.log") == [("sxid", None)]


def test_the_allocators_nvml_assert_is_an_out_of_memory_in_disguise(tmp_path: Path) -> None:
    text = ("Traceback (most recent call last):\n"
            '  File "/srv/job/step.py", line 88, in <module>\n'
            "    logits = net(x)\n"
            'RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "../c10/cuda/CUDACachingAllocator.cpp":1154, '
            "please report a bug to PyTorch.\n")
    assert modes(tmp_path, text, "job.log") == {"cuda_oom"}

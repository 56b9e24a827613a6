"""The classes of defect the eighteenth round of real excerpts showed (tests/real_excerpts/mixed_beyond18.toml), each
stated on shapes of its own: NCCL 2.4's check that every rank called the same collective is the program's fault;
UCX's verbs transports (without the mlx5 accelerator) completing a send in error, behind mpirun's timestamped tag,
are the fabric; dcgm-exporter's last-Xid gauge is the Xid it holds, once; the RC watchdog finding a GPU locked is
the GPU; gpud's states (an Xid reason, an NVML call that found its GPU lost) are read. Corrected AER reports hours
apart are a healthy link's noise (tests/test_collector_kernel.py). Xid 8 is the application's, as NVIDIA's catalogue
files it."""

from __future__ import annotations

from pathlib import Path

from excerpt_events import events
from excerpt_events import modes as _modes


def test_nccls_mismatched_collective_check_is_the_programs_fault(tmp_path: Path) -> None:
    text = ("NCCL version 2.4.2+cuda10.1\n"
            "node-b4:4410:4477 [2] init.cc:1250 NCCL WARN Mismatched collective detected, please check your "
            "collective calls at and around rank 11. You can use NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=COLL to see "
            "the collective logs\n")
    assert _modes(tmp_path, text, "job.err") == {"user_code_error"}


def test_ucx_verbs_completion_errors_behind_mpiruns_timestamped_tag_are_the_fabric(tmp_path: Path) -> None:
    line = ("Thu Jan 15 11:02:40 2026[1,{r}]<stderr>:[cn-{h}:9911:0:9911] {t}_verbs_iface.c:{n}   FATAL: send "
            "completion with error: {what}\n")
    for i, (t, what) in enumerate([("rc", "transport retry counter exceeded"), ("ud", "remote access error")]):
        text = line.format(r=3 + i, h=17 + i, t=t, n=60 + i, what=what) + (
            "Thu Jan 15 11:02:41 2026[1,3]<stderr>:==== backtrace ====\n")
        assert _modes(tmp_path, text, f"mpi-{i}.out") == {"network"}


def test_dcgm_exporters_last_xid_gauge_is_that_xid_once(tmp_path: Path) -> None:
    scrape = ("# 2026-03-02T10:00:{s}Z\n# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.\n"
              "# TYPE DCGM_FI_DEV_XID_ERRORS gauge\n"
              'DCGM_FI_DEV_XID_ERRORS{{gpu="0",UUID="GPU-1",device="nvidia0",Hostname="node-q1"}} {a}\n'
              'DCGM_FI_DEV_XID_ERRORS{{gpu="1",UUID="GPU-2",device="nvidia1",Hostname="node-q1"}} {b}\n')
    text = scrape.format(s="00", a=0, b=0) + scrape.format(s="15", a=79, b=0) + scrape.format(s="30", a=79, b=13)
    got = [m for _, m in events(tmp_path, text, "metrics.prom")]
    assert sorted(got) == ["cuda_error", "gpu_fell_off_bus"]  # the gauge holding 79 on is the same Xid
    quiet = scrape.format(s="00", a=0, b=0)
    assert _modes(tmp_path, quiet, "metrics-2.prom") == set()


def test_the_rc_watchdog_finding_a_gpu_locked_is_the_gpu(tmp_path: Path) -> None:
    text = "".join(f"Mar  2 10:00:{s:02d} gpu-7 kernel: NVRM: krcWatchdog_IMPL: RC watchdog: GPU is probably locked!  "
                   "Notify Timeout Seconds: 7\n" for s in (3, 11, 19))
    assert _modes(tmp_path, text, "kern.log") == {"gpu_hw_other"}


def test_gpud_states_name_their_xid_and_a_lost_gpu(tmp_path: Path) -> None:
    xid = "XID 94(Contained ECC error) detected on PCI:0000:4e:00\n"
    assert _modes(tmp_path, xid, "gpud-status.txt") == {"gpu_memory_ecc"}
    nested = '  "reason": "XID 48 (DBE (Double Bit Error) ECC Error) detected on PCI:0000:9b:00",\n'
    assert _modes(tmp_path, nested, "states.json") == {"gpu_memory_ecc"}
    lost = "failed to get device power usage for GPU-0aa1: ERROR_GPU_IS_LOST\n"
    assert _modes(tmp_path, lost, "gpud.log") == {"gpu_fell_off_bus"}
    app = "XID 13(Graphics Engine Exception) detected on PCI:0000:1a:00\n"
    assert _modes(tmp_path, app, "gpud-2.txt") == {"cuda_error"}


def test_xid_8_a_channel_idle_timeout_is_the_applications_as_nvidias_catalogue_files_it(tmp_path: Path) -> None:
    # the catalogue: ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT, "GPU stopped processing", immediate action RESTART_APP
    text = "[ 4411.250181] NVRM: Xid (PCI:0000:65:00): 8, pid=20731, Channel 00000010\n"
    assert _modes(tmp_path, text, "dmesg.log") == {"cuda_error"}

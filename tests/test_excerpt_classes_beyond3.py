"""The classes of defect the third round of real excerpts showed (tests/real_excerpts/*_beyond3.toml), each stated
on shapes of its own: torch.save's writer failures are the storage's, a node reason pasted without its record is
still scontrol's, the shell's `Killed` is a SIGKILL exit, and UTF-8 text is not binary."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_collector_slurm import events

from clusterlab import Lab
from clusterlab.collectors import scontrol, torch_dist
from clusterlab.ingest.parse import _describe


def _modes(tmp_path: Path, text: str, name: str = "excerpt.log") -> set[str]:
    path = tmp_path / name
    path.write_text(text)
    with Lab(":memory:") as lab:
        lab.ingest(path)
        return set(lab.sql("SELECT DISTINCT failure_mode FROM events WHERE failure_mode IS NOT NULL")
                   ["failure_mode"].to_list())


def _traceback(last: str) -> str:
    return ("Traceback (most recent call last):\n  File \"/work/run/save.py\", line 41, in save_shard\n"
            f"    torch.save(shard, path)\n{last}\n")


@pytest.mark.parametrize("last", [
    "RuntimeError: [enforce fail at inline_container.cc:588] . PytorchStreamWriter failed writing file data/91: "
    "file write failed",
    "RuntimeError: [enforce fail at inline_container.cc:778] . PytorchStreamWriter failed writing file data.pkl: "
    "file write failed",
    "RuntimeError: [enforce fail at inline_container.cc:325] . unexpected pos 524416 vs 524304",
])
def test_torch_saves_writer_failures_are_the_storages(tmp_path: Path, last: str) -> None:
    assert _modes(tmp_path, _traceback(last)) == {"filesystem_io"}


def test_a_reader_failure_of_a_checkpoint_stays_the_codes(tmp_path: Path) -> None:
    # NOTE: reading a truncated archive names no storage error of its own: the class is the writer's only
    last = "RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory"
    assert _modes(tmp_path, _traceback(last)) == {"user_code_error"}


def test_a_node_reason_pasted_without_its_record_is_read() -> None:
    assert scontrol.sniff(b"Node: gpu-[3-4]\nReason=Not responding [slurm@2026-05-02T10:11:12]\n", "x")
    lost, person = events(scontrol, "Down since: Reason=Kill task failed [root@2026-05-02T10:11:12]",
                          "Reason=rack move [ops@2026-05-02T11:00:00]")
    assert (lost["kind"], lost["host"], lost["failure_mode"]) == ("scontrol_node", None, "node_failure")
    assert person["failure_mode"] is None


def test_a_reason_inside_a_record_stays_that_records() -> None:
    rows = events(scontrol, "NodeName=gpu-021 Arch=x86_64 CoresPerSocket=48", "   State=DOWN ThreadsPerCore=2",
                  "   Reason=Not responding [slurm@2026-05-02T10:11:12]")
    assert [(r["host"], r["failure_mode"]) for r in rows] == [("gpu-021", "node_failure")]


def test_an_unstamped_reason_word_alone_is_no_scontrol_record() -> None:
    assert not scontrol.sniff(b"INFO: restart Reason=manual\n", "x")


@pytest.mark.parametrize("tail", [
    "Killed",
    "/var/spool/slurmd/job00912/slurm_script: line 14: 70212 Killed                  python train.py --bs 64",
    "[1]+  Killed                  python train.py --bs 64",
    "zsh: killed     python train.py --bs 64",
])
def test_the_shells_killed_report_alone_is_the_oom_killers(tmp_path: Path, tail: str) -> None:
    head = "epoch 3 | step 4100 | loss 2.3117\nepoch 3 | step 4200 | loss 2.3052\n"
    assert torch_dist.sniff((head + tail + "\n").encode(), "x")
    assert _modes(tmp_path, head + tail + "\n", "train.log") == {"host_oom"}


def test_the_shells_killed_after_the_schedulers_time_limit_is_not_an_oom(tmp_path: Path) -> None:
    text = ("epoch 3 | step 4100 | loss 2.3117\n"
            "slurmstepd: error: *** JOB 88121 ON gpu-07 CANCELLED AT 2026-05-02T10:11:12 DUE TO TIME LIMIT ***\n"
            "Killed\n")
    assert _modes(tmp_path, text, "slurm-88121.out") == {"time_limit", "unknown"}


def test_a_word_killed_inside_a_sentence_is_no_exit(tmp_path: Path) -> None:
    text = "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\nValueError: worker Killed early\n"
    assert _modes(tmp_path, text) == {"user_code_error"}


def test_utf8_text_is_described_as_text_not_binary() -> None:
    bar = "100%|" + "\u2588" * 60 + "| 3000001/3000001 [03:41<00:00, 13544.87it/s]\n"
    assert _describe((bar * 20).encode()).startswith("first line")
    assert _describe(bytes(range(256)) * 8) == "binary data"


def test_composers_console_logger_nan_loss_is_a_divergence(tmp_path: Path) -> None:
    head = "[batch=40/4800]:\n\t Train time/batch: 39\n\t Train loss/train/total: 7.1182\n"
    assert _modes(tmp_path, head, "composer.log") == set()
    nan = head + "[batch=41/4800]:\n\t Train time/batch: 40\n\t Train loss/train/total: nan\n"
    assert _modes(tmp_path, nan, "composer.log") == {"loss_divergence"}


def test_a_nan_loss_in_a_tqdm_description_is_a_divergence(tmp_path: Path) -> None:
    bar = "  16%|█▋        | {n}/6400 [1:16:09<1:07:04,  1.33it/s]\n"
    fine = "[losses/total_loss: 1.64 | losses/policy_loss: 0.12]:" + bar.format(n=1024)
    assert _modes(tmp_path, fine, "ppo.log") == set()
    assert _modes(tmp_path, fine + "[losses/total_loss: nan | losses/policy_loss: nan]:" + bar.format(n=1044),
                  "ppo.log") == {"loss_divergence"}


def test_a_bare_step_line_with_a_nan_loss_is_a_divergence(tmp_path: Path) -> None:
    head = "0 | loss 11.6250 | lr 3.0e-04 | 101877.40ms\n10 | loss 9.4062 | lr 3.0e-04 | 13581.22ms\n"
    assert _modes(tmp_path, head, "train.log") == set()
    assert _modes(tmp_path, head + "20 | loss nan | lr 3.0e-04 | 13602.91ms\n", "train.log") == {"loss_divergence"}


def test_the_ofi_plugins_failed_transfer_is_the_network(tmp_path: Path) -> None:
    text = ("node-3:2201:2390 [3] ofi_process_cq:1033 NCCL WARN NET/OFI Request 0x7f1a2c04e0 completed with error. "
            "RC: 21. Error: Input/output error. Completed length: 0, Request: { buffer_index: 255, dev: 3 }\n")
    assert _modes(tmp_path, text, "nccl.log") == {"network"}


@pytest.mark.parametrize("line", [
    "RuntimeError: [Rank 0]: Ranks 4, 5 failed to pass monitoredBarrier in 1800000 ms",
    "RuntimeError: Rank 3 timed out in monitoredBarrier after 1800000 ms.",
])
def test_a_monitored_barrier_that_ranks_missed_is_a_hang(tmp_path: Path, line: str) -> None:
    assert _modes(tmp_path, _traceback(line)) == {"nccl_timeout"}
    assert _modes(tmp_path, line + "\n") == {"nccl_timeout"}


@pytest.mark.parametrize("after", ["600000ms", "1800s", "20min"])
def test_c10d_logs_its_store_connect_timeout_in_any_unit(tmp_path: Path, after: str) -> None:
    line = (f"[E728 15:01:59.561275187 socket.cpp:1028] [c10d] The client socket has timed out after {after} while "
            "trying to connect to (10.4.0.2, 29500).\n")
    assert _modes(tmp_path, line) == {"network"}


@pytest.mark.parametrize(("tail", "mode"), [
    ("Segmentation fault (core dumped)", "user_code_error"),
    ("Bus error (core dumped)", "host_oom"),
    ("./train.sh: line 61: 40122 Aborted                 (core dumped) python train.py --bs 64", "nccl_timeout"),
    ("zsh: segmentation fault  python train.py --bs 64", "user_code_error"),
    ("Fatal Python error: Segmentation fault", "user_code_error"),
])
def test_the_shells_report_of_other_signals_is_that_signals_exit(tmp_path: Path, tail: str, mode: str) -> None:
    head = "epoch 3 | step 4100 | loss 2.3117\n"
    assert _modes(tmp_path, head + tail + "\n", "train.log") == {mode}


def test_a_word_of_a_signal_in_prose_is_no_exit(tmp_path: Path) -> None:
    text = "INFO: Aborted! (user pressed Ctrl-C twice)\nNOTE: a Segmentation fault is reported below if any\n"
    assert _modes(tmp_path, text, "train.log") == set()


_SMI_HEAD = ("| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n"
             "|=========================================+========================+======================|\n")


def _smi_gpu(i: int, ecc: str = "0", fan: str = "N/A", power: str = "71W") -> str:
    return (f"|   {i}  NVIDIA H100 80GB HBM3          On  |   00000000:{0x18 + i:02X}:00.0 Off |"
            f"{ecc:>21} |\n| {fan:<4}  31C    P0            {power:>5} /  700W |       4MiB /  81559MiB |"
            "      0%      Default |\n")


def test_a_healthy_nvidia_smi_table_raises_nothing(tmp_path: Path) -> None:
    assert _modes(tmp_path, _SMI_HEAD + _smi_gpu(0) + _smi_gpu(1, ecc="N/A", fan="30%"), "smi.txt") == set()


def test_a_gpu_showing_err_in_the_table_is_a_gpu_fault(tmp_path: Path) -> None:
    assert _modes(tmp_path, _SMI_HEAD + _smi_gpu(0) + _smi_gpu(1, fan="ERR!", power="ERR!"), "smi.txt") == {
        "gpu_hw_other"}


def test_a_volatile_uncorrectable_ecc_count_in_the_table_is_an_ecc_fault(tmp_path: Path) -> None:
    assert _modes(tmp_path, _smi_gpu(0) + _smi_gpu(1, ecc="2"), "smi.txt") == {"gpu_memory_ecc"}

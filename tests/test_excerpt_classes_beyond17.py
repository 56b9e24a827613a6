"""The classes of defect the seventeenth round of real excerpts showed (tests/real_excerpts/mixed_beyond17.toml), each
stated on shapes of its own: a terminal session pasted whole (the scheduler's verdict, nvidia-smi failing to reach a
GPU, then `dmesg`) is read by every line-oriented collector, not taken for an nvidia-smi report; `docker inspect`'s
`"OOMKilled": true` is the host's memory; Keras 1.x's epoch line with a NaN loss is a divergence."""

from __future__ import annotations

from pathlib import Path

from excerpt_events import modes as _modes


def test_a_terminal_session_pasted_whole_is_read_line_by_line(tmp_path: Path) -> None:
    text = ("slurmstepd: error: *** JOB 5120 ON gpu-k2 CANCELLED AT 2026-04-08T02:11:40 DUE TO NODE FAILURE ***\n"
            "[root@gpu-k2 ~]# nvidia-smi\n"
            "Unable to determine the device handle for GPU0000:1A:00.0: Unknown Error\n"
            "[root@gpu-k2 ~]# dmesg -T | grep Xid\n"
            "[Wed Apr  8 02:05:13 2026] NVRM: Xid (PCI:0000:1a:00): 79, pid='<unknown>', name=<unknown>, GPU has "
            "fallen off the bus.\n")
    assert {"gpu_fell_off_bus", "node_failure"} <= _modes(tmp_path, text, "session.txt")


def test_nvidia_smis_own_report_of_an_unreachable_gpu_is_still_its_own(tmp_path: Path) -> None:
    text = "$ nvidia-smi\nUnable to determine the device handle for GPU0000:1A:00.0: Unknown Error\n"
    assert _modes(tmp_path, text, "smi.txt") == {"gpu_hw_other"}


def test_docker_inspects_oom_killed_container_is_the_hosts_memory(tmp_path: Path) -> None:
    text = ('[\n    {\n        "State": {\n            "Status": "exited",\n            "OOMKilled": true,\n'
            '            "ExitCode": 137\n        }\n    }\n]\n')
    assert _modes(tmp_path, text, "inspect.json") == {"host_oom"}
    healthy = text.replace('"OOMKilled": true', '"OOMKilled": false').replace("137", "0")
    assert _modes(tmp_path, healthy, "inspect-2.json") == set()


def test_keras_1_epoch_lines_with_a_nan_loss_are_a_divergence(tmp_path: Path) -> None:
    text = ("Epoch 3/10\n6400/6400 [==============================] - 2s - loss: 0.4211 - acc: 0.8120\n"
            "Epoch 4/10\n6400/6400 [==============================] - 2s - loss: nan - acc: 0.1002\n")
    assert _modes(tmp_path, text, "fit.log") == {"loss_divergence"}

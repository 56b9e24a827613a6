"""Defect classes found by the titan_k8s campaign (torchtitan under a Kubeflow PyTorchJob), on evidence of our own."""

from __future__ import annotations

from pathlib import Path

from clusterlab import Lab


def _titan(ts: str, msg: str) -> str:
    return f"[rank0]:[titan] 2026-04-11 {ts} - root - INFO - {msg}"


def _step(ts: str, n: int) -> str:
    return _titan(ts, f"step: {n:2}  loss:  4.1200  grad_norm:  0.8800  memory: 40.00GiB(50.00%)  tps: 900  "
                      "tflops: 420.00  mfu: 42.00%")


def test_a_save_cut_by_a_crash_is_not_completed_by_the_next_launchs_save_of_that_step(tmp_path: Path) -> None:
    # one log, two launches (torchrun restarts its workers in place): launch 1 starts the save of step 40 and dies
    # in it; launch 2 loads step 20, reaches step 40 again and saves it in 12 s
    lines = [_titan("02:00:00,000", "Training starts at step 1"), _step("02:00:10,000", 10), _step("02:00:20,000", 20),
             _titan("02:00:20,100", "Saving the checkpoint (or staging if async is enabled)."),
             _titan("02:00:31,100", "Finished saving the checkpoint (or staging if async is enabled)in 11.00 seconds."),
             _step("02:00:41,000", 30), _step("02:00:51,000", 40),
             _titan("02:00:51,050", "Saving the checkpoint (or staging if async is enabled)."),
             _titan("02:04:40,000", "Loading the checkpoint from /ckpt/run9/step-20."),
             _titan("02:05:10,000", "Finished loading the checkpoint in 30.00 seconds."),
             _titan("02:05:10,500", "Training starts at step 21"), _step("02:05:20,000", 30), _step("02:05:30,000", 40),
             _titan("02:05:30,050", "Saving the checkpoint (or staging if async is enabled)."),
             _titan("02:05:42,050", "Finished saving the checkpoint (or staging if async is enabled)in 12.00 seconds.")]
    (tmp_path / "pod.log").write_text("\n".join(lines) + "\n")
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path / "pod.log")
        saves = lab.sql("SELECT step, ok, duration_s, ts FROM checkpoints WHERE action = 'save' ORDER BY line")
    assert saves["step"].to_list() == [20, 40, 40]
    assert saves["ok"].to_list() == [True, False, True]
    assert saves["duration_s"].to_list()[2] == 12.0

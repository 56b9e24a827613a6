"""The classes of defect the eighth round of real excerpts showed in training output and schedulers' reports
(tests/real_excerpts/training_beyond8.toml, slurm_beyond8.toml), each stated on shapes of its own: a tqdm postfix whose
loss key is capitalised, Keras' bar while an epoch runs, wandb's closing run summary, Slurm's mail subject and seff's
report of a job's final state, HTCondor's hold for memory, a grid wrapper's wall-clock verdict, and a pod's status
saying its node was shut down or is gone."""

from __future__ import annotations

from pathlib import Path

import pytest
from excerpt_events import modes as _modes

# --- training output ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("postfix", ["Loss=nan", "LOSS=inf", "Train_Loss=NaN"])
def test_a_tqdm_postfix_loss_key_in_any_case(tmp_path: Path, postfix: str) -> None:
    text = (f"Fitting:  12%|█▏        | 600/5000 [02:11<16:02,  4.57it/s, {postfix}]checkpoint written\n"
            "Fitting:  14%|█▍        | 700/5000 [02:33<15:40,  4.57it/s, Loss=0.41]\n")
    assert _modes(tmp_path, text) == {"loss_divergence"}


def test_a_tqdm_postfix_with_a_finite_capitalised_loss_is_healthy(tmp_path: Path) -> None:
    text = "Fitting:  14%|█▍        | 700/5000 [02:33<15:40,  4.57it/s, Loss=0.41]\n" * 3
    assert _modes(tmp_path, text) == set()


@pytest.mark.parametrize("row", [
    " 333/9000 [>.............................] - ETA: 4:12 - loss: nan - mae: 0.8812",
    "  17/250 [=>............................] - ETA: 31s - acc: 0.51 - loss: NaN",
    " 250/251 [============================>.] - ETA: 0s - loss: nanEpoch 6/40",
])
def test_a_keras_bar_while_the_epoch_runs_with_a_nan_loss(tmp_path: Path, row: str) -> None:
    text = "Epoch 5/40\n" + row + "\n"
    assert _modes(tmp_path, text, "fit.txt") == {"loss_divergence"}


def test_a_keras_bar_with_a_finite_loss_is_healthy(tmp_path: Path) -> None:
    text = "Epoch 5/40\n 333/9000 [>.............................] - ETA: 4:12 - loss: 0.2210 - mae: 0.8812\n"
    assert _modes(tmp_path, text, "fit.txt") == set()


@pytest.mark.parametrize("row", ["wandb:   train/loss nan", "wandb: loss_total inf", "wandb:   Loss NaN"])
def test_wandbs_run_summary_row_of_a_nonfinite_loss(tmp_path: Path, row: str) -> None:
    text = f"wandb: Run summary:\nwandb:   global_step 3310\n{row}\nwandb:   lr 0.0002\n"
    assert _modes(tmp_path, text, "out.txt") == {"loss_divergence"}


def test_wandbs_run_summary_of_finite_values_and_a_nan_metric_that_is_no_loss(tmp_path: Path) -> None:
    text = "wandb: Run summary:\nwandb:   train/loss 0.2210\nwandb:   eval/bleu nan\n"
    assert _modes(tmp_path, text, "out.txt") == set()


# --- schedulers' reports ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("subject", "mode"), [
    ("Slurm Job_id=5120 Name=a Failed, Run time 2-00:00:09, TIMEOUT, ExitCode 0", "time_limit"),
    ("Slurm Job_id=5120 Name=run one Failed, Run time 00:10:02, NODE_FAIL, ExitCode 0", "node_failure"),
    ("Slurm Job_id=5120 Name=a Failed, Run time 00:10:02, OUT_OF_MEMORY, ExitCode 0", "host_oom"),
    ("Slurm Job_id=5120 Name=a Failed, Run time 00:10:02, PREEMPTED, ExitCode 0", "preemption"),
    ("Slurm Array Summary Job_id=5120_* (5120) Name=a Failed, Run time 00:10:02, FAILED, ExitCode 2",
     "user_code_error"),
    ("Slurm Job_id=5120 Name=a Reached time limit, Run time 04:00:00", "time_limit"),
])
def test_slurms_mail_subject_names_the_jobs_final_state(tmp_path: Path, subject: str, mode: str) -> None:
    assert _modes(tmp_path, f"Date: Mon, 1 Mar 2027 10:00:00 +0000\nSubject: {subject}\n", "m.eml") == {mode}


@pytest.mark.parametrize("subject", [
    "Slurm Job_id=5120 Name=a Ended, Run time 00:10:02, COMPLETED, ExitCode 0",
    "Slurm Job_id=5120 Name=a Ended, Run time 00:10:02, CANCELLED, ExitCode 0",
    "Slurm Job_id=5120 Name=a Began, Queued time 00:00:01",
])
def test_slurms_mail_subject_of_a_clean_or_cancelled_end_is_no_failure(tmp_path: Path, subject: str) -> None:
    assert _modes(tmp_path, f"Subject: {subject}\n", "m.eml") == set()


@pytest.mark.parametrize(("state", "mode"), [("TIMEOUT", "time_limit"), ("NODE_FAIL", "node_failure"),
                                             ("OUT_OF_MEMORY", "host_oom"), ("COMPLETED", None),
                                             ("CANCELLED by 4012", None)])
def test_seffs_state_line_names_the_jobs_final_state(tmp_path: Path, state: str, mode: str | None) -> None:
    text = (f"Job ID: 9001\nCluster: c1\nUser/Group: u/g\nState: {state} (exit code 0)\nNodes: 2\n"
            "Job Wall-clock time: 12:00:03\nMemory Efficiency: 41.20% of 400.00 GB\n")
    assert _modes(tmp_path, text, "report.txt") == ({mode} if mode else set())


def test_htcondors_hold_for_memory_is_the_jobs_host_oom(tmp_path: Path) -> None:
    text = ("012 (77.003.000) 2027-02-01 10:00:00 Job was held.\n"
            "\tJob has gone over memory limit of 4096 megabytes. Peak usage: 4410 megabytes.\n\tCode 34 Subcode 0\n")
    assert _modes(tmp_path, text, "condor.log") == {"host_oom"}


def test_a_grid_wrappers_wall_clock_verdict_is_a_time_limit(tmp_path: Path) -> None:
    text = "2027-02-01 10:00:00 ERROR:RetryJob Not retrying job due to wall clock limit (killed on the worker)\n"
    assert _modes(tmp_path, text, "postjob.out") == {"time_limit"}


@pytest.mark.parametrize(("line", "mode"), [
    ("  message: Pod was terminated in response to imminent node shutdown.", "preemption"),
    ("    \"message\": \"Pod was terminated in response to imminent node shutdown.\",", "preemption"),
    ("    message: 'PodGC: node no longer exists'", "node_failure"),
    ("    message: 'GCPControllerManager: node no longer exists'", "node_failure"),
])
def test_a_pods_status_saying_its_node_shut_down_or_is_gone(tmp_path: Path, line: str, mode: str) -> None:
    text = f"status:\n  conditions:\n  - type: DisruptionTarget\n{line}\n  phase: Failed\n"
    assert _modes(tmp_path, text, "status.yaml") == {mode}

"""The classes of defect the ninth round of real excerpts showed in PyTorch output, trainers' output and schedulers'
reports (tests/real_excerpts/pytorch_beyond9.toml, training_beyond9.toml, slurm_beyond9.toml), each stated on shapes
of its own: torch's cuDNN check wording, the elastic agent's rendezvous that timed out, a framework's own guard on
non-finite numbers, Ray's control store losing a node, Torque's mail for a memory resource limit, and Kubernetes' and
Kueue's verdicts (a node's pods lost, a Job past its deadline, a workload preempted)."""

from __future__ import annotations

from pathlib import Path

import pytest
from excerpt_events import events as _events
from excerpt_events import modes as _modes

# --- PyTorch ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED",
    "[rank5]: RuntimeError: cuDNN error: CUDNN_STATUS_MAPPING_ERROR",
    # (a traceback's header glued behind a progress bar: only the exception's own words say what failed)
    "RuntimeError: CuDNN error: CUDNN_STATUS_NOT_SUPPORTED",
])
def test_torchs_cudnn_check_wording_is_a_cuda_error(tmp_path: Path, line: str) -> None:
    text = ("epoch 3:  41%|████      | 410/1000 [02:02<02:55,  3.36it/s]Traceback (most recent call last):\n"
            '  File "/srv/seg/train.py", line 77, in step\n    out = net(x)\n' + line + "\n")
    assert _modes(tmp_path, text, "seg.log") == {"cuda_error"}


def test_a_cudnn_allocation_failure_in_that_wording_stays_out_of_memory(tmp_path: Path) -> None:
    text = "[rank0]: RuntimeError: cuDNN error: CUDNN_STATUS_ALLOC_FAILED\n"
    assert _modes(tmp_path, text, "seg.log") == {"cuda_oom"}


def test_the_elastic_agents_rendezvous_timeout_is_a_hang(tmp_path: Path) -> None:
    text = ("Traceback (most recent call last):\n"
            '  File "/venv/lib/python3.11/site-packages/torch/distributed/elastic/rendezvous/dynamic_rendezvous.py",'
            " line 1120, in next_rendezvous\n"
            "    self._op_executor.run(join_op, deadline, self._get_deadline)\n"
            "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError: \n")
    assert _modes(tmp_path, text, "agent.log") == {"nccl_timeout"}


def test_a_closed_rendezvous_still_names_no_cause(tmp_path: Path) -> None:
    text = ("Traceback (most recent call last):\n"
            '  File "/venv/lib/python3.11/site-packages/torch/distributed/elastic/agent/server/api.py", line 680,'
            " in _rendezvous\n    rdzv_info = spec.rdzv_handler.next_rendezvous()\n"
            "torch.distributed.elastic.rendezvous.api.RendezvousClosedError\n")
    assert _modes(tmp_path, text, "agent.log") == set()


# --- trainers' own guards ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("last", [
    "RuntimeError: The total norm of order 2.0 for gradients from `parameters` is non-finite, so it cannot be "
    "clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
    "`error_if_nonfinite=False`",
    "RuntimeError: The total norm of order inf for gradients from `parameters` is non-finite, so it cannot be clipped.",
    "FloatingPointError: invalid value (nan) encountered in jit(mul)",
    "jax._src.source_info_util.JaxStackTraceBeforeTransformation: FloatingPointError: invalid value (inf) "
    "encountered in exp",
])
def test_a_frameworks_guard_on_nonfinite_numbers_is_divergence(tmp_path: Path, last: str) -> None:
    text = ("step 900 loss 1.2214\nTraceback (most recent call last):\n"
            '  File "/home/u/fit.py", line 51, in <module>\n    update(state, batch)\n' + last + "\n")
    assert _modes(tmp_path, text, "fit.log") == {"loss_divergence"}


def test_a_floating_point_error_that_names_no_nonfinite_value_is_the_code(tmp_path: Path) -> None:
    text = ("Traceback (most recent call last):\n  File \"/home/u/stats.py\", line 9, in <module>\n"
            "    np.divide(a, b)\nFloatingPointError: divide by zero encountered in divide\n")
    assert _modes(tmp_path, text, "stats.log") == {"user_code_error"}


# --- Ray ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "2027-02-01 10:11:12,334\tWARNING worker.py:2037 -- The node with node id: 9f3e and address: 10.1.2.3 and node "
    "name: 10.1.2.3 has been marked dead because the detector has missed too many heartbeats from it. This can "
    "happen when a \t(1) raylet crashes unexpectedly (OOM, preempted node, etc.)",
    "The node with node id: 41aa and ip: 172.16.0.9 has been marked dead because the detector has missed too many "
    "heartbeats from it. This can happen when a raylet crashes unexpectedly or has lagging heartbeats.",
    "The node with client ID 1eadc9 has been marked dead because the monitor has missed too many heartbeats from it.",
    "The actor is dead because its node has died. Node Id: 77b0c1",
])
def test_a_node_rays_control_store_gave_up_on_is_a_node_failure(tmp_path: Path, line: str) -> None:
    assert _events(tmp_path, f"(TrainTrainable pid=101) step 4 loss 0.51\n{line}\n", "driver.log") == [
        ("ray_node_dead", "node_failure")]


def test_rays_memory_kill_stays_host_oom(tmp_path: Path) -> None:
    line = "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory."
    assert ("ray_memory_kill", "host_oom") in _events(tmp_path, line + "\n", "driver.log")


# --- schedulers' reports ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "Job exceeded a memory resource limit (vmem, pvmem, etc.). Job was aborted",
    "Job exceeded its memory limit. Job was aborted",
])
def test_torques_mail_for_a_memory_limit_is_host_oom(tmp_path: Path, line: str) -> None:
    text = f"PBS Job Id: 88120.sched01\nJob Name:   bwa\nExec host:  c41/0-7\nAborted by PBS Server\n{line}\n"
    assert _modes(tmp_path, text, "mail.txt") == {"host_oom"}


@pytest.mark.parametrize("text", [
    "NAME                 READY   STATUS     RESTARTS   AGE\ntrainer-3            1/1     NodeLost   0          2d\n",
    "status:\n  message: Node gpu-44 which was running pod trainer-3 is unresponsive\n  phase: Running\n",
    '{"status": {"phase": "Running", "reason": "NodeLost"}}\n',
])
def test_a_pod_on_a_node_that_stopped_reporting_is_a_node_failure(tmp_path: Path, text: str) -> None:
    assert _modes(tmp_path, text, "pods.txt") == {"node_failure"}


@pytest.mark.parametrize("text", [
    "  conditions:\n  - message: Job was active longer than specified deadline\n    reason: DeadlineExceeded\n",
    "LAST SEEN  TYPE     REASON             OBJECT        MESSAGE\n"
    "2m         Warning  DeadlineExceeded   job/ft-run    Job was active longer than specified deadline\n",
    "status:\n  message: Pod was active on the node longer than the specified deadline\n  phase: Failed\n",
])
def test_a_job_past_its_active_deadline_is_a_time_limit(tmp_path: Path, text: str) -> None:
    assert _modes(tmp_path, text, "job.yaml") == {"time_limit"}


def test_a_grpc_deadline_is_no_time_limit(tmp_path: Path) -> None:
    text = ("E0301 rpc error: code = DeadlineExceeded desc = context deadline exceeded\n"
            "W0301 retrying: reason DeadlineExceeded from etcd client\n")
    assert _modes(tmp_path, text, "controller.log") == set()


def test_a_kueue_workload_preempted_for_a_higher_priority_one_is_a_preemption(tmp_path: Path) -> None:
    text = ("  - lastTransitionTime: \"2027-01-02T03:04:05Z\"\n"
            "    message: 'Preempted to accommodate a workload (UID: 1a2b, JobUID: 3c4d) due to reclamation within the"
            " cohort'\n    reason: Preempted\n    status: \"True\"\n    type: Evicted\n")
    assert _modes(tmp_path, text, "wl.yaml") == {"preemption"}


def test_the_preemptors_own_pending_message_is_no_preemption(tmp_path: Path) -> None:
    text = ("    message: 'couldn''t assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in"
            " flavor h100, 8 more needed. Pending the preemption of 2 workload(s)'\n    reason: Pending\n")
    assert _modes(tmp_path, text, "wl.yaml") == set()

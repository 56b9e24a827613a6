"""The classes of defect the fourth round of real excerpts showed (tests/real_excerpts/*_beyond4.toml), each stated
on shapes of its own: cgroup v1's OOM header, a CPU the watchdog finds stuck, Horovod's rank-only output tag, the
AWS OFI plugin's own log format, a GCE host's termination notice, a workflow manager's verdict on a Slurm job, and a
loss that names its term (`loss_net`) or is an epoch's mean."""

from __future__ import annotations

from pathlib import Path

import pytest
from excerpt_events import events as _events
from excerpt_events import modes as _modes

from clusterlab import Lab


def test_cgroup_v1s_oom_header_alone_is_a_host_oom(tmp_path: Path) -> None:
    text = ("Mar  2 10:11:12 node-b17 kernel: Task in /slurm/uid_1000/job_8812/step_0 killed as a result of limit of "
            "/slurm/uid_1000/job_8812\n"
            "Mar  2 10:11:12 node-b17 kernel: memory: usage 134217728kB, limit 134217728kB, failcnt 91\n")
    assert _events(tmp_path, text, "messages") == [("oom_cgroup_limit", "host_oom")]


@pytest.mark.parametrize("line", [
    "[ 8812.113300] watchdog: BUG: soft lockup - CPU#17 stuck for 26s! [pt_main_thread:40121]",
    "[ 8812.113300] NMI watchdog: Watchdog detected hard LOCKUP on cpu 17",
    "Apr 11 03:04:05 node-b17 kernel: [ 8812.113300] watchdog: BUG: soft lockup - CPU#17 stuck for 26s! [python:9]",
])
def test_a_cpu_the_watchdog_finds_stuck_is_a_node_fault_of_unknown_cause(tmp_path: Path, line: str) -> None:
    assert _modes(tmp_path, line + "\n", "dmesg.txt") == {"unknown"}


def test_syslogds_wall_broadcast_of_a_soft_lockup_is_read(tmp_path: Path) -> None:
    text = ("\nMessage from syslogd@node-b17 at Apr 11 03:04:05 ...\n"
            " kernel:[ 8812.113300] watchdog: BUG: soft lockup - CPU#17 stuck for 26s! [python:9]\n")
    assert _modes(tmp_path, text, "tty.txt") == {"unknown"}


@pytest.mark.parametrize("tag", ["[3]<stderr>:", "[1,3]<stderr>:"])
def test_horovods_rank_only_output_tag_is_a_launcher_prefix(tmp_path: Path, tag: str) -> None:
    lines = ["Traceback (most recent call last):", '  File "/srv/fit.py", line 12, in <module>',
             "    model.load_state_dict(state)", "KeyError: 'decoder.layers.31.mlp.w2.weight'"]
    text = "".join(f"{tag}{ln}\n" for ln in lines)
    assert _modes(tmp_path, text, "hvd.log") == {"user_code_error"}


def test_the_aws_ofi_plugins_own_warn_format_is_an_nccl_network_warning(tmp_path: Path) -> None:
    text = ("INFO: Function: ofi_init Line: 702: NET/OFI Selected Provider is efa\n"
            "WARN: Function: ofi_process_cq Line: 911: NET/OFI Request 0x55d1 completed with error. RC: 5\n"
            "WARN: Function: register_mr Line: 388: NET/OFI Unable to register memory. RC: -12\n")
    assert _events(tmp_path, text, "ofi_test.log") == [("ofi_completion_error", "network"), ("nccl_warn", "network")]


@pytest.mark.parametrize("line", [
    "2026-05-02T10:11:12Z node-gce-4 agent[812]: GCP Metadata Service says termination is imminent",
    "maintenance-event: TERMINATE_ON_HOST_MAINTENANCE",
])
def test_a_gce_hosts_termination_notice_is_a_preemption(tmp_path: Path, line: str) -> None:
    assert _modes(tmp_path, line + "\n", "agent.log") == {"preemption"}


@pytest.mark.parametrize(("state", "mode"), [
    ("TIMEOUT", {"time_limit"}), ("NODE_FAIL", {"node_failure"}), ("PREEMPTED", {"preemption"}),
    ("OUT_OF_MEMORY", {"host_oom"}), ("FAILED", set()),
])
def test_snakemakes_quote_of_the_slurm_state_is_the_schedulers_verdict(tmp_path: Path, state: str,
                                                                       mode: set[str]) -> None:
    text = (f"Error in rule pretrain:\n    message: SLURM-job '71023' failed, SLURM status is: '{state}'. For further "
            "error details see the cluster/cloud log and the log files of the involved rule(s).\n")
    assert _modes(tmp_path, text, "snakemake.log") == mode


def test_nextflows_time_directive_kill_is_a_time_limit(tmp_path: Path) -> None:
    text = "Error executing process > 'FINETUNE (7)'\n\nCaused by:\n  Process exceeded running time limit (12h)\n"
    assert _modes(tmp_path, text, "nextflow.log") == {"time_limit"}


@pytest.mark.parametrize("line", [
    "11:02:03: train iter: 300 loss_net: nan loss_scale: 512.0 norm: nan",
    "[epoch 4/100] [batch 310/520] loss_total: nan loss_cls: nan",
    "Mean Training loss : nan",
    "Epoch summary: average train loss = nan",
])
def test_a_named_term_of_the_loss_or_its_mean_going_nan_is_a_divergence(tmp_path: Path, line: str) -> None:
    head = "11:01:03: train iter: 200 loss_net: 0.8123 loss_scale: 1024.0 norm: 3.1\n"
    assert _modes(tmp_path, head + line + "\n", "train.log") == {"loss_divergence"}


@pytest.mark.parametrize("line", ["Mean Training loss : 0.4127", "11:02:03: train iter: 300 loss_net: 0.7991",
                                  "[epoch 4/100] [batch 310/520] loss_cls: nan loss_total: 0.6931"])
def test_a_finite_named_or_mean_loss_is_no_divergence(tmp_path: Path, line: str) -> None:
    head = "11:01:03: train iter: 200 loss_net: 0.8123 loss_scale: 1024.0 norm: 3.1\n"
    assert _modes(tmp_path, head + line + "\n", "train.log") == set()


def _loop(times: int) -> str:
    return "".join(f"gn-07:40112:40377 [1] NCCL INFO misc/socket.cc:{n} -> 6\n" for _ in range(times) for n in (62, 88))


def test_one_threads_call_failing_again_and_again_without_a_warn_is_a_failed_call(tmp_path: Path) -> None:
    # NOTE: a proxy thread's retry loop never reaches a group's `[Async thread]`; its result names the mode (6: remote)
    assert _events(tmp_path, _loop(3), "nccl.log") == [("nccl_call_failed", "network")]


def test_a_call_failing_twice_is_still_one_short_trace(tmp_path: Path) -> None:
    assert _events(tmp_path, _loop(2), "nccl.log") == []


@pytest.mark.parametrize(("line", "mode"), [
    ("=>> PBS: job killed: walltime 43215 exceeded limit 43200", "time_limit"),
    ("Job exceeded its walltime limit. Job was aborted", "time_limit"),
    ("MOAB_INFO:  job exceeded wallclock limit", "time_limit"),
    ("TERM_RUNLIMIT: job killed after reaching LSF run time limit.", "time_limit"),
    ("=>> PBS: job killed: mem 530000000kb exceeded limit 520093696kb", "host_oom"),
    ("TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.", "host_oom"),
    ("TERM_PREEMPT: job killed after preemption.", "preemption"),
])
def test_other_batch_schedulers_verdicts_are_read(tmp_path: Path, line: str, mode: str) -> None:
    text = "[it 9100] loss 1.9182\n" + line + "\n"
    assert _modes(tmp_path, text, "job.o4412") == {mode}


def test_an_owners_kill_under_lsf_is_no_failure(tmp_path: Path) -> None:
    assert _events(tmp_path, "TERM_OWNER: job killed by owner.\nExited with exit code 130.\n", "job.out") == [
        ("batch_killed", None)]


@pytest.mark.parametrize("line", [
    "[1733000000.120044] [gpu-c3:8812:0]  rc_mlx5_iface.c:524  UCX  ERROR   mlx5_0:1 remote access error",
    "[gpu-c3:8812:0:8812]    ud_iface.c:732  UCX Fatal: transport error: Endpoint timeout",
    "[gpu-c3:8812] pml_ucx.c:424  Error: ucp_ep_create(proc=17) failed: Destination is unreachable",
    "Tue Mar  3 10:11:12 2026[1,17]<stderr>:[gpu-c3:8812] pml_ucx.c:472  Error: Failed to resolve UCX endpoint for "
    "rank 4",
])
def test_ucx_transport_failures_are_the_networks_on_the_named_host(tmp_path: Path, line: str) -> None:
    path = tmp_path / "mpi.err"
    path.write_text(line + "\n")
    with Lab(":memory:") as lab:
        lab.ingest(path)
        rows = lab.sql("SELECT host, failure_mode FROM events").rows()
    assert rows == [("gpu-c3", "network")]


def test_a_ucx_error_that_names_no_transport_failure_carries_no_mode(tmp_path: Path) -> None:
    line = "[1733000000.1] [gpu-c3:8812:0]  cuda_copy_md.c:341  UCX  ERROR   cuMemGetAddressRange(0x7f) error: invalid"
    assert _modes(tmp_path, line + "\n", "mpi.err") == set()

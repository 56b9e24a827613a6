"""The readings the second set of real excerpts beyond the index asked for, at their edges: a failed NCCL call's
trace read alone only where no WARN tells its story, submitit's verdict on a Slurm signal, Ray's memory kills
counted only when there are some, the device plugin's Xids by the taxonomy."""

from __future__ import annotations

from pathlib import Path

from clusterlab import Lab, taxonomy


def _events(tmp_path: Path, text: str, name: str = "excerpt.log") -> list[tuple[str, str | None]]:
    path = tmp_path / name
    path.write_text(text)
    with Lab(":memory:") as lab:
        lab.ingest(path)
        rows = lab.sql("SELECT kind, failure_mode FROM events ORDER BY line").rows()
    return [(k, m) for k, m in rows]


_CHAIN = """\
gn-14:201772:230118 [0] NCCL INFO misc/socket.cc:564 -> 2
gn-14:201772:230118 [0] NCCL INFO bootstrap.cc:270 -> 2
gn-14:201772:230118 [0] NCCL INFO init.cc:1303 -> 2
gn-14:201772:230118 [0] NCCL INFO group.cc:64 -> 2 [Async thread]
"""


def test_a_trace_to_the_callers_group_without_a_warn_is_a_failed_call(tmp_path: Path) -> None:
    assert ("nccl_call_failed", "unknown") in _events(tmp_path, _CHAIN)


def test_a_trace_under_a_warn_is_that_warns_story(tmp_path: Path) -> None:
    warn = ("gn-14:201772:230118 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<4571> "
            "failed : Connection refused\n")
    events = _events(tmp_path, warn + _CHAIN)
    assert not [e for e in events if e[0] == "nccl_call_failed"]
    assert ("socket_error", "network") in events


def test_a_trace_that_stops_short_of_the_callers_group_is_no_failure(tmp_path: Path) -> None:
    assert _events(tmp_path, "".join(_CHAIN.splitlines(keepends=True)[:3])) == []


def test_submitit_timed_out_is_the_time_limit_and_the_tasks_exit_its_consequence(tmp_path: Path) -> None:
    text = ("submitit WARNING (2024-06-18 04:31:50,118) - Caught signal SIGUSR2 on gpu-a17: this job is timed-out.\n"
            "srun: error: gpu-a17: tasks 0-3: Exited with exit code 1\n")
    modes = {m for _, m in _events(tmp_path, text, "0_log.err")}
    assert modes == {"time_limit", None}


def test_ray_counts_memory_kills_only_when_there_are_some(tmp_path: Path) -> None:
    line = ("(raylet) [2025-11-30 02:14:51,118 E 401271 401271] (raylet) node_manager.cc:3277: {} Workers (tasks / "
            "actors) killed due to memory pressure (OOM), 2 Workers crashed due to other reasons at node\n")
    assert _events(tmp_path, line.format(0)) == []
    assert _events(tmp_path, line.format(4)) == [("ray_memory_kill", "host_oom")]


def test_the_device_plugin_reads_an_xid_as_the_taxonomy_does(tmp_path: Path) -> None:
    text = ("2024/05/19 07:41:02 XidCriticalError: Xid=79 on Device=GPU-8d0e4b21-55c2-4a3f-b0e1-7a9c3e2d4f60, "
            "the device will go unhealthy.\n"
            "2024/05/19 07:45:10 XidCriticalError: Xid=63 on Device=GPU-8d0e4b21-55c2-4a3f-b0e1-7a9c3e2d4f60, "
            "the device will go unhealthy.\n")
    expected = [("xid", "gpu_fell_off_bus"), ("xid", taxonomy.xid(63).failure_mode)]
    assert _events(tmp_path, text, "plugin.log") == expected


def test_kubernetes_reads_oomkilled_not_any_exit_137(tmp_path: Path) -> None:
    text = ("    Last State:     Terminated\n      Reason:       Error\n      Exit Code:    137\n"
            "    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n")
    assert _events(tmp_path, text, "describe.txt") == [("k8s_oom_killed", "host_oom")]


def test_xla_reads_the_allocators_out_of_memory_not_other_exhaustion(tmp_path: Path) -> None:
    text = ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
            "6291456 bytes.\n")
    assert ("xla_oom", "cuda_oom") in _events(tmp_path, text)
    other = "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: TPU backend quota exceeded\n"
    assert not [e for e in _events(tmp_path, other, "other.log") if e[0] == "xla_oom"]


def test_a_cloud_reclaiming_a_spot_host_is_a_preemption_a_scheduled_reboot_none(tmp_path: Path) -> None:
    reboot = '{"Events": [{"EventId": "A1B2", "EventType": "Reboot", "ResourceType": "VirtualMachine"}]}\n'
    assert _events(tmp_path, reboot, "events.json.log") == []
    notice = "Instance is going to be interrupted in 2 minutes. Exiting...\n"
    assert _events(tmp_path, notice) == [("spot_reclaim", "preemption")]

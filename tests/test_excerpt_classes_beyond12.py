"""The classes of defect the twelfth round of real excerpts showed (tests/real_excerpts/mixed_beyond12.toml), each
stated on shapes of its own: gloo failing to connect a new group's ranks is the network between the hosts; a spot
host's reclaim as aws-node-termination-handler logs it (text, key=value and JSON) and as SkyPilot's managed-job
controller logs it (three versions' wordings) is a preemption, an ASG scale-in or a rebalance recommendation is not;
verl's console metrics with a loss key gone NaN or infinite are a divergence, its losses at zero are not; NVSentinel's
health events carry the fault their Xid or DCGM code names, a recovery and a throttling notice none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from excerpt_events import events as _events
from excerpt_events import modes as _modes


@pytest.mark.parametrize("text", [
    # vLLM's Ray workers setting up the CPU group
    "(RayWorkerWrapper pid=5120, ip=10.4.0.12) [rank1]:[E1203 10:02:11.118204331 ProcessGroupGloo.cpp:145] Gloo "
    "connectFullMesh failed with [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:144] no error\n",
    # torch's own traceback of the same failure, behind a torchrun prefix
    "[default3]:Traceback (most recent call last):\n"
    '[default3]:  File "/opt/train.py", line 40, in <module>\n'
    '[default3]:    dist.new_group(ranks, backend="gloo")\n'
    "[default3]:RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:446] "
    "Connection refused\n",
])
def test_gloo_failing_to_connect_a_groups_ranks_is_the_network(tmp_path: Path, text: str) -> None:
    assert _modes(tmp_path, text, "worker.log") == {"network"}


@pytest.mark.parametrize("line", [
    # NTH 1.x (IMDS mode), Go's log prefix and the event struct printed with %v
    "2026/04/02 11:20:31 Got drain event from channel {InstanceID:i-0a1b2c3d4e5f60718 InstanceType:p5.48xlarge "
    "PublicHostname: PublicIP: LocalHostname:ip-10-8-3-21.ec2.internal LocalIP:10.8.3.21} {EventID:spot-itn-"
    "8a0c2f Kind:SPOT_ITN Description:Spot ITN received. Instance will be interrupted at 2026-04-02T11:22:31Z",
    # NTH 1.1x+, zerolog's console writer (key=value)
    "2026/04/02 11:20:31 INF Requesting instance drain event-id=spot-itn-8a0c2f instance-id=i-0a1b2c3d4e5f60718 "
    "kind=SPOT_ITN node-name=ip-10-8-3-21.ec2.internal",
    # ... and the event store's JSON of it
    '2026/04/02 11:20:31 INF Adding new event to the event store event={"Description":"Spot ITN received. Instance '
    'will be interrupted at 2026-04-02T11:22:31Z \\n","EventID":"spot-itn-8a0c2f","Kind":"SPOT_ITN",'
    '"NodeName":"ip-10-8-3-21.ec2.internal","StartTime":"2026-04-02T11:22:31Z"}',
])
def test_node_termination_handlers_spot_interruption_is_a_preemption(tmp_path: Path, line: str) -> None:
    text = "2026/04/02 11:02:00 Started watching for interruption events\n" + line + "\n"
    assert _modes(tmp_path, text, "nth.log") == {"preemption"}


def test_node_termination_handlers_other_drains_are_no_preemption(tmp_path: Path) -> None:
    text = ("2026/04/02 11:02:00 INF Started watching for interruption events\n"
            "2026/04/02 12:40:02 INF Requesting instance drain event-id=asg-lifecycle-term-3132 instance-id=i-0a1b "
            "kind=ASG_LIFECYCLE node-name=ip-10-8-3-22.ec2.internal\n"
            "2026/04/02 12:51:10 INF Adding new event to the event store event={\"Kind\":\"REBALANCE_RECOMMENDATION\","
            "\"Description\":\"Rebalance recommendation received. Instance rebalance recommended at 2026-04-02T12:51:"
            "10Z \\n\"}\n")
    assert _modes(tmp_path, text, "nth.log") == set()


@pytest.mark.parametrize("line", [
    "(ft-7b, pid=3141) I 04-02 11:20:45 controller.py:118] Cluster is preempted (status: INIT). Recovering...",
    "I 04-02 11:20:45 controller.py:545] Cluster is preempted or failed. Recovering...",
    "(ft-7b pid=3141) I 04-02 11:20:45 controller.py:100] The cluster is preempted.",
])
def test_skypilots_controller_finding_the_cluster_preempted_is_a_preemption(tmp_path: Path, line: str) -> None:
    text = ("(ft-7b, pid=3141) I 04-02 11:19:41 controller.py:131] === Checking the job status... ===\n"
            "(ft-7b, pid=3141) I 04-02 11:19:43 controller.py:133] Job status: JobStatus.RUNNING\n"
            f"{line}\n"
            "(ft-7b, pid=3141) D 04-02 11:20:46 recovery_strategy.py:316] Terminating unhealthy spot cluster.\n")
    assert _modes(tmp_path, text, "controller.log") == {"preemption"}


def _verl(step: int, loss: str, kl: str = "0.001") -> str:
    return (f"(TaskRunner pid=8812) step:{step} - global_seqlen/mean:2210.500 - actor/entropy:0.612 - "
            f"actor/pg_loss:{loss} - actor/ppo_kl:{kl} - actor/grad_norm:0.884 - critic/score/mean:0.312 - "
            "timing_s/step:41.207\n")


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf"])
def test_verls_metrics_with_a_loss_not_finite_are_a_divergence(tmp_path: Path, bad: str) -> None:
    text = _verl(10, "0.021") + _verl(11, bad, kl="nan")
    assert _modes(tmp_path, text, "verl.log") == {"loss_divergence"}


def test_verls_metrics_with_losses_at_zero_are_no_fault(tmp_path: Path) -> None:
    text = _verl(1, "0.000") + _verl(2, "-0.000") + _verl(3, "0.004")
    assert _modes(tmp_path, text, "verl.log") == set()


def _health(node: str, seconds: int, message: str, code: str | None, fatal: bool, healthy: bool = False) -> str:
    event = {"version": 1, "agent": "gpu-health-monitor", "componentClass": "GPU", "checkName": "GpuWatch",
             "isFatal": fatal, **({"isHealthy": True} if healthy else {}), "message": message,
             **({"errorCode": [code]} if code else {}),
             "entitiesImpacted": [{"entityType": "GPU", "entityValue": "6"},
                                  {"entityType": "PCI", "entityValue": "0000:c1:00.0"}],
             "generatedTimestamp": {"seconds": seconds}, "nodeName": node}
    return json.dumps({"time": "2026-05-01T08:00:01.5Z", "level": "INFO", "msg": "Handling event for ruleset",
                       "module": "fault-quarantine", "event": {"HealthEvent": event}}, separators=(",", ":")) + "\n"


_START = '{"time":"2026-05-01T07:00:00.1Z","level":"INFO","msg":"Starting","module":"fault-quarantine"}\n'


@pytest.mark.parametrize(("message", "code", "mode"), [
    ("GPU has fallen off the bus (XID 79). Node requires reboot.", "DCGM_FR_GPU_FALLEN_OFF_BUS", "gpu_fell_off_bus"),
    ("Detected XID 48 for GPU 6 Please consult the documentation.", "DCGM_FR_XID_ERROR", "gpu_memory_ecc"),
    ("Pending row remap on GPU 6. Reset the GPU.", "DCGM_FR_ROW_REMAP_FAILURE", "gpu_memory_ecc"),
    ("Detected NvLink errors on GPU 6's link 3.", "DCGM_FR_NVLINK_ERROR_CRITICAL", "nvlink_error"),
])
def test_an_nvsentinel_health_event_is_the_fault_it_names(tmp_path: Path, message: str, code: str,
                                                          mode: str) -> None:
    text = _START + _health("gpu-a-0007", 1777622400, message, code, fatal=True)
    got = _events(tmp_path, text, "fault-quarantine.log")
    assert got == [("health_event", mode)]


def test_an_nvsentinel_recovery_or_notice_is_no_fault_and_the_event_has_the_monitors_time(tmp_path: Path) -> None:
    text = (_START + _health("gpu-a-0007", 1777622400, "No health failures", None, fatal=False, healthy=True)
            + _health("gpu-a-0008", 1777622460, "Clocks are being throttled for GPU 6. Recommended Action=NONE;",
                      "DCGM_FR_CLOCK_THROTTLE_THERMAL", fatal=False))
    assert _modes(tmp_path, text, "fault-quarantine.log") == set()
    from clusterlab import Lab
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path / "fault-quarantine.log")
        rows = lab.sql("SELECT host, ts, kind FROM events ORDER BY line").rows()
    assert [(h, str(t), k) for h, t, k in rows] == [("gpu-a-0007", "2026-05-01 08:00:00", "health_recovered"),
                                                     ("gpu-a-0008", "2026-05-01 08:01:00", "health_event")]

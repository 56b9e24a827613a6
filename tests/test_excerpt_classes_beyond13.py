"""The classes of defect the thirteenth round of real excerpts showed (tests/real_excerpts/mixed_beyond13.toml), each
stated on shapes of its own: an object store failing a checkpoint's transfer on its side (S3's SlowDown or 5xx, GCS's
5xx, the endpoint unreachable) is the storage, a request it refused for the job's credentials is not; Mountpoint for
S3 and s3fs failing an operation because S3 did is the storage, one they refuse for the caller is not; CephFS's
kernel client losing its MDS session is the storage, a monitor failover is not; a node whose kubelet stopped posting
its status is lost; Karpenter acting on a spot interruption is a preemption, on a rebalance recommendation it is not;
Flux's expired allocation is the time limit; HTCondor's failed reconnection and Determined's failed agent are a lost
node; a node Ray's autoscaler terminated is not a failure when the GCS then reports it dead, another node's death
still is."""

from __future__ import annotations

from pathlib import Path

import pytest
from excerpt_events import events as _events
from excerpt_events import modes as _modes

_TB = ("Traceback (most recent call last):\n"
       '  File "/opt/train/ckpt.py", line 88, in upload\n'
       "    client.upload_file(local, bucket, key)\n")


@pytest.mark.parametrize("last", [
    "botocore.exceptions.ClientError: An error occurred (SlowDown) when calling the PutObject operation (reached max "
    "retries: 4): Please reduce your request rate.",
    "botocore.exceptions.ClientError: An error occurred (InternalError) when calling the UploadPart operation (reached "
    "max retries: 4): We encountered an internal error. Please try again.",
    'botocore.exceptions.EndpointConnectionError: Could not connect to the endpoint URL: "https://ckpt-west.s3.us-west-2'
    '.amazonaws.com/run-7/step-900/shard-2.pt"',
    "google.api_core.exceptions.ServiceUnavailable: 503 PUT https://storage.googleapis.com/upload/storage/v1/b/ckpt-eu/o"
    "?uploadType=resumable&upload_id=ADPy: {'code': 503, 'message': 'Backend Error'}",
])
def test_an_object_store_failing_a_transfer_on_its_side_is_the_storage(tmp_path: Path, last: str) -> None:
    assert _modes(tmp_path, _TB + last + "\n", "train.log") == {"filesystem_io"}


def test_an_object_store_refusing_the_jobs_credentials_is_the_users(tmp_path: Path) -> None:
    last = ("botocore.exceptions.ClientError: An error occurred (AccessDenied) when calling the PutObject operation: "
            "Access Denied")
    assert _modes(tmp_path, _TB + last + "\n", "train.log") == {"user_code_error"}


@pytest.mark.parametrize(("line", "mode"), [
    ("Apr  3 02:10:44 g7 mount-s3[3301]: [WARN] ThreadId(04) read{req=77 ino=12 fh=3 offset=0 size=131072 "
     "name=train-0001.tar}: mountpoint_s3_fs::fuse: read failed with errno 5: get request failed: get object request "
     "failed: Client error: dispatch failure", "filesystem_io"),
    ("2026-04-03T02:10:44.118Z  WARN fsync{req=90 ino=14 fh=5 datasync=false}: mountpoint_s3::fuse: fsync failed: put "
     "failed: put request failed: Service error: SlowDown", "filesystem_io"),
    ("Apr  3 02:10:44 g7 s3fs[880]: curl.cpp:RequestPerform(2459): HTTP response code 503, returning EIO. Body Text: "
     "SlowDown", "filesystem_io"),
    ("Apr  3 02:10:44 g7 mount-s3[3301]: [WARN] ThreadId(04) write{req=78 ino=15 fh=6 offset=4096 length=4096 "
     "name=ckpt.pt}: mountpoint_s3_fs::fuse: write failed with errno 22: upload error: out of order write; expected "
     "offset 0 but got 4096", None),
    ("Apr  3 02:10:44 g7 mount-s3[3301]: [WARN] ThreadId(04) read{req=79 ino=16 fh=7 offset=0 size=4096 "
     "name=secret.bin}: mountpoint_s3_fs::fuse: read failed with errno 5: get request failed: get object request "
     "failed: Client error: Forbidden: Access Denied", None),
    ("Apr  3 02:10:44 g7 s3fs[880]: curl.cpp:RequestPerform(2471): HTTP response code 403, returning EPERM. Body "
     "Text: AccessDenied", None),
])
def test_an_s3_mounts_failed_operation_is_the_storage_only_where_s3_failed_it(tmp_path: Path, line: str,
                                                                             mode: str | None) -> None:
    assert _modes(tmp_path, line + "\n", "syslog") == ({mode} if mode else set())


def test_cephfs_losing_its_mds_session_is_the_storage_a_monitor_failover_is_not(tmp_path: Path) -> None:
    lost = ("[90211.300112] ceph: mds1 closed our session\n"
            "[90211.300905] ceph: mds1 reconnect start\n"
            "[90212.101007] ceph: mds1 reconnect denied\n")
    assert _modes(tmp_path, lost, "dmesg.txt") == {"filesystem_io"}
    failover = ("[  80.402219] libceph: mon1 (1)10.9.0.12:6789 session established\n"
                "[7001.063318] libceph: mon1 (1)10.9.0.12:6789 socket closed (con state OPEN)\n"
                "[7001.063357] libceph: mon1 (1)10.9.0.12:6789 session lost, hunting for new mon\n"
                "[7001.065420] libceph: mon0 (1)10.9.0.11:6789 session established\n")
    assert _modes(tmp_path, failover, "dmesg-2.txt") == set()


@pytest.mark.parametrize("text", [
    "Conditions:\n  Type    Status   LastHeartbeatTime   LastTransitionTime   Reason   Message\n"
    "  Ready   Unknown  Mon, 06 Apr 2026 03:02:11 +0000   Mon, 06 Apr 2026 03:02:55 +0000   NodeStatusUnknown   "
    "Kubelet stopped posting node status.\n",
    '{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown", "message": "Kubelet stopped posting node '
    'status."}\n',
])
def test_a_node_whose_kubelet_stopped_posting_its_status_is_lost(tmp_path: Path, text: str) -> None:
    assert _modes(tmp_path, text, "describe-node.txt") == {"node_failure"}


@pytest.mark.parametrize(("kind", "mode"), [("SpotInterruptionKind", "preemption"), ("spot_interrupted", "preemption"),
                                            ("ScheduledChangeKind", "preemption"),
                                            ("RebalanceRecommendationKind", None)])
def test_karpenter_acting_on_an_interruption_message(tmp_path: Path, kind: str, mode: str | None) -> None:
    text = (f'2026-04-06T03:00:01.001Z\tINFO\tcontroller.interruption\tinitiating delete from interruption message\t'
            f'{{"queue": "gpu-q", "messageKind": "{kind}", "node": "ip-10-4-1-9.ec2.internal", "action": '
            f'"CordonAndDrain"}}\n')
    assert _modes(tmp_path, text, "karpenter.log") == ({mode} if mode else set())


@pytest.mark.parametrize(("text", "mode"), [
    ('[Apr06 01:00] submit userid=1001 urgency=16 flags=0 version=1\n[  +0.300100] alloc\n[Apr06 07:00] exception '
     'type="timeout" severity=0 userid=1001 note="resource allocation expired"\n[  +0.004000] finish status=36352\n',
     "time_limit"),
    ("022 (90310.000.000) 04/06 05:11:02 Job disconnected, attempting to reconnect\n"
     "    Socket between submit and execute hosts closed unexpectedly\n"
     "024 (90310.000.000) 04/06 05:31:03 Job reconnection failed\n"
     "    Job not found at execution machine\n", "node_failure"),
    ("ERROR: Trial (Experiment 77) was terminated: allocation failed due to agent failure: agent failed while the "
     "container was running: agent closed with allocated containers\n", "node_failure"),
])
def test_other_schedulers_verdicts(tmp_path: Path, text: str, mode: str) -> None:
    assert _modes(tmp_path, text, "job.log") == {mode}


def test_a_node_rays_autoscaler_terminated_is_no_failure_another_nodes_death_is(tmp_path: Path) -> None:
    text = ("2026-04-06 04:10:00,100\tINFO autoscaler.py:561 -- StandardAutoscaler: Terminating the node with id "
            "ray-w-7 and ip 10.3.0.7. (idle)\n"
            "2026-04-06 04:10:41,500\tWARNING worker.py:2058 -- The node with node id: 9f3a and address: 10.3.0.7 and "
            "node name: 10.3.0.7 has been marked dead because the detector has missed too many heartbeats from it.\n"
            "2026-04-06 05:30:12,700\tWARNING worker.py:2058 -- The node with node id: 1c2b and address: 10.3.0.9 and "
            "node name: 10.3.0.9 has been marked dead because the detector has missed too many heartbeats from it.\n")
    assert _events(tmp_path, text, "driver.log") == [("ray_node_scaled_down", None), ("ray_node_dead", "node_failure")]
    # a death naming no address: the termination just before it in the file explains it, one hours later does not
    unnamed = ("2026-04-06 04:10:00,100\tINFO autoscaler.py:561 -- StandardAutoscaler: Terminating the node with id "
               "ray-w-7 and ip 10.3.0.7. (idle)\n"
               "2026-04-06 04:10:41,500\tWARNING worker.py:1034 -- The node with node id 9f3a has been marked dead "
               "because the detector has missed too many heartbeats from it.\n"
               "2026-04-06 09:00:00,000\tWARNING worker.py:1034 -- The node with node id 77aa has been marked dead "
               "because the detector has missed too many heartbeats from it.\n")
    got = _events(tmp_path, unnamed, "driver-2.log")
    assert got == [("ray_node_scaled_down", None), ("ray_node_dead", "node_failure")]

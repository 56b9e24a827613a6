"""kube-controller-manager's klog: a pod's (or node's) NotReady and the taint manager's eviction are its node lost; a
NotReady that a Ready of the same node follows recovered (the neox_coreweave campaign: a pod's node died, and only
the controller's log and its peers' IB errors said so; the peer printing first was blamed)."""

from __future__ import annotations

from pathlib import Path

from excerpt_events import events


def test_the_controllers_not_ready_and_eviction_are_a_lost_node_and_a_recovery_is_none(tmp_path: Path) -> None:
    text = ('I0301 04:10:05.100000       1 event.go:291] "Event occurred" object="ml/job-worker-3" kind="Pod" '
            'apiVersion="v1" type="Warning" reason="NodeNotReady" message="Node is not ready"\n'
            'I0301 04:15:05.200000       1 taint_manager.go:106] "NoExecuteTaintManager is deleting pod" '
            'pod="ml/job-worker-3"\n'
            'I0301 05:00:00.000000       1 event.go:291] "Event occurred" object="gpu-7" kind="Node" apiVersion="v1" '
            'type="Normal" reason="NodeNotReady" message="Node gpu-7 status is now: NodeNotReady"\n'
            'I0301 05:00:31.000000       1 event.go:291] "Event occurred" object="gpu-7" kind="Node" apiVersion="v1" '
            'type="Normal" reason="NodeReady" message="Node gpu-7 status is now: NodeReady"\n')
    got = events(tmp_path, text, "kube-controller-manager.log")
    assert got == [("k8s_node_not_ready", "node_failure"), ("k8s_pod_evicted", "node_failure"),
                   ("k8s_node_not_ready", None), ("k8s_node_ready", None)]

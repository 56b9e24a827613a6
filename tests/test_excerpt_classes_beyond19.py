"""The classes of defect the nineteenth round of real excerpts showed (tests/real_excerpts/mixed_beyond19.toml), each
stated on shapes of its own: `kubectl get pods` and `kubectl get nodes` tables (OOMKilled, Unknown, NotReady); systemd's
verdict that the kernel's OOM killer took a unit's process; torchelastic's agent losing its rendezvous (a node gone, not
the printing agent's: a symptom's tier); a CUDA kernel's own assertion lines; Azure ML's low-priority preemption; a
loss field labelled in brackets."""

from __future__ import annotations

from pathlib import Path

from excerpt_events import modes as _modes

from clusterlab.diagnose import incidents


def test_kubectl_tables_name_an_oom_killed_pod_and_a_lost_node(tmp_path: Path) -> None:
    pods = ("NAME                 READY   STATUS      RESTARTS   AGE\n"
            "train-0-worker-0     0/1     OOMKilled   2          51m\n"
            "train-0-worker-1     1/1     Running     0          51m\n")
    assert _modes(tmp_path, pods, "pods.txt") == {"host_oom"}
    lost = ("NAME          READY   STATUS    RESTARTS   AGE   IP            NODE\n"
            "ft-worker-3   1/1     Unknown   0          3d    10.8.1.4      gpu-node-17\n")
    assert _modes(tmp_path, lost, "pods-2.txt") == {"node_failure"}
    nodes = ("NAME          STATUS                        ROLES    AGE   VERSION\n"
             "gpu-node-16   Ready                         <none>   88d   v1.29.4\n"
             "gpu-node-17   NotReady,SchedulingDisabled   <none>   88d   v1.29.4\n")
    assert _modes(tmp_path, nodes, "nodes.txt") == {"node_failure"}
    healthy = pods.replace("OOMKilled", "Completed")
    assert _modes(tmp_path, healthy, "pods-3.txt") == set()


def test_systemds_verdict_that_the_oom_killer_took_a_units_process_is_the_hosts_memory(tmp_path: Path) -> None:
    text = ("Mar 04 11:20:31 node-c3 systemd[1]: slurmd.service: A process of this unit has been killed by the OOM "
            "killer.\n"
            "Mar 04 11:20:31 node-c3 systemd[1]: jupyter.service: Failed with result 'oom-kill'.\n")
    assert _modes(tmp_path, text, "journal.txt") == {"host_oom"}


def test_an_agent_that_lost_its_rendezvous_names_a_lost_node_as_a_symptom(tmp_path: Path) -> None:
    text = ("WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node 'trn-4_2210_0' has failed to "
            "send a keep-alive heartbeat to the rendezvous 'job-77' due to an error of type "
            "RendezvousConnectionError.\n")
    assert _modes(tmp_path, text, "agent.log") == {"node_failure"}
    tier = next(t for t, cond in incidents.TIERS if "rendezvous_lost" in cond)
    assert tier <= incidents.SYMPTOM_TIER  # every surviving agent prints it, about another node


def test_a_cuda_kernels_own_assertion_lines_are_a_cuda_error(tmp_path: Path) -> None:
    text = "".join(f"/opt/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1236: indexSelectSmallIndex: block: [7,0,0], "
                   f"thread: [{t},0,0] Assertion `srcIndex < srcSelectDimSize` failed.\n" for t in (64, 65, 66))
    assert _modes(tmp_path, "Epoch 1:   3%|▎         | 41/1250\n" + text, "fit.log") == {"cuda_error"}


def test_azure_mls_low_priority_preemption_is_a_preemption(tmp_path: Path) -> None:
    text = ("StepRun( finetune ) Status: Failed\n"
            "AzureMLCompute job failed. PreemptionError: Nodes of this job got pre-empted. Check if the run has failed "
            "or restarted. Reason: Received pre-emption warning signal\n")
    assert _modes(tmp_path, text, "run.log") == {"preemption"}


def test_a_loss_field_labelled_in_brackets_gone_nan_is_a_divergence(tmp_path: Path) -> None:
    line = "2025-01-09 10:0{m}:00.000 | INFO     | trainer:fit:88 - [R0] | E{e} iter[ 9/ 10] | [Loss] {v} | [lr] 1e-4\n"
    text = "".join(line.format(m=i, e=i, v=v) for i, v in enumerate(("12.5", "9.8", "nan")))
    assert _modes(tmp_path, text, "train.log") == {"loss_divergence"}
    assert _modes(tmp_path, text.replace("nan", "7.1"), "train-2.log") == set()

"""Classes of defect the ray_eks_fsx campaign (tests/campaigns/ray_eks_fsx.py: Ray Train's TorchTrainer on KubeRay on
EKS, EFA, FSx for Lustre, Karpenter) showed, each on evidence of our own:

- a script's own step records forwarded by Ray to the driver's output sit behind Ray's prefix
  (`(RayTrainWorker pid=N, ip=A.B.C.D) 2026-... step 20 loss ...`): they are step records all the same;
- Ray names a node by its address only (that prefix, the GCS's `address: A.B.C.D`, the worker group's table), and
  Kubernetes by its DNS name (`ip-a-b-c-d.<region>.compute.internal`): both are the host the kernel log and the
  inventory call `ip-a-b-c-d` (or the host whose NCCL bootstrap used that address);
- Ray's wrapper exceptions (ActorDiedError, TrainingFailedError: "inspect the previous error messages for a cause")
  name no cause; ESHUTDOWN on a path ("[Errno 108] Cannot send after transport endpoint shutdown: '/...'") is what an
  evicted Lustre client returns: the storage, not the user's code;
- Tune's "Trial task failed for trial ..." is Ray Train restarting its worker group (FailureConfig): a new attempt,
  and a dated line that dates the worker's undated traceback printed just before it;
- a script's "checkpoint ... written in X s" times its save, as "saved in X s" does.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from clusterlab import Lab

T0 = dt.datetime(2026, 8, 14, 10, 0, 0)
INVENTORY = ('[providers.p]\nusd_per_gpu_hour = 2.0\n\n[clusters.k]\nprovider = "p"\ngpus_per_node = 8\n'
             'nodes = "ip-172-31-5-9,ip-172-31-7-40,gpu-a7"\n')


def _ray(ip: str, pid: int, text: str) -> str:
    return f"(RayTrainWorker pid={pid}, ip={ip}) {text}"


def _step(t: dt.datetime, n: int, ip: str = "172.31.5.9") -> str:
    return _ray(ip, 881, f"[rank0]:{t:%Y-%m-%d %H:%M:%S},250 - INFO - step={n} loss=3.{n:03d} time=2.5s")


def test_a_step_record_behind_rays_worker_prefix_is_a_step(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "driver.log").write_text("".join(_step(T0 + dt.timedelta(seconds=25 * k), 10 * k) + "\n"
                                            for k in range(1, 9)))
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        got = lab.sql("SELECT step, step_s, host FROM steps ORDER BY step").rows()
    assert [r[0] for r in got] == [10 * k for k in range(1, 9)]
    assert {r[1] for r in got} == {2.5}
    assert {r[2] for r in got} == {"172.31.5.9"}  # no inventory: the address Ray named the node by


def test_rays_address_and_a_dns_name_are_the_host_named_after_that_address(tmp_path: Path) -> None:
    (tmp_path / "inventory.toml").write_text(INVENTORY)
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "driver.log").write_text(
        _step(T0, 10) + "\n"
        + _ray("172.31.7.40", 902, "RuntimeError: CUDA error: an illegal memory access was encountered") + "\n"
        + f"{T0 + dt.timedelta(seconds=30):%Y-%m-%d %H:%M:%S},004\tWARNING worker.py:2058 -- The node with node id: "
          "9f0e11 and address: 172.31.5.9 and node name: 172.31.5.9 has been marked dead because the detector has "
          "missed too many heartbeats from it. This can happen when a \t(1) raylet crashes unexpectedly\n")
    stamp = f"{T0 + dt.timedelta(minutes=5):%Y-%m-%dT%H:%M:%SZ}"
    (tmp_path / "events.json").write_text(json.dumps({
        "apiVersion": "v1", "kind": "Event", "reason": "NodeNotReady", "type": "Normal",
        "message": "Node ip-172-31-7-40.eu-west-1.compute.internal status is now: NodeNotReady",
        "involvedObject": {"kind": "Node", "name": "ip-172-31-7-40.eu-west-1.compute.internal"},
        "firstTimestamp": stamp, "lastTimestamp": stamp, "source": {"component": "node-controller"}}) + "\n")
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        got = dict(lab.sql("SELECT kind, host FROM events").rows())
        steps = {r[0] for r in lab.sql("SELECT host FROM steps").rows()}
    assert got["cuda_error"] == "ip-172-31-7-40"
    assert got["ray_node_dead"] == "ip-172-31-5-9"
    assert got["k8s_node_not_ready"] == "ip-172-31-7-40"
    assert steps == {"ip-172-31-5-9"}


def test_an_address_a_hosts_nccl_bootstrap_used_is_that_host(tmp_path: Path) -> None:
    (tmp_path / "inventory.toml").write_text(INVENTORY)
    (tmp_path / "nodes" / "gpu-a7").mkdir(parents=True)
    (tmp_path / "nodes" / "gpu-a7" / "nccl.log").write_text(
        "gpu-a7:4411:4411 [0] NCCL INFO Bootstrap : Using ens5:172.31.9.4<0>\n"
        "gpu-a7:4411:4411 [0] NCCL INFO NET/Plugin: Loaded net plugin Libfabric (v8)\n")
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "driver.log").write_text(
        _step(T0, 10) + "\n" + _ray("172.31.9.4", 77, "torch.OutOfMemoryError: CUDA out of memory. Tried to "
                                    "allocate 2.00 GiB. GPU 3 has a total capacity of 79.11 GiB") + "\n"
        + _ray("172.31.99.1", 78, "RuntimeError: CUDA error: an illegal memory access was encountered") + "\n")
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        got = dict(lab.sql("SELECT kind, host FROM events WHERE source = 'torch'").rows())
    assert got == {"cuda_oom": "gpu-a7", "cuda_error": None}  # an address no host claims names none


def _traceback(last: str) -> str:
    return "".join(line + "\n" for line in (
        "Traceback (most recent call last):", '  File "/app/fit.py", line 40, in <module>', "    trainer.fit()", last))


def test_rays_wrapper_exceptions_name_no_cause_and_eshutdown_on_a_path_is_the_storage(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text(
        f"{T0:%Y-%m-%d %H:%M:%S},000\tINFO worker.py:1 -- go\n"
        + _traceback("ray.train.base_trainer.TrainingFailedError: The Ray Train run failed. Please inspect the "
                     "previous error messages for a cause.")
        + _traceback("ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.")
        + _traceback("OSError: [Errno 108] Cannot send after transport endpoint shutdown: '/scratch/ck/step_9/0.pt'")
        + _traceback("ConnectionError: [Errno 108] Cannot send after transport endpoint shutdown"))
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path / "a.log")
        got = lab.sql("SELECT failure_mode, text FROM events WHERE kind = 'python_exception' ORDER BY line").rows()
    modes = {text.split(":")[0].rsplit(".", 1)[-1]: mode for mode, text in got}
    assert modes.get("TrainingFailedError") is None and modes.get("ActorDiedError") is None
    assert modes["OSError"] == "filesystem_io"
    assert modes["ConnectionError"] == "user_code_error"  # a socket's, no path: as before


def test_a_failed_ray_trial_is_a_worker_group_restart_and_dates_the_traceback_before_it(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    t_fail = T0 + dt.timedelta(seconds=400)
    lines = [_step(T0 + dt.timedelta(seconds=25 * k), 10 * k, "10.8.0.3") for k in range(1, 11)]
    lines += [_ray("10.8.0.5", 4120, "Traceback (most recent call last):"),
              _ray("10.8.0.5", 4120, '  File "/app/loop.py", line 88, in train_func'),
              _ray("10.8.0.5", 4120, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB."),
              f"{t_fail:%Y-%m-%d %H:%M:%S},512\tERROR tune_controller.py:1331 -- Trial task failed for trial "
              "TorchTrainer_3c9a1_00000",
              "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
              "The actor is dead because its node has died. Node Id: 77ab01",
              f"Trial TorchTrainer_3c9a1_00000 errored after 4 iterations at {t_fail:%Y-%m-%d %H:%M:%S}. Total "
              "running time: 6min 40s",
              "(autoscaler +7m2s) Adding 1 node(s) of type gpu-workers.",
              "(TorchTrainer pid=311, ip=10.8.0.1) Started distributed worker processes: ",
              "(TorchTrainer pid=311, ip=10.8.0.1) - (ip=10.8.0.3, pid=5001) world_rank=0, local_rank=0, node_rank=0"]
    # the group restarts where the last report left it (step 100): the step counter does not go back
    lines += [_step(t_fail + dt.timedelta(seconds=300 + 25 * k), 100 + 10 * k, "10.8.0.3") for k in range(1, 6)]
    (run / "driver.log").write_text("\n".join(lines) + "\n")
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        attempts = lab.sql("SELECT attempt, first_step, last_step FROM attempts ORDER BY attempt").rows()
        oom = lab.sql("SELECT ts, attempt FROM events WHERE kind = 'cuda_oom'").rows()
        dead = lab.sql("SELECT attempt FROM events WHERE kind = 'ray_node_dead'").rows()
        start = lab.sql("SELECT start_ts FROM attempts WHERE attempt = 2").rows()
    assert attempts == [(1, 10, 100), (2, 110, 150)]
    assert oom == [(t_fail + dt.timedelta(milliseconds=512), 1)]
    # Tune's report of the failure belongs to the failed group; the new group began when its workers ran, after the
    # wait for a node: no earlier than its first stamped line says
    assert dead == [(1,)]
    assert start == [(t_fail + dt.timedelta(seconds=325, milliseconds=250),)]


def test_a_checkpoint_load_whose_path_names_no_step_takes_the_lines_step(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "train.log").write_text(
        f"{T0:%Y-%m-%d %H:%M:%S},000 INFO train: resuming from /ckpt/run7/latest (global step 1500)\n"
        + "".join(f"{T0 + dt.timedelta(seconds=10 * k):%Y-%m-%d %H:%M:%S},000 INFO train: step {1500 + k} "
                  f"loss=2.5 step_time=10.0s\n" for k in range(1, 6)))
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        got = lab.sql("SELECT action, step FROM checkpoints").rows()
    assert got == [("load", 1500)]


def test_a_checkpoint_written_in_x_seconds_is_a_timed_save(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    t = T0 + dt.timedelta(seconds=100)
    (run / "train.log").write_text(
        "".join(f"{T0 + dt.timedelta(seconds=10 * k):%Y-%m-%d %H:%M:%S},000 INFO train: step {k} loss=2.5 "
                f"step_time=10.0s\n" for k in range(1, 11))
        + f"{t:%Y-%m-%d %H:%M:%S},100 INFO train: saving checkpoint at step 10\n"
        + f"{t + dt.timedelta(seconds=12):%Y-%m-%d %H:%M:%S},600 INFO train: checkpoint step 10 written in 12.5s\n")
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        got = lab.sql("SELECT action, step, duration_s FROM checkpoints WHERE duration_s IS NOT NULL").rows()
    assert got == [("save", 10, 12.5)]


def test_a_restarted_ray_worker_group_began_when_the_raylets_started_its_workers(tmp_path: Path) -> None:
    (tmp_path / "inventory.toml").write_text(INVENTORY.replace("gpu-a7", "ip-10-8-0-3"))
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    t_fail = T0 + dt.timedelta(seconds=400)
    lines = [_step(T0 + dt.timedelta(seconds=25 * k), 10 * k, "10.8.0.3") for k in range(1, 11)]
    lines += [f"{t_fail:%Y-%m-%d %H:%M:%S},512\tERROR tune_controller.py:1331 -- Trial task failed for trial "
              "TorchTrainer_3c9a1_00000",
              "(TorchTrainer pid=311, ip=10.8.0.1) Started distributed worker processes: ",
              "(TorchTrainer pid=311, ip=10.8.0.1) - (ip=10.8.0.3, pid=5001) world_rank=0, local_rank=0, node_rank=0"]
    lines += [_step(t_fail + dt.timedelta(seconds=300 + 25 * k), 100 + 10 * k, "10.8.0.3") for k in range(1, 6)]
    (run / "driver.log").write_text("\n".join(lines) + "\n")
    node = tmp_path / "nodes" / "ip-10-8-0-3"
    node.mkdir(parents=True)

    def raylet(t: dt.datetime, pid: int) -> str:
        return (f"[{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d} I 61 61] (raylet) worker_pool.cc:522: Started "
                f"worker process with pid {pid}, the token is 7\n")
    # a pid the group does not list (an idle worker the raylet keeps warm) says nothing of the group
    (node / "raylet.out").write_text(raylet(t_fail + dt.timedelta(seconds=60), 4999)
                                     + raylet(t_fail + dt.timedelta(seconds=120, milliseconds=40), 5001))
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        start = lab.sql("SELECT start_ts FROM attempts WHERE attempt = 2").rows()
    assert start == [(t_fail + dt.timedelta(seconds=120, milliseconds=40),)]

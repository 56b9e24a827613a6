"""Defect classes found by the titan_k8s campaign (torchtitan under a Kubeflow PyTorchJob), on evidence of our own."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl

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


def _event(ts: str, kind: str, name: str, reason: str, message: str) -> str:
    return json.dumps({"metadata": {"name": f"{name}.1", "namespace": "default"},
                       "involvedObject": {"kind": kind, "name": name}, "reason": reason, "message": message,
                       "source": {"component": "node-controller"}, "firstTimestamp": ts, "lastTimestamp": ts,
                       "count": 1, "type": "Normal"})


def test_k8s_event_objects_say_which_node_was_lost_or_taken_back_and_when(tmp_path: Path) -> None:
    lines = [_event("2026-04-11T02:10:00Z", "Pod", "w-3", "FailedScheduling", "0/4 nodes are available"),
             _event("2026-04-11T03:00:00Z", "Node", "kb-07", "NodeNotReady", "Node kb-07 status is now: NodeNotReady"),
             _event("2026-04-11T03:01:30Z", "Node", "kb-07", "NodeReady", "Node kb-07 status is now: NodeReady"),
             _event("2026-04-11T04:00:00Z", "Node", "kb-02", "NodeNotReady", "Node kb-02 status is now: NodeNotReady"),
             _event("2026-04-11T05:00:00Z", "Node", "kb-05", "PreemptScheduled", "VM scheduled to be preempted")]
    (tmp_path / "events.jsonl").write_text("\n".join(lines) + "\n")
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path / "events.jsonl")
        ev = lab.sql("SELECT ts, host, failure_mode FROM events WHERE failure_mode IS NOT NULL ORDER BY ts")
    # kb-07 came back: no failure; kb-02 never did; kb-05 was taken back by its cloud
    assert ev["host"].to_list() == ["kb-02", "kb-05"]
    assert ev["failure_mode"].to_list() == ["node_failure", "preemption"]
    assert str(ev["ts"][0]) == "2026-04-11 04:00:00"


def test_a_checkpoint_server_two_hosts_report_is_blamed_as_the_server(tmp_path: Path) -> None:
    # 4 nodes; the save's writes of kx-2 and kx-4 hang on the NFS server fsx9, DCP raises EIO on every rank
    root = tmp_path
    (root / "runs/r5/attempt-1").mkdir(parents=True)
    (root / "inventory.toml").write_text('[providers.p]\nusd_per_gpu_hour = 2.0\n\n[clusters.k]\nprovider = "p"\n'
                                         'gpus_per_node = 8\nnodes = "kx-[1-4]"\n')
    (root / "runs/r5/run.toml").write_text('cluster = "k"\ngpus = 32\ntokens_per_step = 131072\n'
                                           'flops_per_token = 5.0e10\n')
    t0 = dt.datetime(2026, 4, 11, 2, 0, 0)

    def at(s: float) -> str:
        return f"{t0 + dt.timedelta(seconds=s):%H:%M:%S},000"

    lines = [_titan(at(0), "Training starts at step 1")] + [_step(at(6 * i), i) for i in range(10, 210, 10)]
    lines += [_titan(at(1201), "Saving the checkpoint (or staging if async is enabled)."),
              "[rank0]: Traceback (most recent call last):",
              '[rank0]:   File "/ws/titan/train.py", line 612, in train',
              "[rank0]: torch.distributed.checkpoint.api.CheckpointException: CheckpointException "
              "ranks:dict_keys([9, 27])",
              "[rank0]: Traceback (most recent call last): (RANK 9)",
              "[rank0]: OSError: [Errno 5] Input/output error",
              f"E0411 {at(1390)[:8]}.000000 7 torch/distributed/elastic/multiprocessing/api.py:869] failed "
              "(exitcode: 1) local_rank: 0 (pid: 88) of binary: /usr/bin/python3"]
    (root / "runs/r5/attempt-1/train.log").write_text("\n".join(lines) + "\n")
    for host, first in (("kx-2", 1211), ("kx-4", 1216)):
        (root / f"nodes/{host}").mkdir(parents=True)
        (root / f"nodes/{host}/journal-k.log").write_text("".join(
            f"{t0 + dt.timedelta(seconds=first + 40 * k):%Y-%m-%dT%H:%M:%S}.000000+00:00 {host} kernel: nfs: server "
            "fsx9 not responding, timed out\n" for k in range(4)))
    with Lab(":memory:") as lab:
        lab.ingest(root)
        inc = lab.incidents("r5").filter(pl.col("failure_mode") == "filesystem_io").row(0, named=True)
    assert inc["host"] == "fsx9"


_SMI_HEAD = ("timestamp, index, pci.bus_id, utilization.gpu [%], temperature.gpu, power.draw [W], "
             "clocks.current.sm [MHz], clocks_event_reasons.hw_slowdown")


def _smi(t0: dt.datetime, rows: int, gpu_line) -> str:
    out = [_SMI_HEAD]
    for k in range(rows):
        t = t0 + dt.timedelta(seconds=300 * k)
        out += [f"{t:%Y/%m/%d %H:%M:%S}.000, {g}, 00000000:{0x18 + 16 * g:02X}:00.0, {gpu_line(k, g)}"
                for g in range(4)]
    return "\n".join(out) + "\n"


def _run_bundle(root: Path, slow_from: int) -> None:
    """Run r7 on kb-1, kb-2 (kb-3 in attempt 1 only, then idle: its clocks down, nothing runs on it): 3000 steps at
    2.00 s a step, then 2000 at 2.12 s with kb-2's GPU 1 braked; a save every 100 steps; a log line every 10 steps."""
    (root / "inventory.toml").write_text('[providers.p]\nusd_per_gpu_hour = 2.0\n\n[clusters.k]\nprovider = "p"\n'
                                         'gpus_per_node = 4\nnodes = "kb-[1-3]"\n')
    (root / "runs/r7").mkdir(parents=True)
    (root / "runs/r7/run.toml").write_text('cluster = "k"\ngpus = 8\ntokens_per_step = 65536\nflops_per_token = 5e10\n')
    t0 = dt.datetime(2026, 4, 11, 6, 0, 0)
    for k, (start_s, step_s, first, count) in enumerate([(0, 2.0, 1, 3000), (7200, 2.12, 3001, 2000)], 1):
        t = t0 + dt.timedelta(seconds=start_s)
        lines = [_titan(f"{t:%H:%M:%S},000", f"Training starts at step {first}")]
        for n in range(first, first + count):
            t += dt.timedelta(seconds=step_s)
            if n % 10 == 0:
                lines.append(_step(f"{t:%H:%M:%S},{t.microsecond // 1000:03d}", n))
            if n % 100 == 0:
                lines.append(_titan(f"{t:%H:%M:%S},{t.microsecond // 1000 + 1:03d}",
                                    "Saving the checkpoint (or staging if async is enabled)."))
                t += dt.timedelta(seconds=20)
                lines.append(_titan(f"{t:%H:%M:%S},{t.microsecond // 1000:03d}", "Finished saving the checkpoint (or "
                                    "staging if async is enabled)in 20.00 seconds."))
        for host in ("kb-1", "kb-2", "kb-3")[:4 - k]:  # each node's pod prints the same lines (its local rank 0's)
            (root / f"runs/r7/attempt-{k}/{host}").mkdir(parents=True)
            (root / f"runs/r7/attempt-{k}/{host}/train.log").write_text("\n".join(lines) + "\n")
    for host in ("kb-1", "kb-2", "kb-3"):
        def line(k: int, g: int, host: str = host) -> str:
            if host == "kb-3" and k >= slow_from:  # out of the job after attempt 1: idle
                return "0 %, 33, 70.00 W, 345 MHz, Not Active"
            braked = host == "kb-2" and g == 1 and k >= slow_from
            return "99 %, 64, 560.00 W, 1860 MHz, Active" if braked else "99 %, 64, 650.00 W, 1980 MHz, Not Active"
        (root / f"nodes/{host}").mkdir(parents=True)
        (root / f"nodes/{host}/gpu-query.csv").write_text(_smi(t0, 48, line))


def test_one_braked_gpu_for_a_whole_attempt_logged_every_ten_steps_is_one_straggling_stretch(tmp_path: Path) -> None:
    # kb-2 GPU 1 braked from 10 minutes before attempt 2 began (2 h in) to the end: no onset inside the slow stretch
    _run_bundle(tmp_path, slow_from=22)
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        at = lab.attribute("r7")
        inc = at.incidents.filter(pl.col("failure_mode") == "gpu_throttle")
        cats = dict(at.rows.group_by("category").agg(pl.col("gpu_hours").sum()).iter_rows())
    # one incident for the attempt's slow hour-plus, not one per save-cut piece or per logged record; on kb-2 only
    # (kb-3's idle clock is no throttle)
    assert inc["host"].to_list() == ["kb-2"]
    assert inc["attempt"].to_list() == [2]
    # ~0.12 s a step over 2000 steps on 8 GPUs is the straggler's, not an unexplained slowdown
    assert abs(cats.get("straggler", 0.0) - 8 * 2000 * 0.12 / 3600) < 0.05
    assert cats.get("slowdown", 0.0) < 0.02


def _agent(t: dt.datetime, level: str, where: str, msg: str) -> str:
    return f"{level}{t:%m%d %H:%M:%S}.{t.microsecond:06d} 1 torch/distributed/elastic/{where}] {msg}"


def test_a_hung_worker_torchrun_must_sigkill_names_its_node_and_the_restart_begins_with_the_new_workers(
        tmp_path: Path) -> None:
    # two pods' torchrun (LOGLEVEL=INFO), local rank 0 shown; launch 1 hangs after step 300 (local rank 3 of pd-2
    # wedged), both watchdogs fire 100 s later, torchrun restarts in place; pd-2's agent must SIGKILL local rank 3;
    # the new worker group starts after a 40 s rendezvous and resumes from step 200
    t0 = dt.datetime(2026, 4, 11, 9, 0, 0)

    def at(s: float) -> dt.datetime:
        return t0 + dt.timedelta(seconds=s)

    def ts(s: float) -> str:
        return f"{at(s):%H:%M:%S},{at(s).microsecond // 1000:03d}"

    hang, restart, start2 = 900.0, 1003.5, 1060.0
    (tmp_path / "inventory.toml").write_text('[providers.p]\nusd_per_gpu_hour = 2.0\n\n[clusters.k]\nprovider = "p"\n'
                                             'gpus_per_node = 8\nnodes = "pd-[1-3]"\n')
    for g, host in enumerate(("pd-1", "pd-2")):
        r = 8 * g
        lines = [_agent(at(1), "I", "agent/server/api.py:688", "[rank] Starting worker group"),
                 _titan(ts(5), "Training starts at step 1")]
        lines += [_step(ts(3 * n), n).replace("[rank0]", f"[rank{r}]") for n in range(10, 301, 10)]
        lines += [f"[rank{r}]:[E0411 {at(hang + 100 + g):%H:%M:%S}.000100200 ProcessGroupNCCL.cpp:632] [Rank {g}] "
                  "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9120, OpType=ALLREDUCE, NumelIn=4096, "
                  "NumelOut=4096, Timeout(ms)=100000) ran for 100001 milliseconds before timing out.",
                  _agent(at(restart + g), "E", "multiprocessing/api.py:869",
                         "failed (exitcode: -6) local_rank: 0 (pid: 212) of binary: /usr/bin/python3"),
                  _agent(at(restart + g), "I", "agent/server/api.py:859",
                         "[rank] Worker group FAILED. 2/2 attempts left; will restart worker group")]
        if host == "pd-2":
            lines.append(_agent(at(restart + 31), "W", "multiprocessing/api.py:914", "Unable to shutdown process 215 "
                                "via Signals.SIGTERM, forcefully exiting via Signals.SIGKILL"))
        lines += [_agent(at(start2), "I", "agent/server/api.py:688", "[rank] Starting worker group"),
                  _titan(ts(start2 + 40), "Loading the checkpoint from /ckpt/step-200."),
                  _titan(ts(start2 + 70), "Finished loading the checkpoint in 30.00 seconds."),
                  _titan(ts(start2 + 71), "Training starts at step 201")]
        lines += [_step(ts(start2 + 71 + 3 * (n - 200)), n).replace("[rank0]", f"[rank{r}]")
                  for n in range(210, 401, 10)]
        (tmp_path / "runs/r9/pods" / host).mkdir(parents=True)
        (tmp_path / "runs/r9/pods" / host / "0.log").write_text("\n".join(lines) + "\n")
    # a third node's launcher (a replacement pod) starts 20 s before the new worker group and joins its rendezvous
    (tmp_path / "runs/r9/pods/pd-3").mkdir(parents=True)
    (tmp_path / "runs/r9/pods/pd-3/0.log").write_text("\n".join([
        _agent(at(start2 - 20), "I", "launcher/api.py:194", "Starting elastic_operator with launch configs:"),
        _agent(at(start2), "I", "agent/server/api.py:688", "[rank] Starting worker group")]) + "\n")
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        att = lab.sql("SELECT attempt, start_ts, end_ts FROM attempts WHERE run = 'r9' ORDER BY attempt")
        inc = lab.incidents("r9").filter(pl.col("attempt") == 1).row(0, named=True)
    assert (inc["failure_mode"], inc["host"]) == ("nccl_timeout", "pd-2")
    assert att["attempt"].to_list() == [1, 2]
    # launch 1 ends when its wedged worker is killed; launch 2 begins when its workers start
    assert att["end_ts"][0] == at(restart + 31)
    assert att["start_ts"][1] == at(start2)


def test_an_attempt_begins_when_kubernetes_bound_its_pods_to_their_nodes(tmp_path: Path) -> None:
    # the gang of pods is bound to qn-1 and qn-2 at 07:00:00; the image pull takes 4 minutes, torchrun prints first at
    # 07:04:05. Another tenant's pod bound to qn-2 an hour before is no start of this job
    (tmp_path / "inventory.toml").write_text('[providers.p]\nusd_per_gpu_hour = 2.0\n\n[clusters.k]\nprovider = "p"\n'
                                             'gpus_per_node = 8\nnodes = "qn-[1-3]"\n')
    bound = dt.datetime(2026, 4, 12, 7, 0, 0)
    (tmp_path / "cluster").mkdir()
    (tmp_path / "cluster/events.jsonl").write_text("\n".join(
        _event(f"{t:%Y-%m-%dT%H:%M:%SZ}", "Pod", pod, "Scheduled", f"Successfully assigned ml/{pod} to {node}")
        for t, pod, node in [(bound - dt.timedelta(hours=1), "other-job-0", "qn-2"),
                             (bound, "lm7-master-0", "qn-1"), (bound, "lm7-worker-0", "qn-2")]) + "\n")
    for host in ("qn-1", "qn-2"):
        (tmp_path / "runs/lm7/pods" / host).mkdir(parents=True)
        (tmp_path / "runs/lm7/pods" / host / "0.log").write_text("\n".join(
            [_titan("07:04:05,000", "Training starts at step 1").replace("2026-04-11", "2026-04-12")]
            + [_step(f"07:{5 + n // 20:02d}:{3 * n % 60:02d},000", n).replace("2026-04-11", "2026-04-12")
               for n in range(10, 200, 10)]) + "\n")
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        att = lab.sql("SELECT attempt, start_ts FROM attempts WHERE run = 'lm7'")
    assert att["start_ts"].to_list() == [bound]


def test_a_pods_hostname_is_read_as_the_node_the_pod_was_bound_to_then(tmp_path: Path) -> None:
    # pod lm8-worker-0 runs on qn-2, is recreated under the same name on qn-3; NCCL prints the pod's hostname
    (tmp_path / "inventory.toml").write_text('[providers.p]\nusd_per_gpu_hour = 2.0\n\n[clusters.k]\nprovider = "p"\n'
                                             'gpus_per_node = 8\nnodes = "qn-[1-3]"\n')
    t0 = dt.datetime(2026, 4, 13, 1, 0, 0)
    (tmp_path / "cluster").mkdir()
    (tmp_path / "cluster/events.jsonl").write_text("\n".join(
        _event(f"{t0 + dt.timedelta(hours=h):%Y-%m-%dT%H:%M:%SZ}", "Pod", "lm8-worker-0", "Scheduled",
               f"Successfully assigned ml/lm8-worker-0 to {node}") for h, node in ((0, "qn-2"), (2, "qn-3"))) + "\n")
    warn = "lm8-worker-0:212:1871 [0] transport/net_ib.cc:102 NCCL WARN NET/IB : mlx5_0:1 Got async event : port error"
    (tmp_path / "runs/lm8").mkdir(parents=True)
    (tmp_path / "runs/lm8/worker-0.log").write_text("".join(
        f"{t0 + dt.timedelta(hours=h):%Y-%m-%dT%H:%M:%S}.000000000Z stderr F {line}\n"
        for h, line in ((0.01, _titan("01:00:36,000", "Training starts at step 1").replace("04-11", "04-13")),
                        (1, warn), (3, warn))))
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        ev = lab.sql("SELECT ts, host FROM events WHERE source = 'nccl' ORDER BY ts")
    assert ev["host"].to_list() == ["qn-2", "qn-3"]

"""The rank-0 console of a launch, as srun merges it: torchrun, Megatron-LM, NCCL INFO, checkpoints.

Start-up and ending are small and built as time-sorted blocks; the training part (an iteration
line every `LOG_EVERY` steps, save lines) is streamed in step order. The first stamped line is
torchrun's banner at the attempt's start; the ending's writer puts the last one at its end.
"""

from __future__ import annotations

import datetime as dt
import random

import numpy as np

from clusterlab.simulator import textlog
from clusterlab.simulator.fleet import H100_BUS
from clusterlab.simulator.sink import Out
from clusterlab.simulator.stamps import after, from_ms, hostlist, megatron_dt
from clusterlab.simulator.textlog import Log, Proc
from clusterlab.simulator.timeline import SEQ, Attempt, Run, Save

LOG_EVERY = 10
NCCL_VERSION = "2.21.5"
JUNK = b"\x00" * 41 + b"\xff\xfe\x1b[?25l\x9c\x00\x00\n"  # a tee that died mid-write, padded with NULs


def procs_for(run: Run, att: Attempt, r: random.Random) -> tuple[list[Proc], dict[str, int]]:
    """Every training process of the launch and each node's torchrun agent pid."""
    gpn = run.cluster.gpus_per_node
    procs, agents = [], {}
    for n, host in enumerate(att.hosts):
        agent = r.randint(30000, 90000)
        agents[host] = agent
        for local in range(gpn):
            pid = agent + 57 + local
            procs.append(Proc(n * gpn + local, host, local, pid, pid + 623 + 9 * local, pid + 651 + 9 * local,
                              H100_BUS[local]))
    return procs, agents


def ckpt_dir(run: Run) -> str:
    """Where the run saves its checkpoints (as its logs print it)."""
    return f"/lustre/{run.cluster.name}/ckpt/{run.name}"


def _incomplete_latest(log: Log, run: Run, att: Attempt, s: dt.datetime, lost: int) -> None:
    """The launch script's check of `latest` before the launch: the save it points at has a shard torch cannot
    open (a truncated zip: torch.load's own error), so it falls back to the save before it."""
    d = f"{ckpt_dir(run)}/iter_{lost:07d}"
    tb = ["+ python tools/verify_checkpoint.py --load " + ckpt_dir(run),
          f"latest_checkpointed_iteration.txt -> {lost}", "Traceback (most recent call last):",
          '  File "/opt/megatron-lm/tools/verify_checkpoint.py", line 38, in <module>',
          '    torch.load(path, map_location="cpu", weights_only=False)',
          '  File "/usr/local/lib/python3.10/dist-packages/torch/serialization.py", line 1025, in load',
          "    with _open_zipfile_reader(opened_file) as opened_zipfile:",
          '  File "/usr/local/lib/python3.10/dist-packages/torch/serialization.py", line 446, in __init__',
          "    super().__init__(torch._C.PyTorchFileReader(name_or_buffer))",
          "RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory",
          f"+ echo '{d}/mp_rank_{run.cluster.gpus_per_node - 1:02d}/model_optim_rng.pt is incomplete; resuming "
          f"from iteration {att.resumed_from}'",
          f"{d}/mp_rank_{run.cluster.gpus_per_node - 1:02d}/model_optim_rng.pt is incomplete; resuming from "
          f"iteration {att.resumed_from}"]
    log.add(s, "\n".join(tb))


def startup(run: Run, att: Attempt, procs: list[Proc], agents: dict[str, int], r: random.Random,
            lost: int | None, shards: bool = False) -> Log:
    """srun and torchrun start-up, Megatron's arguments, NCCL init, the checkpoint load."""
    log, s = Log(), from_ms(att.start_ms)
    gpn = run.cluster.gpus_per_node
    log.add(s, f"+ echo 'job {att.job_id} on {hostlist(att.hosts)} starting at {s:%a %b %d %H:%M:%S} UTC {s:%Y}'\n"
               f"job {att.job_id} on {hostlist(att.hosts)} starting at {s:%a %b %d %H:%M:%S} UTC {s:%Y}")
    if lost is not None and shards:
        _incomplete_latest(log, run, att, s, lost)
    elif lost is not None:
        log.add(s, f"+ echo 'iter_{lost:07d} is missing from {ckpt_dir(run)}; resuming from iteration "
                   f"{att.resumed_from}'\niter_{lost:07d} is missing from {ckpt_dir(run)}; resuming from iteration "
                   f"{att.resumed_from}")
    log.add(s, f"+ srun --ntasks-per-node=1 torchrun --nnodes {len(att.hosts)} --nproc-per-node {gpn} --rdzv-backend "
               f"c10d --rdzv-endpoint {att.hosts[0]}:29500 pretrain_gpt.py --tensor-model-parallel-size {gpn} "
               f"--save {ckpt_dir(run)} --load {ckpt_dir(run)} --save-interval {run.save_every} "
               f"--log-interval {run.log_every}")
    for n, host in enumerate(att.hosts):
        tt = after(s, 0.11 * n)
        log.add(tt, textlog.omp_banner(tt, agents[host]))
    _megatron_args(log, run, after(s, 9.2))
    ip = {h: run.cluster.ip(h) for h in att.hosts}
    textlog.nccl_init(log, procs, after(s, 14.5), r, ip_of=ip.__getitem__, version=NCCL_VERSION)
    for n in range(len(att.hosts)):
        textlog.nccl_init(log, procs, after(s, 18.0 + 0.05 * n), r, ip_of=ip.__getitem__, version=NCCL_VERSION,
                          nch=8, group=list(range(n * gpn, (n + 1) * gpn)))
    t_init = after(s, 30.4)
    log.add(t_init, f"> initialized tensor model parallel with size {gpn}\n"
                    f"time to initialize megatron (seconds): {(t_init - s).total_seconds() - 1.7:.3f}\n"
                    f"[after megatron is initialized] datetime: {megatron_dt(t_init)} \nbuilding GPT model ...")
    log.add(after(s, 34.1), f" > number of parameters on (tensor, pipeline) model parallel rank (0, 0): "
                            f"{run.shape[1] // gpn}\n> learning rate decay style: cosine")
    t_built = _load(log, run, att, after(s, 36.0))
    log.add(t_built, f"[after model, optimizer, and learning rate scheduler are built] datetime: "
                     f"{megatron_dt(t_built)} \n> building train, validation, and test datasets ...")
    first = from_ms(int(att.steps.end[0] - att.steps.step_ms[0]))
    t_data = after(first, -3.1)
    log.add(t_data, f"[after dataloaders are built] datetime: {megatron_dt(t_data)} \ndone with setup ...\n"
                    "training ...")
    log.add(after(first, -0.4), f"[before the start of training step] datetime: {megatron_dt(after(first, -0.4))} ")
    return log


def _megatron_args(log: Log, run: Run, t: dt.datetime) -> None:
    """`using world size ...` and the argument dump."""
    gpn, gpus = run.cluster.gpus_per_node, run.gpus
    args = {"num_layers": run.shape[2], "hidden_size": run.shape[3], "seq_length": SEQ,
            "global_batch_size": run.tokens_per_step // SEQ, "micro_batch_size": 1,
            "tensor_model_parallel_size": gpn, "pipeline_model_parallel_size": 1, "world_size": gpus,
            "save": ckpt_dir(run), "load": ckpt_dir(run), "save_interval": run.save_every,
            "log_interval": run.log_every,
            "bf16": True, "ckpt_format": "torch_dist", "distributed_timeout_minutes": 10}
    block = [f"using world size: {gpus}, data-parallel size: {gpus // gpn}, context-parallel size: 1, "
             f"tensor-model-parallel size: {gpn}, pipeline-model-parallel size: 1",
             "------------------------ arguments ------------------------"]
    block += sorted((f"  {k} {'.' * (48 - len(k))} {v}" for k, v in args.items()), key=str.lower)
    block += ["-------------------- end of arguments ---------------------", "> initializing torch distributed ..."]
    log.add(t, "\n".join(block))


def _load(log: Log, run: Run, att: Attempt, t0: dt.datetime) -> dt.datetime:
    """The checkpoint load (or the note that there is none); returns when the model is built."""
    if not att.resumed_from:
        log.add(t0, f"WARNING: could not find the metadata file {ckpt_dir(run)}/latest_checkpointed_iteration.txt \n"
                    "    will not load any checkpoints and will start from random")
        return after(t0, 0.5)
    log.add(t0, f" loading distributed checkpoint from {ckpt_dir(run)} at iteration {att.resumed_from}")
    t1 = after(t0, att.load_ms / 1000)
    log.add(t1, f"  successfully loaded checkpoint from {ckpt_dir(run)} [ t 0, p 0 ] at iteration {att.resumed_from}\n"
                f"(min, max) time across ranks (ms):\n    {'load-checkpoint '.ljust(48, '.')}: "
                f"({att.load_ms - 3.1:.2f}, {att.load_ms:.2f})")
    return after(t1, 0.2)


def training(out: Out, run: Run, att: Attempt, r: random.Random, junk: bool,
             extra: dict[int, list[str]] | None = None) -> None:
    """Iteration lines (each the mean over its interval) and the save lines after them, streamed.

    extra: lines other processes print right after the iteration line of a step (by index).
    """
    s = att.steps
    saves = {sv.step: sv for sv in att.saves}
    flops = (6 * run.shape[1] + 12 * run.shape[2] * run.shape[3] * SEQ) * run.tokens_per_step / run.gpus / 1e12
    interval = np.concatenate([[s.step_ms[0]], np.diff(s.end)])
    gbs = run.tokens_per_step // SEQ
    lines: list[str] = []
    every = run.log_every
    extra = extra or {}
    junk_at = int(s.step[len(s) // 3]) // every * every if junk else -1
    for n, i in enumerate(np.nonzero(s.step % every == 0)[0]):
        step = int(s.step[i])
        avg = float(interval[max(0, i - every + 1):i + 1].mean())
        loss = 2.1 + 8.6 * np.exp(-step / 160.0) + 0.9 * np.exp(-step / 2500.0) + r.gauss(0, 0.01)
        line = iteration_line(from_ms(int(s.end[i])), step, 5_000_000, gbs, avg, flops / (avg / 1000),
                              3e-4 * min(1.0, step / 2000), loss, 0.9 + abs(r.gauss(0, 0.05)))
        # Megatron-DeepSpeed's line: the same without its time (the first of an attempt keeps one, as DeepSpeed's
        # own stamped line would be near it)
        lines.append(line if n % run.stamp_every == 0 else " " + line.split("] ", 1)[1])
        lines += extra.get(int(i), [])
        if step in saves:
            lines += save_lines(run, saves[step])
        if step == junk_at:
            out.lines(lines)
            lines = []
            out.write(JUNK)
        if len(lines) >= 2000:
            out.lines(lines)
            lines = []
    out.lines(lines)


def save_lines(run: Run, sv: Save) -> list[str]:
    """The lines of one save: start, and (when it finished) the confirmation and its timer."""
    out = [save_start_line(sv.step, ckpt_dir(run))]
    if sv.complete:
        ms = sv.end_ms - sv.start_ms
        out += save_done_lines(sv.step, ckpt_dir(run), ms - 4.7, ms)
    return out


def iteration_line(t: dt.datetime, step: int, train_iters: int, gbs: int, avg_ms: float, tflops: float, lr: float,
                   loss: float, grad_norm: float) -> str:
    """Megatron-LM's training log line (`training_log`), printed every --log-interval steps."""
    return (f" [{megatron_dt(t)}] iteration {step:8d}/{train_iters:8d} | consumed samples: {step * gbs:12d} | "
            f"elapsed time per iteration (ms): {avg_ms:.1f} | throughput per GPU (TFLOP/s/GPU): {tflops:.1f} | "
            f"learning rate: {lr:.6E} | global batch size: {gbs:5d} | lm loss: {loss:.6E} | loss scale: 1.0 | "
            f"grad norm: {grad_norm:.3f} | number of skipped iterations:   0 | number of nan iterations:   0 |")


def save_start_line(step: int, ckpt: str) -> str:
    """Megatron-LM's line as a save begins."""
    return f"saving checkpoint at iteration {step:7d} to {ckpt} in torch_dist format"


def save_done_lines(step: int, ckpt: str, min_ms: float, max_ms: float) -> list[str]:
    """Megatron-LM's confirmation of a finished save and its timer across ranks."""
    return [f"  successfully saved checkpoint from iteration {step:7d} to {ckpt}", "(min, max) time across ranks (ms):",
            f"    {'save-checkpoint '.ljust(48, '.')}: ({min_ms:.2f}, {max_ms:.2f})"]

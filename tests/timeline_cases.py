"""A requeued Megatron job, written the ways real jobs write it, with the ledger it must give (issue 28).

One Slurm job (71400, `sbatch --requeue --open-mode=append`) runs three times on gpu-[01-02] (16 GPUs): the first
instance ends in a node failure (Xid 79 on gpu-02), the second is preempted and requeued, the third finishes. The
same campaign is written

- `layout="appended"`: one `slurm-71400.out` that every instance appends to, no attempt folders (what
  `--open-mode=append` leaves), or `layout="folders"`: one folder an instance;
- `stamp_every=N`: one iteration line in N with its `[timestamp]` (Megatron-DeepSpeed prints its iteration
  line without one; a stamped line comes with DeepSpeed's own every `steps_per_print`);
- `skew={host: seconds}`: that host's own clock (its kernel log, its torchrun's lines, its per-rank timings) off
  by that much.

sacct -D lists each instance as a row of the same JobID (NODE_FAIL, REQUEUED, COMPLETED). `expected_ledger` is
computed here from the campaign's own timeline by the ledger's conventions: startup (Start → first step's
start), the steps (kept: productive; after the save the next instance resumed from: recompute), saves
(checkpoint), hang (end of the last whole step → End), restart (End → next Start).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

RUN, JOB, GPUS = "req-7b", "71400", 16
HOSTS = ("gpu-01", "gpu-02")
STEP_S, LOG_EVERY, SAVE_EVERY, SAVE_S, TOTAL = 5.0, 10, 200, 30.0, 1000
T0 = dt.datetime(2026, 12, 1, 10, 0, 0)


@dataclass
class Instance:
    start: dt.datetime
    startup_s: float
    load: int  # the step it resumed from (0: fresh)
    last: int  # its last whole step
    tail_s: float  # from its last whole step's end to its root event (a partial step)
    end_after_root_s: float
    state: str
    step_end: dict[int, dt.datetime] = field(default_factory=dict)
    saves: dict[int, tuple[dt.datetime, dt.datetime]] = field(default_factory=dict)
    root: dt.datetime | None = None
    end: dt.datetime | None = None


def _jitter(step: int) -> float:
    """A few ms of deterministic noise around the step time."""
    return ((step * 7919) % 11 - 5) * 0.0004


def plan() -> list[Instance]:
    """The three instances on the controller's clock."""
    insts = [Instance(T0, 190.0, 0, 437, 2.2, 300.0, "NODE_FAIL"),
             Instance(T0, 230.0, 400, 853, 3.1, 2.0, "REQUEUED"),
             Instance(T0, 225.0, 800, TOTAL, 0.0, 0.0, "COMPLETED")]
    start = T0
    for i, inst in enumerate(insts):
        inst.start = start
        t = start + dt.timedelta(seconds=inst.startup_s)
        for s in range(inst.load + 1, inst.last + 1):
            t += dt.timedelta(seconds=STEP_S + _jitter(s))
            inst.step_end[s] = t
            if s % SAVE_EVERY == 0:
                inst.saves[s] = (t, t + dt.timedelta(seconds=SAVE_S))
                t += dt.timedelta(seconds=SAVE_S)
        if inst.state == "COMPLETED":
            inst.root = None
            inst.end = t + dt.timedelta(seconds=8)
        else:
            inst.root = t + dt.timedelta(seconds=inst.tail_s)
            inst.end = inst.root + dt.timedelta(seconds=inst.end_after_root_s)
        # the scheduler keeps whole seconds
        inst.end = inst.end.replace(microsecond=0) + dt.timedelta(seconds=1)
        start = inst.end + dt.timedelta(seconds=(300, 200)[i] if i < 2 else 0)
    return insts


def expected_ledger(insts: list[Instance] | None = None) -> dict[str, float]:
    """GPU-hours per category, by the conventions in the module's docstring."""
    insts = insts or plan()
    sec = dict.fromkeys(("productive", "checkpoint", "recompute", "hang", "restart", "startup"), 0.0)
    for i, inst in enumerate(insts):
        keep = insts[i + 1].load if i + 1 < len(insts) else TOTAL
        sec["startup"] += inst.startup_s
        prev = inst.start + dt.timedelta(seconds=inst.startup_s)
        for s in range(inst.load + 1, inst.last + 1):
            t = inst.step_end[s]
            work = (t - prev).total_seconds()
            sec["productive" if s <= keep else "recompute"] += work
            prev = t
            if s in inst.saves:
                a, b = inst.saves[s]
                sec["checkpoint"] += (b - a).total_seconds()
                prev = b
        if inst.state == "COMPLETED":
            sec["checkpoint"] += (inst.end - prev).total_seconds()  # the final save is done: exiting
        else:
            sec["hang"] += (inst.end - prev).total_seconds()
        if i + 1 < len(insts):
            sec["restart"] += (insts[i + 1].start - inst.end).total_seconds()
    return {k: v * GPUS / 3600 for k, v in sec.items()}


def _stamp(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S")


def _iteration(step: int, t: dt.datetime, stamped: bool) -> str:
    ms = 1000 * (STEP_S + _jitter(step))
    line = (f"iteration {step:8d}/{TOTAL:8d} | consumed samples: {step * 256:12d} | elapsed time per iteration (ms): "
            f"{ms:.1f} | learning rate: 3.000000E-04 | global batch size:   256 | lm loss: {8.0 - step / 500:.6E} | "
            "loss scale: 1.0 | grad norm: 0.512 | number of skipped iterations:   0 | number of nan iterations:   0 |")
    return f" [{_stamp(t)}] {line}" if stamped else f" {line}"


def _instance_log(k: int, inst: Instance, stamp_every: int, skew: dict[str, float]) -> list[str]:
    out = ["+ srun --kill-on-bad-exit=1 torchrun --nnodes=2 --nproc_per_node=8 pretrain_gpt.py --log-interval 10 "
           "--save-interval 200 --save /lustre/ckpt/req-7b --load /lustre/ckpt/req-7b"]
    for i, host in enumerate(HOSTS):  # torchrun on each node, on that node's clock (srun gathers their output)
        boot = inst.start + dt.timedelta(seconds=20 + i + skew.get(host, 0.0))
        out.append(f"W{boot:%m%d %H:%M:%S}.114000 {2219 + i} torch/distributed/run.py:793] Setting OMP_NUM_THREADS "
                   "environment variable for each process to be 1 in default, to avoid your system being "
                   "overloaded, please further tune the variable for optimal performance in your application as "
                   "needed.")
    out.append("using world size: 16, data-parallel size: 2, context-parallel size: 1, tensor-model-parallel size: 8, "
               "pipeline-model-parallel size: 1")
    first = inst.start + dt.timedelta(seconds=inst.startup_s)
    if inst.load:
        out.append(f" loading distributed checkpoint from /lustre/ckpt/req-7b at iteration {inst.load}")
        out.append(f"  successfully loaded checkpoint from /lustre/ckpt/req-7b [ t 1/8, p 1/1 ] at iteration "
                   f"{inst.load}")
    out.append(f"[after model, optimizer, and learning rate scheduler are built] datetime: "
               f"{_stamp(first - dt.timedelta(seconds=30))} ")
    out.append("training ...")
    out.append(f"[before the start of training step] datetime: {_stamp(first)} ")
    n = 0
    for s in range(inst.load + 1, inst.last + 1):
        if s % LOG_EVERY == 0:
            n += 1
            out.append(_iteration(s, inst.step_end[s], n % stamp_every == 1 or stamp_every == 1))
        if s in inst.saves:
            a, b = inst.saves[s]
            out.append(f"saving checkpoint at iteration {s:7d} to /lustre/ckpt/req-7b in torch_dist format")
            out.append(f"  successfully saved checkpoint from iteration {s:7d} to /lustre/ckpt/req-7b "
                       "[ t 1/8, p 1/1 ]")
            out.append("(min, max) time across ranks (ms):")
            out.append(f"    save-checkpoint ................................: ({SAVE_S * 1000 - 120:.2f}, "
                       f"{SAVE_S * 1000:.2f})")
    if inst.state != "COMPLETED":
        out += _slurm_end(inst)
    else:
        out.append(f"[after training is done] datetime: {_stamp(inst.end - dt.timedelta(seconds=2))} ")
    return out


def _hf_stamp(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}"


def _hf_log(inst: Instance, skew: dict[str, float]) -> list[str]:
    """The instance as a HuggingFace Trainer job prints it: INFO lines with their stamps, tqdm's bar (its states
    joined by carriage returns on one physical line until the next line is printed), a loss dict every 10 steps
    without step or time, and a save's start line and the files it wrote."""
    first = inst.start + dt.timedelta(seconds=inst.startup_s)
    bar0 = first - dt.timedelta(seconds=0.4)
    out = ["+ srun --kill-on-bad-exit=1 torchrun --nnodes=2 --nproc_per_node=8 run_clm.py --logging_steps 10 "
           "--save_steps 200 --output_dir out/req-7b"]
    if inst.load:
        t = first - dt.timedelta(seconds=40)
        out.append(f"[INFO|trainer.py:2250] {_hf_stamp(t)} >> Loading model from out/req-7b/checkpoint-{inst.load}.")
    info = "[INFO|trainer.py:{}] " + _hf_stamp(bar0 - dt.timedelta(seconds=1)) + " >> {}"
    out += [info.format(2128, "***** Running training *****"), info.format(2129, "  Num examples = 256,000"),
            info.format(2130, "  Num Epochs = 1"), info.format(2136, f"  Total optimization steps = {TOTAL:,}")]
    if inst.load:
        out.append(info.format(2157, f"  Continuing training from global step {inst.load}"))
    line = ""
    for s in range(inst.load + 1, inst.last + 1):
        el = int((inst.step_end[s] - bar0).total_seconds())
        line += f"\r {100 * s // TOTAL:3d}%|#         | {s}/{TOTAL} [{el // 60:02d}:{el % 60:02d}<00:00,  5.00s/it]"
        if s % LOG_EVERY == 0:
            out.append(line + f"{{'loss': {8.0 - s / 500:.4f}, 'grad_norm': 0.512, 'learning_rate': 3e-05, "
                              f"'epoch': {s / TOTAL:.2f}}}")
            line = ""
        if s in inst.saves:
            a, b = inst.saves[s]
            d = f"out/req-7b/checkpoint-{s}"
            out.append(line + f"[INFO|trainer.py:3705] {_hf_stamp(a)} >> Saving model checkpoint to {d}")
            out.append(f"[INFO|configuration_utils.py:472] {_hf_stamp(a + dt.timedelta(seconds=0.01))} >> "
                       f"Configuration saved in {d}/config.json")
            out.append(f"[INFO|modeling_utils.py:2598] {_hf_stamp(b)} >> Model weights saved in {d}/model.safetensors")
            line = ""
    if line:
        out.append(line)
    if inst.state != "COMPLETED":
        out += _slurm_end(inst)
    else:
        out.append(f"{{'train_runtime': {(inst.end - first).total_seconds():.4f}, 'train_samples_per_second': 51.2, "
                   "'train_steps_per_second': 0.2, 'train_loss': 7.1, 'epoch': 1.0}")
    return out


def _slurm_end(inst: Instance) -> list[str]:
    """What srun and slurmstepd print when the instance is ended for it: a node failure, a preemption."""
    if inst.state == "NODE_FAIL":
        return ["srun: error: Node failure on gpu-02",
                f"slurmstepd: error: *** JOB {JOB} ON gpu-01 CANCELLED AT {inst.end:%Y-%m-%dT%H:%M:%S} DUE TO "
                "NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***"]
    return [f"slurmstepd: error: *** JOB {JOB} ON gpu-01 CANCELLED AT {inst.root:%Y-%m-%dT%H:%M:%S} DUE TO "
            "PREEMPTION ***"]


def _sacct(insts: list[Instance]) -> str:
    rows = ["JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList"]
    for inst in insts:
        el = int((inst.end - inst.start).total_seconds())
        elapsed = f"{el // 3600:02d}:{el // 60 % 60:02d}:{el % 60:02d}"
        span = f"{inst.start - dt.timedelta(seconds=40):%Y-%m-%dT%H:%M:%S}|{inst.start:%Y-%m-%dT%H:%M:%S}|" \
               f"{inst.end:%Y-%m-%dT%H:%M:%S}|{elapsed}"
        code = "0:0" if inst.state != "REQUEUED" else "0:15"
        rows.append(f"{JOB}|{RUN}|gpu|llm|224|{inst.state}|{code}|{span}|2|gpu-[01-02]")
        rows.append(f"{JOB}.batch|batch||llm|112|CANCELLED|0:15|{span}|1|gpu-01")
    return "\n".join(rows) + "\n"


def _kernel(host: str, insts: list[Instance], skew_s: float) -> str:
    boot = T0 - dt.timedelta(days=3)
    lines = []
    for inst in insts:
        t = inst.start + dt.timedelta(seconds=5 + skew_s)
        lines.append(f"{t:%b %e %H:%M:%S} {host} kernel: [{(t - boot).total_seconds():12.6f}] "
                     "mlx5_core 0000:0c:00.0: mlx5e_open_channels: ... queue 0 ready")
        if host == "gpu-02" and inst.state == "NODE_FAIL":
            t = inst.root + dt.timedelta(seconds=skew_s)
            lines.append(f"{t:%b %e %H:%M:%S} {host} kernel: [{(t - boot).total_seconds():12.6f}] NVRM: Xid "
                         "(PCI:0000:5d:00): 79, pid=2231, name=python, GPU has fallen off the bus.")
    return "\n".join(lines) + "\n"


# A harmless NCCL warning the job steps past (an IB GID table change), with no stamp of its own
DECOY = "gpu-02:2231:2301 [3] NCCL WARN NET/IB : mlx5_3:1 Got async event : GID table change"


def write(out: Path, layout: str = "appended", stamp_every: int = 1, skew: dict[str, float] | None = None,
          trainer: str = "megatron", decoy_after: int | None = None) -> Path:
    """The campaign's bundle under `out` (returned); `trainer="hf"` writes the HuggingFace Trainer's log;
    `decoy_after=k`: DECOY printed k lines after instance 2's first iteration line."""
    skew = skew or {}
    insts = plan()
    bundle = out / "bundle"
    run_dir = bundle / "runs" / RUN
    run_dir.mkdir(parents=True)
    (bundle / "inventory.toml").write_text(
        '[providers.acme]\nusd_per_gpu_hour = 2.0\n\n[clusters.c1]\nprovider = "acme"\ngpu = "H100-SXM"\n'
        'gpus_per_node = 8\nnodes = "gpu-[01-02]"\n')
    (run_dir / "run.toml").write_text(f'cluster = "c1"\ngpus = {GPUS}\ntokens_per_step = 1048576\n'
                                      'flops_per_token = 4.2e10\nlauncher = "slurm"\n')
    logs = [_instance_log(k, inst, stamp_every, skew) if trainer == "megatron" else _hf_log(inst, skew)
            for k, inst in enumerate(insts, 1)]
    if decoy_after is not None:
        first = next(i for i, line in enumerate(logs[1]) if "consumed samples" in line or "{'loss'" in line)
        logs[1].insert(first + 1 + decoy_after, DECOY)
    if layout == "appended":
        (run_dir / f"slurm-{JOB}.out").write_text("\n".join(line for log in logs for line in log) + "\n")
    else:
        for k, log in enumerate(logs, 1):
            d = run_dir / f"attempt-{k}"
            d.mkdir()
            (d / f"slurm-{JOB}.out").write_text("\n".join(log) + "\n")
    # per-rank timings of one rank on each host, every step, on that host's clock (appended like the log)
    for rank, host in ((0, HOSTS[0]), (8, HOSTS[1])):
        recs = [[] for _ in insts]
        for k, inst in enumerate(insts):
            for s in range(inst.load + 1, inst.last + 1):
                t = inst.step_end[s] + dt.timedelta(seconds=skew.get(host, 0.0) + 0.002 * rank / 8)
                recs[k].append(f'{{"ts": {t.replace(tzinfo=dt.UTC).timestamp():.3f}, "rank": {rank}, "host": "{host}", '
                               f'"step": {s}, "step_s": {STEP_S + _jitter(s):.4f}}}')
        if layout == "appended":
            (run_dir / f"rank{rank}.jsonl").write_text("\n".join(r for k in recs for r in k) + "\n")
        else:
            for k, lines in enumerate(recs, 1):
                (run_dir / f"attempt-{k}" / f"rank{rank}.jsonl").write_text("\n".join(lines) + "\n")
    sched = bundle / "scheduler"
    sched.mkdir()
    (sched / "sacct.txt").write_text(_sacct(insts))
    for host in HOSTS:
        d = bundle / "nodes" / host
        d.mkdir(parents=True)
        (d / "kern.log").write_text(_kernel(host, insts, skew.get(host, 0.0)))
    return bundle

"""mm7b-sft: torchtitan under torchrun on two Borealis nodes, each node's console in local time (Europe/Helsinki)."""

from __future__ import annotations

import datetime as dt
import math
import random

from clusterlab.simulator import textlog
from clusterlab.simulator.demo.files import Files, write_rank_steps
from clusterlab.simulator.demo.procs import nccl_init, pg_abort, procs_for
from clusterlab.simulator.demo.story import (
    EET,
    H200_BUS,
    MM,
    MM_CKPT_DIR,
    MM_FLOPS_PER_TOKEN,
    MM_GBS,
    MM_HOSTS,
    MM_LOAD_S,
    MM_LOG_EVERY,
    MM_SEQ,
    MM_TOKENS,
    MM_TOTAL_STEPS,
    NCCL_VERSION,
    OOM_RANK,
    Attempt,
    Step,
    Story,
    mm_loss,
    rng,
)
from clusterlab.simulator.stamps import (
    after,
    glog,
    pylog,
)
from clusterlab.simulator.textlog import Log, Proc, sigabrt, torchrun_failure

ANSI = {"red": "\x1b[31m", "green": "\x1b[32m", "orange": "\x1b[38;2;255;165;0m", "yellow": "\x1b[33m",
        "blue": "\x1b[34m", "cyan": "\x1b[36m", "magenta": "\x1b[35m", "reset": "\x1b[39m"}


def titan(log: Log, t: dt.datetime, msg: str, level: str = "INFO") -> None:
    """One torchtitan logger line from rank 0, in the node's local time."""
    log.add(t, f"[rank0]:[titan] {pylog(t.astimezone(EET))} - root - {level} - {msg}")


def titan_step_line(s: Step, color: bool, r: random.Random) -> str:
    """torchtitan's metrics line (with its ANSI colours when `color`)."""
    c = ANSI if color else dict.fromkeys(ANSI, "")
    tps = MM_TOKENS / 16 / s.step_s
    tflops = MM_FLOPS_PER_TOKEN * tps / 1e12
    mem = 98.42 + r.uniform(0, 0.6)
    return (f"{c['red']}step: {s.step:2}  {c['green']}loss: {mm_loss(s.step) + r.gauss(0, 0.01):8.5f}  "
            f"{c['orange']}grad_norm: {0.42 + 2.1 * math.exp(-s.step / 90) + abs(r.gauss(0, 0.03)):7.4f}  "
            f"{c['yellow']}memory: {mem:5.2f}GiB({mem / 139.81 * 100:.2f}%)  {c['blue']}tps: {round(tps):,}  "
            f"{c['cyan']}tflops: {tflops:,.2f}  {c['magenta']}mfu: {tflops / 989 * 100:.2f}%{c['reset']}")


def titan_run(log: Log, att: Attempt, r: random.Random, *, color: bool) -> None:
    """torchtitan's start-up, metrics every 10 steps, saves and GC lines."""
    s = att.start
    titan(log, after(s, 21.3), "Starting job: mm7b multimodal SFT (vision-language, stage 2)")
    titan(log, after(s, 21.9), "Building 1-D device mesh with ['dp_shard'], [16]")
    titan(log, after(s, 22.0), "[GC] Initial GC collection. 0.00 seconds.")
    titan(log, after(s, 24.6), "Loading tokenizer from tokenizer.model")
    titan(log, after(s, 25.1), "Preparing mm_sft dataset from /mnt/nfs/data/mm-sft-v3")
    titan(log, after(s, 58.7), "CUDA capacity: NVIDIA H200 with 139.81GiB memory")
    c = ANSI if color else dict.fromkeys(ANSI, "")
    titan(log, after(s, 61.2), f"{c['blue']}Model mm7b 7B {c['red']}size: 7,615,616,512 total parameters{c['reset']}")
    titan(log, after(s, 61.9), "Applied selective activation checkpointing to the model")
    titan(log, after(s, 62.4), "Applied FSDP to the model")
    titan(log, after(s, 62.5), "Peak FLOPS used for computing MFU: 9.890e+14")
    titan(log, after(s, 63.8), "CUDA memory usage for model: 3.56GiB(2.55%)")
    titan(log, after(s, 64.0), f"Checkpointing active. Checkpoints will be loaded from and saved to {MM_CKPT_DIR}")
    if att.first_step > 1:
        load_t = after(att.train_start, -MM_LOAD_S - 4.0)
        titan(log, load_t, f"Loading the checkpoint from {MM_CKPT_DIR}/step-{att.first_step - 1}.")
        titan(log, after(load_t, MM_LOAD_S - 0.1), "[GC] GC collection for checkpoint loading. 0.01 seconds.")
        titan(log, after(load_t, MM_LOAD_S), f"Finished loading the checkpoint in {MM_LOAD_S - 0.08:.2f} seconds.")
    titan(log, after(att.train_start, -2.0), f"Training starts at step {att.first_step}, with local batch size 4, "
                                             f"global batch size {MM_GBS}, sequence length {MM_SEQ}, total steps "
                                             f"{MM_TOTAL_STEPS} (warmup 60)")
    saves = {sv.step: sv for sv in att.saves}
    for st in att.steps:
        if st.step == att.first_step or st.step % MM_LOG_EVERY == 0:  # metrics are logged before the save
            titan(log, after(st.end, 0.0004), titan_step_line(st, color, r))
        if st.step == att.first_step:
            titan(log, after(st.end, 0.05), "Synchronizing and adjusting timeout for all ProcessGroups to 0:01:40")
        if st.step in saves:
            sv = saves[st.step]
            titan(log, after(sv.start, 0.002), "Saving the checkpoint (or staging if async is enabled).")
            titan(log, after(sv.start, 0.03), "[GC] GC collection invoked by checkpointer. 0.02 seconds.")
            titan(log, sv.end, "Finished saving the checkpoint (or staging if async is enabled)in "
                               f"{(sv.end - sv.start).total_seconds():.2f} seconds.")
        if st.step % 50 == 0:
            titan(log, after(st.end, 0.2), "[GC] Peforming periodical GC collection. 0.05 seconds.")


def titan_agent_banner(log: Log, t: dt.datetime, agent: int) -> None:
    """torchrun's launch banner, stamped in the node's local time."""
    log.add(t, textlog.omp_banner(t.astimezone(EET), agent))


OOM_MSG = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 11.25 GiB. GPU 5 has a total capacity of "
           "139.81 GiB of which 6.31 GiB is free. Including non-PyTorch memory, this process has 133.48 GiB memory in "
           "use. Of the allocated memory 118.02 GiB is allocated by PyTorch, and 12.87 GiB is reserved by PyTorch but "
           "unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_"
           "segments:True to avoid fragmentation.  See documentation for Memory Management  "
           "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")


def oom_traceback() -> str:
    """The OOM worker's traceback as torchrun's error.json records it."""
    py = "/usr/local/lib/python3.11/dist-packages"
    lines = ["Traceback (most recent call last):",
             f'  File "{py}/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper',
             "    return f(*args, **kwargs)",
             '  File "/opt/torchtitan/torchtitan/train.py", line 601, in train',
             "    self.train_step(data_iterator)",
             '  File "/opt/torchtitan/torchtitan/train.py", line 512, in train_step',
             "    loss = self.forward_backward_step(input_dict, labels)",
             '  File "/opt/torchtitan/torchtitan/train.py", line 468, in forward_backward_step',
             "    pred = model_parts[0](inputs, encoder_input=pixel_values)",
             '  File "/opt/torchtitan/torchtitan/experiments/multimodal/model.py", line 214, in forward',
             "    h = self.vision_proj(self.vision_encoder(encoder_input))",
             OOM_MSG]
    return "\n  ".join(lines)


def write_mm(files: Files, story: Story) -> int:
    """Each node's console per attempt, per-rank steps and run.toml; returns the step records written."""
    records = 0
    m1, m2 = story.mm
    for att in story.mm:
        r = rng(f"mm-log:{att.k}")
        procs, agents = procs_for(att, r, H200_BUS)
        for host in MM_HOSTS:
            log = Log()
            titan_agent_banner(log, after(att.start, 0.8 + 0.3 * MM_HOSTS.index(host)), agents[host])
            lt = after(att.start, 4.2)
            log.add(lt, f"{glog(lt.astimezone(EET), 'I')} {agents[host]} torch/distributed/elastic/agent/server/"
                        "api.py:525] [default] starting workers for entrypoint: python3")
            if host == MM_HOSTS[0]:
                titan_run(log, att, r, color=att.k == 1)
                nccl = Log()
                nccl_init(nccl, procs, after(att.start, 52.0), rng(f"mm-nccl:{att.k}"), nch=16)
                for t, _, text in nccl.items:
                    if text.startswith(f"{host}:{procs[0].pid}:"):  # --local-ranks-filter 0
                        log.add(t, "[rank0]:" + text)
            if att.k == 1:
                mm_failure(log, story, att, host, procs, agents)
            else:
                mm_success(log, att, host, agents)
            files.text(f"runs/{MM}/attempt-{att.k}/{host}.log", log.render())
        records += write_rank_steps(files, att, 8, MM_TOKENS // 16, mm_loss, epoch_ts=True)
    assert m2.first_step == m1.last_save() + 1
    files.text(f"runs/{MM}/run.toml", [
        "# Facts about the run that its logs do not state reliably.",
        'cluster = "bor-1"',
        "gpus = 16",
        f"tokens_per_step = {MM_TOKENS}  # global batch {MM_GBS} x seq_len {MM_SEQ}",
        f"flops_per_token = {MM_FLOPS_PER_TOKEN:.3e}  # vision encoder + LM, from torch.utils.flop_counter",
        f'checkpoint_dir = "{MM_CKPT_DIR}"',
        'launcher = "torchrun"',
        'launch_command = "torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint bor-001:29500 '
        '--local-ranks-filter 0 --role rank --tee 3 -m torchtitan.train --job.config_file mm7b_sft.toml"',
    ])
    return records


def mm_failure(log: Log, story: Story, att: Attempt, host: str, procs: list[Proc], agents: dict[str, int]) -> None:
    """Rank 5 runs out of GPU memory on a long multimodal sample; both agents fail."""
    oom_t = story.t["oom"]
    mine = [p for p in procs if p.host == host]
    if host == MM_HOSTS[0]:
        victim = next(p for p in mine if p.rank == OOM_RANK)
        for p in mine:
            if p is not victim:
                tt = after(oom_t, 0.4 + 0.001 * p.local)
                log.add(tt, f"{glog(tt.astimezone(EET), 'W')} {agents[host]} torch/distributed/elastic/multiprocessing"
                            f"/api.py:897] Sending process {p.pid} closing signal SIGTERM")
        err = f"/tmp/torchelastic_7k2m9q1x/mm7b-sft-a1_0/attempt_0/{victim.local}/error.json"
        tf = after(oom_t, 1.9)
        log.add(tf, torchrun_failure(tf, host, agents[host], "torchtitan.train",
                                     [(victim.rank, victim.local, victim.pid, 1, oom_t, (err, oom_traceback()))],
                                     py="python3.11", tz=EET))
    else:
        # bor-002's workers lose their peers; its local rank 0 (global 8) is the one the console shows
        lead = mine[0]
        t = after(oom_t, 1.3)
        reason = (f"NCCL error: remote process exited or there was a network error, NCCL version {NCCL_VERSION}\n"
                  "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
                  "prematurely.\nLast error:\nsocketProgress: Connection closed by remote peer bor-001<41807>")
        sub = Log()
        pg_abort(sub, t, lead.rank, "PG ID 0 PG GUID 0(default_pg)", lead.rank, 40117, reason, timeout=False,
                 tz=EET)
        for when, _, text in sub.items:  # --tee prefixes every line with the local rank
            text = text.replace("python3.10", "python3.11")
            log.add(when, "\n".join("[rank0]:" + x for x in text.split("\n")))
        tf = after(t, 1.5)
        log.add(tf, torchrun_failure(tf, host, agents[host], "torchtitan.train",
                                     [(p.rank, p.local, p.pid, -6, after(t, 0.3 + 0.01 * p.local), sigabrt(p.pid))
                                      for p in mine], py="python3.11", tz=EET))


def mm_success(log: Log, att: Attempt, host: str, agents: dict[str, int]) -> None:
    """The completed attempt's last lines: training completed, the agents finish."""
    end = att.saves[-1].end
    if host == MM_HOSTS[0]:
        titan(log, after(end, 0.3), "Sleeping 2 seconds for other ranks to complete")
        titan(log, after(end, 2.4), "Training completed")
    for dt_s, text in ((4.1, "api.py:879] [default] worker group successfully finished. Waiting 300 seconds for other "
                             "agents to finish."),
                       (4.2, "api.py:932] Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 seconds "
                             "for other agents to finish"),
                       (4.9, "api.py:946] Done waiting for other agents. Elapsed: 0.6834 seconds")):
        tt = after(end, dt_s)
        log.add(tt, f"{glog(tt.astimezone(EET), 'I')} {agents[host]} torch/distributed/elastic/agent/server/{text}")

"""llama8b-pretrain: Megatron-LM's rank-0 console as srun merges it (NCCL INFO, c10d aborts, torchrun),
and its per-rank steps."""

from __future__ import annotations

import datetime as dt
import math
import random

from clusterlab.simulator import textlog, trainlog
from clusterlab.simulator.demo.files import Files, write_rank_steps
from clusterlab.simulator.demo.procs import nccl_init, pg_abort, procs_for
from clusterlab.simulator.demo.story import (
    A1_LAST_GOOD,
    A2_LAST_GOOD,
    H100_BUS,
    IB_HCA,
    IB_HOST,
    LLAMA,
    LLAMA_CKPT_DIR,
    LLAMA_GBS,
    LLAMA_HIDDEN,
    LLAMA_JOBS,
    LLAMA_LAYERS,
    LLAMA_LOAD_S,
    LLAMA_LOG_EVERY,
    LLAMA_PARAMS,
    LLAMA_SEQ,
    LLAMA_TOKENS,
    LLAMA_TP,
    NCCL_TIMEOUT_S,
    NCCL_VERSION,
    XID_HOST,
    XID_LOCAL_RANK,
    Attempt,
    Story,
    llama_loss,
    node_ip,
    rng,
)
from clusterlab.simulator.stamps import (
    after,
    glog,
    hostlist,
    iso_s,
    megatron_dt,
)
from clusterlab.simulator.textlog import ELASTIC, Log, Proc, sigabrt, torchrun_failure


def megatron_flops_per_gpu(step_s: float) -> float:
    """Megatron's TFLOP/s per GPU for a step time (its own 6N + attention formula)."""
    per_token = 6 * LLAMA_PARAMS + 12 * LLAMA_LAYERS * LLAMA_HIDDEN * LLAMA_SEQ
    return per_token * LLAMA_TOKENS / (step_s * 1e12 * 32)


def megatron_startup(log: Log, att: Attempt, job: str, procs: list[Proc], agents: dict[str, int],
                     r: random.Random) -> None:
    """sbatch's echo and exports, srun + torchrun, Megatron's arguments, NCCL init, the checkpoint load."""
    s = att.start
    log.add(after(s, 0.4), f"+ echo 'job {job} on {hostlist(att.hosts)} starting at "
                           f"{s:%a %b %d %H:%M:%S} UTC {s:%Y}'")
    log.add(after(s, 0.41), f"job {job} on {hostlist(att.hosts)} starting at {s:%a %b %d %H:%M:%S} UTC {s:%Y}")
    for k, v in (("NCCL_DEBUG", "INFO"), ("NCCL_IB_TIMEOUT", "20"), ("CUDA_DEVICE_MAX_CONNECTIONS", "1"),
                 ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")):
        log.add(after(s, 0.42), f"+ export {k}={v}")
    log.add(after(s, 0.5), f"+ srun --ntasks-per-node=1 torchrun --nnodes 4 --nproc-per-node 8 --rdzv-backend c10d "
                           f"--rdzv-endpoint {att.hosts[0]}:29500 pretrain_gpt.py --tensor-model-parallel-size 2 "
                           f"--num-layers 32 --hidden-size 4096 --seq-length 4096 --global-batch-size 256 "
                           f"--save {LLAMA_CKPT_DIR} --load {LLAMA_CKPT_DIR} --save-interval 100 --log-interval 10")
    for n, host in enumerate(att.hosts):
        tt = after(s, 5.8 + 0.11 * n)
        log.add(tt, textlog.omp_banner(tt, agents[host]))
    warn = ("/usr/local/lib/python3.10/dist-packages/transformer_engine/pytorch/attention.py:1263: UserWarning: "
            "flash-attn v3 may provide important feature support or performance improvement. Please install "
            "flash-attn v3 by ...")
    for p in procs[::9]:
        log.add(after(s, 11 + 0.01 * p.rank), warn)
        log.add(after(s, 11.001 + 0.01 * p.rank), "  warnings.warn(")
    args = {"num_layers": 32, "hidden_size": 4096, "ffn_hidden_size": 14336, "num_attention_heads": 32,
            "num_query_groups": 8, "seq_length": 4096, "global_batch_size": 256, "micro_batch_size": 1,
            "tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 1, "world_size": 32,
            "train_iters": 500000, "lr": 0.0003, "lr_warmup_iters": 2000, "save": LLAMA_CKPT_DIR,
            "load": LLAMA_CKPT_DIR, "save_interval": 100, "log_interval": 10, "bf16": True,
            "use_distributed_optimizer": True, "ckpt_format": "torch_dist", "tokenizer_type": "HuggingFaceTokenizer",
            "distributed_timeout_minutes": 10, "seed": 1234}
    block = ["using world size: 32, data-parallel size: 16, context-parallel size: 1, tensor-model-parallel size: 2, "
             "pipeline-model-parallel size: 1", "using torch.bfloat16 for parameters ...",
             "------------------------ arguments ------------------------"]
    block += sorted((f"  {k} {'.' * (48 - len(k))} {v}" for k, v in args.items()), key=str.lower)
    block += ["-------------------- end of arguments ---------------------",
              "> building HuggingFaceTokenizer tokenizer ...",
              " > padded vocab (size: 128256) with 0 dummy tokens (new size: 128256)",
              "> initializing torch distributed ..."]
    log.add(after(s, 14.2), "\n".join(block))
    nccl_init(log, procs, after(s, 19.5), r)
    tp = rng(f"tp:{att.k}")
    for g in range(16):
        nccl_init(log, procs, after(s, 23.0 + 0.05 * g), tp, nch=8, group=[2 * g, 2 * g + 1])
    log.add(after(s, 27.2), "> initialized tensor model parallel with size 2\n"
                            "> initialized pipeline model parallel with size 1\n"
                            "> setting random seeds to 1234 ...\n"
                            "> compiling dataset index builder ...\n"
                            "make: Entering directory '/opt/megatron-lm/megatron/core/datasets'\n"
                            "make: Nothing to be done for 'default'.\n"
                            "make: Leaving directory '/opt/megatron-lm/megatron/core/datasets'\n"
                            ">>> done with dataset index builder. Compilation time: 0.061 seconds")
    t_init = after(s, 33.4)
    log.add(t_init, f"time to initialize megatron (seconds): {(t_init - s).total_seconds() - 1.7:.3f}\n"
                    f"[after megatron is initialized] datetime: {megatron_dt(t_init)} \nbuilding GPT model ...")
    log.add(after(s, 39.1), " > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 4015130624\n"
                            "> learning rate decay style: cosine")
    if att.k == 1:
        log.add(after(s, 39.3), f"WARNING: could not find the metadata file {LLAMA_CKPT_DIR}/latest_checkpointed_"
                                "iteration.txt \n    will not load any checkpoints and will start from random")
        t_built = after(s, 39.5)
    else:
        load = att.first_step - 1
        t0 = after(s, 39.4)
        log.add(t0, f" loading distributed checkpoint from {LLAMA_CKPT_DIR} at iteration {load}")
        t1 = after(t0, LLAMA_LOAD_S + r.uniform(-1, 1))
        ms = (t1 - t0).total_seconds() * 1000
        log.add(t1, f"  successfully loaded checkpoint from {LLAMA_CKPT_DIR} [ t 0, p 0 ] at iteration {load}\n"
                    f"(min, max) time across ranks (ms):\n    {'load-checkpoint '.ljust(48, '.')}: "
                    f"({ms - r.uniform(1, 4):.2f}, {ms:.2f})")
        t_built = after(t1, 0.2)
    log.add(t_built, f"[after model, optimizer, and learning rate scheduler are built] datetime: "
                     f"{megatron_dt(t_built)} \n> building train, validation, and test datasets ...")
    t_data = after(att.train_start, -3.1)
    log.add(t_data, f"[after dataloaders are built] datetime: {megatron_dt(t_data)} \ndone with setup ...\n"
                    f"(min, max) time across ranks (ms):\n    {'model-and-optimizer-setup '.ljust(48, '.')}: "
                    f"({5891.02 + r.uniform(0, 90):.2f}, {5991.77 + r.uniform(0, 90):.2f})\n    "
                    f"{'train/valid/test-data-iterators-setup '.ljust(48, '.')}: "
                    f"({(t_data - t_built).total_seconds() * 1000 - r.uniform(20, 60):.2f}, "
                    f"{(t_data - t_built).total_seconds() * 1000:.2f})\ntraining ...")
    t_train = after(att.train_start, -0.4)
    log.add(t_train, f"[before the start of training step] datetime: {megatron_dt(t_train)} ")


def megatron_training(log: Log, att: Attempt, r: random.Random) -> None:
    """Iteration lines every 10 steps (printed by the last rank) and the checkpoint saves."""
    window: list[float] = []
    saves = {s.step: s for s in att.saves}
    for s in att.steps:
        window.append(s.step_s)
        if s.step % LLAMA_LOG_EVERY == 0:
            avg = sum(window) / len(window)
            window = []
            lr = 3e-4 * min(1.0, s.step / 2000)
            gn = 0.85 + 11.5 * math.exp(-s.step / 60) + abs(r.gauss(0, 0.05))
            loss = llama_loss(s.step) + r.gauss(0, 0.01)  # NOTE: drawn after the grad norm (the seeded order)
            log.add(s.end, trainlog.iteration_line(s.end, s.step, 500_000, LLAMA_GBS, avg * 1000,
                                                   megatron_flops_per_gpu(avg), lr, loss, gn))
            if s.step == att.first_step + 9:
                log.add(after(s.end, 0.01), "[Rank 0] (after 10 iterations) memory (MB) | allocated: 31456.2 | "
                                            "max allocated: 58321.7 | reserved: 66118.0 | max reserved: 66118.0")
        if s.step in saves:
            sv = saves[s.step]
            ms = (sv.end - sv.start).total_seconds() * 1000
            log.add(after(sv.start, 0.002), trainlog.save_start_line(s.step, LLAMA_CKPT_DIR))
            log.add(after(sv.end, -0.01), "\n".join(trainlog.save_done_lines(s.step, LLAMA_CKPT_DIR,
                                                                             ms - r.uniform(2, 9), ms)))


def dp_group(rank: int) -> str:
    """Megatron's data-parallel groups, one per tensor-parallel rank: PG 3 holds the even ranks, PG 4 the odd."""
    g = 3 + rank % LLAMA_TP
    return f"PG ID {g} PG GUID {g}"


def llama_a1_failure(log: Log, story: Story, att: Attempt, procs: list[Proc], agents: dict[str, int],
                     r: random.Random) -> None:
    """Rank 19's GPU is gone; the other 31 ranks wait ten minutes for its all-reduce, then abort."""
    seq = 24 * A1_LAST_GOOD + 13
    numel = 40108032
    dead = next(p for p in procs if p.host == XID_HOST and p.local == XID_LOCAL_RANK)
    died: dict[int, dt.datetime] = {}
    for p in procs:
        if p is dead:
            continue
        t = after(story.t["a1_watchdog"], r.uniform(0.0, 0.12))
        ran = int((t - story.t["a1_hang_start"]).total_seconds() * 1000)
        work = (f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn={numel}, NumelOut={numel}, "
                f"Timeout(ms)={int(NCCL_TIMEOUT_S * 1000)})")
        reason = f"Watchdog caught collective operation timeout: {work} ran for {ran} milliseconds before timing out."
        pg_abort(log, t, p.rank, dp_group(p.rank), p.rank // LLAMA_TP, seq, reason, timeout=True)
        died[p.rank] = after(t, 0.35)
    for n, host in enumerate(att.hosts):
        mine = [p for p in procs if p.host == host and p is not dead]
        t_fail = after(max(died[p.rank] for p in mine), 0.9 + 0.07 * n)
        fails = [(p.rank, p.local, p.pid, -6, died[p.rank], sigabrt(p.pid)) for p in mine]
        if host == XID_HOST:
            # torchrun cannot stop the process on the lost GPU: SIGTERM, 30 s, then SIGKILL.
            tt = after(t_fail, -0.5)
            log.add(tt, f"{glog(tt, 'W')} {agents[host]} torch/distributed/elastic/multiprocessing/api.py:897] "
                        f"Sending process {dead.pid} closing signal SIGTERM")
            t_fail = after(t_fail, 30.0)
            log.add(after(t_fail, -0.2), f"{glog(after(t_fail, -0.2), 'W')} {agents[host]} torch/distributed/"
                                         f"elastic/multiprocessing/api.py:916] Unable to shutdown process "
                                         f"{dead.pid} via Signals.SIGTERM, forcefully exiting via Signals.SIGKILL")
        log.add(t_fail, torchrun_failure(t_fail, host, agents[host], "pretrain_gpt.py", fails))
        log.add(after(t_fail, 0.4), f"srun: error: {host}: task {n}: Exited with exit code 1")
    cancel = att.end
    log.add(cancel, f"slurmstepd: error: *** JOB {LLAMA_JOBS[0]} ON {att.hosts[0]} CANCELLED AT {iso_s(cancel)} ***")
    log.add(after(cancel, 0.01), f"slurmstepd: error: *** STEP {LLAMA_JOBS[0]}.0 ON {att.hosts[0]} CANCELLED AT "
                                 f"{iso_s(cancel)} ***")
    log.add(after(cancel, 0.02), "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    log.add(after(cancel, 32.1), "srun: error: Timed out waiting for job step to complete")


def llama_a2_failure(log: Log, story: Story, att: Attempt, procs: list[Proc], agents: dict[str, int],
                     r: random.Random) -> None:
    """east-002's mlx5_2 port goes down: the ranks on rail 2 get IB completion errors naming their peer."""
    seq = 24 * A2_LAST_GOOD + 7
    rail = int(IB_HCA.rsplit("_", 1)[1])
    died: dict[int, dt.datetime] = {}
    ring_peers = {h: [att.hosts[(i - 1) % 4], att.hosts[(i + 1) % 4]] for i, h in enumerate(att.hosts)}

    def ib_warn(p: Proc, t: dt.datetime, peer_host: str, status: int, vendor: int) -> tuple[dt.datetime, str]:
        for _ in range(2 if status == 12 else 1):
            port = r.randint(33000, 60999)
            t = after(t, r.uniform(0.0005, 0.002))
            err = (f"NET/IB : Got completion from peer {node_ip(peer_host)}<{port}> with status={status} "
                   f"opcode={r.choice((0, 1, 128))} len=0 vendor err {vendor} ({r.choice(('Send', 'Recv'))})")
            log.add(t, f"{p.prefix(p.proxy_tid)} transport/net_ib.cc:2160 NCCL WARN {err}")
            log.add(after(t, 0.0001), f"{p.prefix(p.proxy_tid)} NCCL INFO transport/net.cc:1295 -> 6\n"
                                      f"{p.prefix(p.proxy_tid)} NCCL INFO proxy.cc:698 -> 6\n"
                                      f"{p.prefix(p.proxy_tid)} NCCL INFO proxy.cc:878 -> 6 [Progress Thread]")
        return t, err

    def remote_error(p: Proc, t: dt.datetime, err: str) -> None:
        reason = (f"NCCL error: remote process exited or there was a network error, NCCL version {NCCL_VERSION}\n"
                  "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
                  f"prematurely.\nLast error:\n{err}")
        pg_abort(log, after(t, 0.41), p.rank, dp_group(p.rank), p.rank // LLAMA_TP, seq, reason, timeout=False)
        died[p.rank] = after(t, 0.9)

    # rail 2 of east-002's ring neighbours, and east-002's own rail-2 rank
    for p in procs:
        if p.local != rail:
            continue
        if p.host == IB_HOST:
            t, err = after(story.t["ib_warn"], 0.04), ""  # its own QPs time out a moment later
            for peer in ring_peers[p.host]:
                t, err = ib_warn(p, after(t, 0.01), peer, 12, 129)
            remote_error(p, t, err)
        elif IB_HOST in ring_peers[p.host]:
            t, err = ib_warn(p, after(story.t["ib_warn"], r.uniform(0.0, 0.03)), IB_HOST, 12, 129)
            remote_error(p, t, err)
    # torchrun on those nodes stops its other workers; the rest of the ring sees its peers vanish
    t_agents = after(max(died.values()), 1.2)
    for n, host in enumerate(att.hosts):
        mine = [p for p in procs if p.host == host]
        failed = [p for p in mine if p.rank in died]
        if not failed:
            continue
        for p in mine:
            if p.rank not in died:
                tt = after(t_agents, 0.001 * p.local)
                log.add(tt, f"{glog(tt, 'W')} {agents[host]} torch/distributed/elastic/multiprocessing/api.py:897] "
                            f"Sending process {p.pid} closing signal SIGTERM")
        tf = after(t_agents, 2.1 + 0.1 * n)
        log.add(tf, torchrun_failure(tf, host, agents[host], "pretrain_gpt.py",
                                     [(p.rank, p.local, p.pid, -6, died[p.rank], sigabrt(p.pid)) for p in failed]))
        log.add(after(tf, 0.3), f"srun: error: {host}: task {n}: Exited with exit code 1")
    lone = [h for h in att.hosts if not any(p.rank in died and p.host == h for p in procs)]
    for host in lone:
        n = att.hosts.index(host)
        mine = [p for p in procs if p.host == host]
        for p in mine:
            t, err = ib_warn(p, after(t_agents, 2.6 + r.uniform(0, 0.2)), ring_peers[host][0], 5, 249)
            remote_error(p, t, err)
        tf = after(max(died[p.rank] for p in mine), 1.4)
        log.add(tf, torchrun_failure(tf, host, agents[host], "pretrain_gpt.py",
                                     [(p.rank, p.local, p.pid, -6, died[p.rank], sigabrt(p.pid)) for p in mine]))
        log.add(after(tf, 0.3), f"srun: error: {host}: task {n}: Exited with exit code 1")
    log.add(after(att.end, -0.5), f"+ echo 'job {LLAMA_JOBS[1]} finished with exit code 1'\n"
                                  f"job {LLAMA_JOBS[1]} finished with exit code 1")


def llama_a3_end(log: Log, att: Attempt, agents: dict[str, int], procs: list[Proc]) -> None:
    """Slurm's time limit: the job and its step are cancelled, torchrun is told to shut down."""
    t = att.end
    job = LLAMA_JOBS[2]
    log.add(t, f"slurmstepd: error: *** JOB {job} ON {att.hosts[0]} CANCELLED AT {iso_s(t)} DUE TO TIME LIMIT ***")
    log.add(after(t, 0.004), f"slurmstepd: error: *** STEP {job}.0 ON {att.hosts[0]} CANCELLED AT {iso_s(t)} DUE "
                             "TO TIME LIMIT ***")
    log.add(after(t, 0.01), "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    for n, host in enumerate(att.hosts):
        tt = after(t, 0.05 + 0.01 * n)
        lines = [f"{glog(tt, 'W')} {agents[host]} torch/distributed/elastic/agent/server/api.py:704] Received "
                 "Signals.SIGTERM death signal, shutting down workers"]
        lines += [f"{glog(tt, 'W')} {agents[host]} torch/distributed/elastic/multiprocessing/api.py:897] Sending "
                  f"process {p.pid} closing signal SIGTERM" for p in procs if p.host == host]
        lines += ["Traceback (most recent call last):", '  File "/usr/local/bin/torchrun", line 8, in <module>',
                  "    sys.exit(main())", "  [...]",
                  f'  File "{ELASTIC}/elastic/multiprocessing/api.py", line 84, in _terminate_process_handler',
                  "    raise SignalException(f\"Process {os.getpid()} got signal: {sigval}\", sigval=sigval)",
                  f"torch.distributed.elastic.multiprocessing.api.SignalException: Process {agents[host]} got "
                  "signal: 15"]
        log.add(tt, "\n".join(lines))
        log.add(after(tt, 2.2), f"srun: error: {host}: task {n}: Exited with exit code 1")


def write_llama(files: Files, story: Story) -> int:
    """Each attempt's console and per-rank steps, and run.toml; returns the step records written."""
    records = 0
    for att in story.llama:
        r = rng(f"llama-log:{att.k}")
        procs, agents = procs_for(att, r, H100_BUS)
        job = LLAMA_JOBS[att.k - 1]
        log = Log()
        megatron_startup(log, att, job, procs, agents, r)
        megatron_training(log, att, r)
        if att.k == 1:
            llama_a1_failure(log, story, att, procs, agents, r)
        elif att.k == 2:
            llama_a2_failure(log, story, att, procs, agents, r)
        else:
            llama_a3_end(log, att, agents, procs)
        data = log.render().encode()
        base = f"runs/{LLAMA}/attempt-{att.k}"
        if att.k == 1:
            # NOTE: junk bytes, as when a node's tee dies mid-write and the file system pads with NULs
            at = data.index(b"\n", len(data) // 3) + 1
            data = data[:at] + b"\x00" * 37 + b"\xff\xfe\x1b[?25l\x9c\x00\x00\n" + data[at:]
        files.raw(f"{base}/train.log.gz" if att.k == 3 else f"{base}/train.log", data)
        records += write_rank_steps(files, att, 8, LLAMA_TOKENS // 32, llama_loss, epoch_ts=False)
    files.text(f"runs/{LLAMA}/run.toml", [
        "# Facts about the run that its logs do not state reliably.",
        'cluster = "acme-east"',
        "gpus = 32",
        f"tokens_per_step = {LLAMA_TOKENS}  # global batch {LLAMA_GBS} x seq_len {LLAMA_SEQ}",
        f"params = {LLAMA_PARAMS}",
        f"layers = {LLAMA_LAYERS}",
        f"hidden = {LLAMA_HIDDEN}",
        f"seq_len = {LLAMA_SEQ}",
        f'checkpoint_dir = "{LLAMA_CKPT_DIR}"',
        'launcher = "slurm"',
        'launch_command = "sbatch --job-name=llama8b-pretrain --nodes=4 --ntasks-per-node=1 --gpus-per-node=8 '
        '--exclusive --time=04:00:00 --time-min=00:10:00 --partition=gpu --account=llm train_llama8b.sbatch"',
    ])
    return records

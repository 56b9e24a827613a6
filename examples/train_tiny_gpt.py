"""Train clusterlab's tiny Llama with DDP under torchrun (gloo, CPU), instrumented, with DCP checkpoints.

    torchrun --standalone --nproc-per-node=2 examples/train_tiny_gpt.py --steps 30 --out DIR

Every rank writes clusterlab step records (`clusterlab.torchtools.instrument`) to DIR/steps/rank-R.jsonl, with
data, compute and communication time; rank 0 prints torchtitan-style lines (`[titan] <time> - root -
INFO - step: ...`, checkpoint save and load lines): both are what `clusterlab ingest` reads.
Checkpoints go to --ckpt-dir (default DIR/checkpoints) as CKPT_DIR/step-N. Resumes from --resume
DIR, else $CLUSTERLAB_RESUME_FROM (what `clusterlab relaunch` exports), else the newest complete
checkpoint under --ckpt-dir. The data of a step depends only on (seed, step, rank), so a resumed run
sees exactly the batches the failed one would have seen and its loss curve continues.

Faults, for the relaunch driver and the end-to-end tests: with --fail-at-step N, rank --fail-rank
just before step N (in the elastic agent's first try only, so `torchrun --max-restarts` recovers)
  kill   SIGKILLs itself, the way a GPU falling off the bus takes a process down (the default);
  exit   raises an error and exits with status 1 (a traceback, as a code error leaves);
  hang   stops taking part: its peers block in the next collective until --pg-timeout-s;
  slow   computes --slow-factor times slower from step N on (a straggler).
--slow-rank R slows rank R by --slow-factor for the whole run. $CLUSTERLAB_HOST=node{rank} makes each
rank's records name its own host (emulated nodes on one machine).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import signal
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.nn.parallel import DistributedDataParallel

from clusterlab.torchtools.instrument import StepRecorder
from clusterlab.torchtools.llama import Llama, LlamaConfig

STEP_DIR = re.compile(r"step-(\d+)")
ATTEMPT_DIR = re.compile(r"attempt-(\d+)")
Chain = tuple[torch.Tensor, torch.Tensor]  # (the tokens used, each token's successors)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=20, help="train until this step")
    p.add_argument("--save-every", type=int, default=5, help="checkpoint every N steps")
    p.add_argument("--ckpt-dir", type=Path, default=None, help="checkpoints go to CKPT_DIR/step-N "
                   "(default: OUT/checkpoints, or RUNS_DIR/checkpoints)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", type=Path, help="this attempt's directory (steps/rank-R.jsonl)")
    where.add_argument("--runs-dir", type=Path, help="or the next free RUNS_DIR/attempt-K (a fixed relaunch command)")
    p.add_argument("--resume", type=Path, default=os.environ.get("CLUSTERLAB_RESUME_FROM") or None)
    p.add_argument("--batch", type=int, default=8, help="sequences per rank per step")
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--fail-at-step", type=int, default=None, help="inject --fail-mode just before this step")
    p.add_argument("--fail-rank", type=int, default=1)
    p.add_argument("--fail-mode", choices=["kill", "exit", "hang", "slow"], default="kill")
    p.add_argument("--slow-rank", type=int, default=None, help="slow this rank down for the whole run")
    p.add_argument("--slow-factor", type=float, default=3.0, help="a slowed rank computes this many times slower")
    p.add_argument("--pg-timeout-s", type=float, default=1800.0, help="collective timeout (a hung peer's cost)")
    args = p.parse_args(argv)
    if args.ckpt_dir is None:
        args.ckpt_dir = (args.out or args.runs_dir) / "checkpoints"
    return args


def log(msg: str) -> None:
    """One torchtitan-style line on rank 0 (UTC: the inventory says so for this cluster)."""
    if dist.get_rank() == 0:
        now = dt.datetime.now(dt.UTC)
        print(f"[titan] {now:%Y-%m-%d %H:%M:%S},{now.microsecond // 1000:03d} - root - INFO - {msg}", flush=True)


def init_distributed(timeout: dt.timedelta) -> None:
    """Join the gloo group; under an elastic agent, on a store prefixed by the restart count."""
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
        # NOTE: a restarted worker group reuses the agent's store: without a per-restart prefix the new
        # workers read the previous attempt's rendezvous keys and hang or get "connection refused".
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        agent = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world, is_master=False,
                              timeout=dt.timedelta(seconds=60))
        store = dist.PrefixStore(f"/attempt_{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}", agent)
        dist.init_process_group("gloo", store=store, rank=rank, world_size=world, timeout=timeout)
    else:
        dist.init_process_group("gloo", timeout=timeout)


def successor_table(seed: int, vocab: int, used: int = 64, fanout: int = 2) -> Chain:
    """A fixed random Markov chain on `used` of the `vocab` tokens, `fanout` successors each.

    Few tokens and few successors make a curve that visibly falls within tens of steps.
    """
    g = torch.Generator().manual_seed(seed)
    alphabet = torch.randperm(vocab, generator=g)[:used]
    table = torch.zeros(vocab, fanout, dtype=torch.long)
    table[alphabet] = alphabet[torch.randint(0, used, (used, fanout), generator=g)]
    return alphabet, table


def batch(chain: Chain, seed: int, step: int, rank: int, n: int, seq_len: int) -> torch.Tensor:
    """Token sequences (n, seq_len + 1) walked through the chain; a pure function of (seed, step, rank)."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + step * 1009 + rank)
    tokens = torch.empty(n, seq_len + 1, dtype=torch.long)
    alphabet, table = chain
    tokens[:, 0] = alphabet[torch.randint(0, len(alphabet), (n,), generator=g)]
    choice = torch.randint(0, table.shape[1], (n, seq_len), generator=g)
    for t in range(seq_len):
        tokens[:, t + 1] = table[tokens[:, t], choice[:, t]]
    return tokens


def attempt_dir(args: argparse.Namespace) -> Path:
    """--out, or the next free attempt-K under --runs-dir as rank 0 sees it (every rank agrees)."""
    if args.out:
        return args.out
    choice = [None]
    if dist.get_rank() == 0:
        taken = [int(m.group(1)) for d in args.runs_dir.glob("attempt-*") if (m := ATTEMPT_DIR.fullmatch(d.name))]
        choice = [str(args.runs_dir / f"attempt-{max(taken, default=0) + 1}")]
    dist.broadcast_object_list(choice, src=0)
    return Path(choice[0])


def newest_checkpoint(ckpt_dir: Path) -> Path | None:
    """The highest step-N directory whose DCP `.metadata` exists (it is written last)."""
    done = [d for d in ckpt_dir.glob("step-*") if STEP_DIR.fullmatch(d.name) and (d / ".metadata").is_file()]
    return max(done, key=lambda d: int(d.name.split("-")[1]), default=None)


def save(model, optim, step: int, ckpt_dir: Path) -> None:
    """A collective DCP save of model, optimizer and step into CKPT_DIR/step-N."""
    log("Saving the checkpoint (or staging if async is enabled).")
    t0 = time.perf_counter()
    model_sd, optim_sd = get_state_dict(model, optim)
    dcp.save({"model": model_sd, "optim": optim_sd, "step": step}, checkpoint_id=str(ckpt_dir / f"step-{step}"))
    log(f"Finished saving the checkpoint in {time.perf_counter() - t0:.2f} seconds.")


def load(model, optim, path: Path) -> int:
    """Load model and optimizer state from a DCP checkpoint; returns the step it was saved at."""
    log(f"Loading the checkpoint from {path}.")
    t0 = time.perf_counter()
    model_sd, optim_sd = get_state_dict(model, optim)
    state = {"model": model_sd, "optim": optim_sd, "step": -1}
    dcp.load(state, checkpoint_id=str(path))
    set_state_dict(model, optim, model_state_dict=state["model"], optim_state_dict=state["optim"])
    log(f"Finished loading the checkpoint in {time.perf_counter() - t0:.2f} seconds.")
    return int(state["step"])


def inject(args: argparse.Namespace, step: int, rank: int, first_try: bool) -> None:
    """The fatal faults (kill, exit, hang), just before --fail-at-step, on --fail-rank, first try only."""
    if not (first_try and step == args.fail_at_step and rank == args.fail_rank):
        return
    if args.fail_mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif args.fail_mode == "exit":
        raise RuntimeError(f"clusterlab example: injected failure on rank {rank} before step {step}")
    elif args.fail_mode == "hang":
        print(f"rank {rank}: hanging before step {step} (injected)", file=sys.stderr, flush=True)
        while True:  # stop taking part; the peers' next collective times out
            time.sleep(3600)


def slowed(args: argparse.Namespace, step: int, rank: int, first_try: bool) -> bool:
    """Is this rank a straggler at this step (--slow-rank, or --fail-mode slow from --fail-at-step on)?"""
    if rank == args.slow_rank:
        return True
    return (args.fail_mode == "slow" and first_try and rank == args.fail_rank
            and args.fail_at_step is not None and step >= args.fail_at_step)


def train(args: argparse.Namespace) -> None:
    """The training loop proper, after the process group is up."""
    rank, world = dist.get_rank(), dist.get_world_size()
    config = LlamaConfig.tiny(seq_len=args.seq_len)
    model = DistributedDataParallel(Llama(config))
    optim = torch.optim.AdamW(model.parameters(), lr=args.lr)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"Model llama tiny size: {n_params:,} total parameters")
    resume = args.resume or newest_checkpoint(args.ckpt_dir)
    start = load(model, optim, Path(resume)) + 1 if resume else 1
    first_try = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"  # faults hit the first try only
    tokens_per_step = world * args.batch * args.seq_len
    log(f"Training starts at step {start}, with local batch size {args.batch}, global batch size "
        f"{world * args.batch}, sequence length {args.seq_len}, {tokens_per_step} tokens per train step")
    chain = successor_table(args.seed, config.vocab)
    out = attempt_dir(args)
    # NOTE: the recorder's host is $CLUSTERLAB_HOST, else $SLURMD_NODENAME (emulated Slurm nodes share
    # one machine: the node name is the host the evidence should name), else the hostname.
    with StepRecorder(out / "steps" / f"rank-{rank}.jsonl", rank=rank) as rec:
        for step in range(start, args.steps + 1):
            inject(args, step, rank, first_try)
            t0 = time.perf_counter()
            with rec.step(step) as s:
                with s.data():
                    data = batch(chain, args.seed, step, rank, args.batch, args.seq_len)
                with s.compute():
                    _, loss = model(data[:, :-1], data[:, 1:])
                    optim.zero_grad(set_to_none=True)
                    loss.backward()  # DDP all-reduces the gradients here, overlapped with the backward
                    optim.step()
                    if slowed(args, step, rank, first_try):
                        # NOTE: a GPU at 1/F speed: the extra time is this rank's compute; its peers
                        # wait for it in the loss all-reduce below, which is their comm time.
                        time.sleep((args.slow_factor - 1) * (time.perf_counter() - t0))
                with s.comm():
                    mean = loss.detach().clone()
                    dist.all_reduce(mean)
                mean /= world
                s.tokens, s.loss = args.batch * args.seq_len, mean  # this rank's tokens
            log(f"step: {step:2d}  loss: {mean.item():7.4f}  memory:  0.00GiB(0.00%)  "
                f"tps: {int(tokens_per_step / (time.perf_counter() - t0)):,}")
            if step % args.save_every == 0:
                save(model, optim, step, args.ckpt_dir)
    log("Training completed")
    # NOTE: free DDP (its reducer holds the process group) before the group goes: the other order can
    # hang at exit.
    del model, optim


def main(argv: list[str] | None = None) -> None:
    """Train, checkpoint, and (on request) fail."""
    args = parse_args(argv)
    torch.manual_seed(args.seed)  # identical initial weights on every rank and every attempt
    torch.set_num_threads(1)  # two ranks on two cores: more threads only contend
    init_distributed(dt.timedelta(seconds=args.pg_timeout_s))
    train(args)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

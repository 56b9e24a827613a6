"""Instrumentation overhead: training steps with and without `clusterlab.instrument`, in one run.

    python benchmarks/instrument.py [--steps 60] [--threads 2] [--batch 8] [--seq-len 128]

The step is the tiny Llama's forward, backward and AdamW update on CPU (tens to hundreds of ms).
Steps alternate between plain and instrumented (data, compute and comm regions, tokens, a tensor
loss, one record written per step), so drift in the machine's speed hits both alike. Two figures:
the difference of median step times (noisy: it is the difference of two noisy numbers), and the
recorder's own time per step, timed around its calls (the overhead itself, free of step noise),
each as a share of the median plain step. The second must stay under 1%.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch

from clusterlab.instrument import StepRecorder
from clusterlab.llama import Llama, LlamaConfig


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=60, help="steps of each kind")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=128)
    args = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    config = LlamaConfig.tiny(seq_len=args.seq_len)
    model = Llama(config)
    optim = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.randint(0, config.vocab, (args.batch, args.seq_len + 1))

    def train_step() -> torch.Tensor:
        _, loss = model(data[:, :-1], data[:, 1:])
        optim.zero_grad(set_to_none=True)
        loss.backward()
        optim.step()
        return loss.detach()

    for _ in range(3):  # warm-up: allocator, first-call dispatch
        train_step()
    plain, timed, own = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        rec = StepRecorder(Path(tmp) / "rank-0.jsonl", rank=0, host="bench")
        for i in range(2 * args.steps):
            if i % 2 == 0:
                t0 = time.perf_counter()
                batch = data.clone()  # the same "data loading" in both kinds of step
                train_step()
                plain.append(time.perf_counter() - t0)
                continue
            # the recorder's own time: the step less the bodies of its regions (the bodies are timed inside)
            t0 = time.perf_counter()
            with rec.step(i) as s:
                with s.data():
                    a = time.perf_counter()
                    batch = data.clone()
                    body = time.perf_counter() - a
                with s.compute():
                    a = time.perf_counter()
                    loss = train_step()
                    body += time.perf_counter() - a
                with s.comm():  # an empty region: what marking a collective costs
                    pass
                s.tokens, s.loss = batch.numel(), loss
            timed.append(time.perf_counter() - t0)
            own.append(timed[-1] - body)
        rec.close()
        written = rec.written
    base = statistics.median(plain)
    diff = (statistics.median(timed) - base) / base
    share = statistics.median(own) / base
    print(f"step (median of {args.steps} each): plain {base * 1e3:.2f} ms, instrumented "
          f"{statistics.median(timed) * 1e3:.2f} ms; {written} records written")
    print(f"step-time difference: {100 * diff:+.3f}% (noisy)")
    print(f"recorder's own time: {statistics.median(own) * 1e6:.1f} us per step = {100 * share:.4f}% of the step "
          f"(ratio {1 + share:.5f}); {'OK' if share < 0.01 else 'FAIL'}: under 1%")


if __name__ == "__main__":
    main()

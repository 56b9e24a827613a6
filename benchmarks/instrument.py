"""Instrumentation overhead: training steps with and without `clusterlab.torchtools.instrument`, in one run.

    python benchmarks/instrument.py [--steps 60] [--threads 2] [--batch 8] [--seq-len 128]
    python benchmarks/instrument.py --device cuda       # a ~1B Llama in bf16 on one GPU, and its MFU

The step is the tiny Llama's forward, backward and AdamW update on CPU (tens to hundreds of ms).
On CUDA the model is a ~1B-parameter Llama in bf16, and both kinds of step end with a
`torch.cuda.synchronize()` so that a step's time is the GPU's; the recorder itself never waits
(CUDA events, read once complete), so its own time is what it costs the host per step. The CUDA
run also prints the measured MFU against the package's peak table: a check of `clusterlab.torchtools.flops`
on a real chip.
Steps alternate between plain and instrumented (data, compute and comm regions, tokens, a tensor
loss, one record written per step), so drift in the machine's speed hits both alike. Two figures:
the difference of median step times (noisy: it is the difference of two noisy numbers), and the
recorder's own time per step, timed around its calls (the overhead itself, free of step noise),
each as a share of the median plain step. The second must stay under 1%.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

from clusterlab.torchtools import flops
from clusterlab.torchtools.instrument import StepRecorder
from clusterlab.torchtools.llama import Llama, LlamaConfig

# NOTE: ~1.2B parameters: big enough that a step is GPU-bound on an H100/H200, small enough for 80 GB.
GPU_CONFIG = LlamaConfig(vocab=32000, hidden=2048, layers=16, heads=16, kv_heads=8, ffn=8192, seq_len=2048)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=60, help="steps of each kind")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    cuda = args.device == "cuda"
    config = GPU_CONFIG if cuda else LlamaConfig.tiny(seq_len=args.seq_len)
    device = torch.device(args.device)
    model = Llama(config).to(device, dtype=torch.bfloat16 if cuda else torch.float32)
    optim = torch.optim.AdamW(model.parameters(), lr=1e-4)
    seq = config.seq_len if cuda else args.seq_len
    data = torch.randint(0, config.vocab, (args.batch, seq + 1), device=device)
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    def train_step() -> torch.Tensor:
        _, loss = model(data[:, :-1], data[:, 1:])
        optim.zero_grad(set_to_none=True)
        loss.backward()
        optim.step()
        return loss.detach()

    for _ in range(3):  # warm-up: allocator, first-call dispatch
        train_step()
    sync()
    plain, timed, own = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        records = Path(tmp) / "rank-0.jsonl"
        rec = StepRecorder(records, rank=0, host="bench", device=device if cuda else None)
        for i in range(2 * args.steps):
            if i % 2 == 0:
                t0 = time.perf_counter()
                batch = data.clone()  # the same "data loading" in both kinds of step
                train_step()
                sync()
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
            a = time.perf_counter()
            sync()  # the benchmark's wait for the GPU, not the recorder's: kept out of its own time
            body += time.perf_counter() - a
            timed.append(time.perf_counter() - t0)
            own.append(timed[-1] - body)
        rec.close()
        written = rec.written
        gpu_compute = [r["compute_s"] for r in map(json.loads, records.read_text().splitlines())]
    base = statistics.median(plain)
    diff = (statistics.median(timed) - base) / base
    share = statistics.median(own) / base
    print(f"step (median of {args.steps} each): plain {base * 1e3:.2f} ms, instrumented "
          f"{statistics.median(timed) * 1e3:.2f} ms; {written} records written")
    print(f"step-time difference: {100 * diff:+.3f}% (noisy)")
    print(f"recorder's own time: {statistics.median(own) * 1e6:.1f} us per step = {100 * share:.4f}% of the step "
          f"(ratio {1 + share:.5f}); {'OK' if share < 0.01 else 'FAIL'}: under 1%")
    if cuda:
        name = torch.cuda.get_device_name(device)
        tokens_per_s = args.batch * seq / base
        fpt = flops.analytic_flops_per_token(config)
        achieved = tokens_per_s * fpt
        print(f"{name}: {tokens_per_s:,.0f} tokens/s, {fpt / 1e9:.2f} GFLOP/token -> {achieved / 1e12:.0f} TFLOP/s; "
              f"MFU {100 * flops.mfu(tokens_per_s, fpt, name):.1f}% of {flops.peak_flops(name) / 1e12:.0f} TFLOP/s")
        print(f"CUDA-event compute region (median): {statistics.median(gpu_compute) * 1e3:.2f} ms "
              f"vs host-timed step {base * 1e3:.2f} ms")


if __name__ == "__main__":
    main()

"""What one more small file costs an ingest, per kind of log, against what it costs a DuckDB line scan.

    python benchmarks/per_file_cost.py [--small 200] [--large 1000] [--repeat 3] [--kinds nccl,kernel,...]

A fleet's evidence is thousands of small files: a kernel journal per node, an NCCL log per node and attempt, a
step file per rank. Issue 32 holds ingest to at most 1 ms of fixed cost a file. For each kind this writes --small
and then --large copies of a real-format sample from `data_samples/` into a bundle (each copy made distinct by
its host, or by one shell-trace line at its end, as `srun` prints them: the ingest skips a file it has stored by
content), times `clusterlab ingest --workers 1` of each (the best of --repeat, process start included) and the
DuckDB line scan of the same files (`read_csv` as lines, 2 threads; `campaign_corpus.line_scan`), and prints the
marginal cost of a file, (t(large) - t(small)) / (large - small), for both and their ratio. The process start
and everything paid once cancel out of the difference.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from campaign_corpus import line_scan  # noqa: E402  (the sibling benchmark's DuckDB line scan)

SAMPLES = Path(__file__).resolve().parents[1] / "data_samples"


def _traced(text: bytes, i: int) -> bytes:
    return text + (b"" if text.endswith(b"\n") else b"\n") + f"+ echo copy {i}\n".encode()


# kind: (the sample, where copy i goes in the bundle, how copy i is made distinct)
KINDS: dict[str, tuple[str, Callable[[int], str], Callable[[bytes, int], bytes]]] = {
    "nccl": ("nccl/ib_completion_2_21.log", lambda i: f"runs/bench/attempt-1/nccl/h{i:04d}.log", _traced),
    "kernel": ("kernel/journal_short_iso.log", lambda i: f"nodes/h{i:04d}/kern.log",
               lambda t, i: t.replace(b"gpu-042", f"h{i:04d}".encode())),
    "torch": ("torch/legacy_1_13.log", lambda i: f"runs/bench-{i:04d}/attempt-1/torch.log", _traced),
    "megatron": ("megatron/gpt_restart.log", lambda i: f"runs/bench-{i:04d}/attempt-1/train.log", _traced),
    # the sample holds junk on purpose (a cut record, a rank as text, a nested value): every copy is then read
    # line by line; "step_jsonl_clean" keeps only its whole records, as a rank's file usually is
    "step_jsonl": ("step_jsonl/rank_steps.jsonl", lambda i: f"runs/bench/attempt-1/steps/rank-{i:05d}.jsonl",
                   lambda t, i: t.replace(b'"host": "east-', f'"host": "h{i:04d}-'.encode())),
    "step_jsonl_clean": ("step_jsonl/rank_steps.jsonl",
                         lambda i: f"runs/bench/attempt-1/steps/rank-{i:05d}.jsonl",
                         lambda t, i: _records(t).replace(b'"host": "east-', f'"host": "h{i:04d}-'.encode())),
}


def _records(text: bytes) -> bytes:
    """The lines of a step file that are whole step records (a JSON object, its rank and step integers, every
    value a scalar)."""
    def whole(line: bytes) -> bool:
        try:
            o = json.loads(line)
        except ValueError:
            return False
        return (isinstance(o, dict) and isinstance(o.get("rank"), int) and isinstance(o.get("step"), int)
                and not any(isinstance(v, list | dict) for v in o.values()))
    return b"".join(ln for ln in text.splitlines(keepends=True) if whole(ln))


def write(root: Path, kind: str, n: int) -> list[Path]:
    sample, where, distinct = KINDS[kind]
    text = (SAMPLES / sample).read_bytes()  # (some samples hold a byte that is not UTF-8, as real logs do)
    out = []
    for i in range(n):
        p = root / where(i)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(distinct(text, i))
        out.append(p)
    return out


def ingest_s(bundle: Path, db: Path) -> float:
    db.unlink(missing_ok=True)
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "clusterlab.cli", "--db", str(db), "ingest", "--workers", "1",
                           str(bundle)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    took = time.perf_counter() - t
    if done.returncode not in (0, 2):  # 2: lines reported as not read (the samples hold a few on purpose)
        raise RuntimeError(f"ingest of {bundle} failed with status {done.returncode}")
    db.unlink(missing_ok=True)
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=200)
    ap.add_argument("--large", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--kinds", default=",".join(KINDS))
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="clusterlab-per-file-"))
    try:
        print(f"{'kind':11s} {'sample':32s} {'ingest ms a file':>17s} {'line scan ms a file':>20s} {'ratio':>7s}")
        for kind in args.kinds.split(","):
            times, scans = {}, {}
            for n in (args.small, args.large):
                root = work / f"{kind}-{n}"
                files = write(root, kind, n)
                times[n] = min(ingest_s(root, work / "x.duckdb") for _ in range(args.repeat))
                scans[n] = min(line_scan(files) for _ in range(args.repeat))
            d = args.large - args.small
            per = (times[args.large] - times[args.small]) / d * 1000
            scan = (scans[args.large] - scans[args.small]) / d * 1000
            print(f"{kind:11s} {KINDS[kind][0]:32s} {per:17.2f} {scan:20.3f} {per / max(scan, 1e-6):6.1f}x  "
                  f"({args.small} files {times[args.small]:.2f} s, {args.large} files {times[args.large]:.2f} s)",
                  flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

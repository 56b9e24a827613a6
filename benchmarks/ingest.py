"""Ingest throughput against `grep -cE` over the same files, with peak memory and linearity.

    python benchmarks/ingest.py [--sizes-mb 250,1000] [--dir /tmp/clusterlab-bench]

For each size it writes a mixed corpus (NCCL INFO spam dominates, as in real logs; rank-0
training logs with Megatron lines, NCCL WARN and watchdog lines; kernel logs with Xids; per-rank
step JSONL), then times `clusterlab ingest` into a fresh database and `grep -cE` with the
collectors' own patterns over the same files, and prints the ratio and the ingest's peak RSS.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from clusterlab.collectors import all_collectors

T0 = dt.datetime(2026, 11, 24, 8, 0, 0)
HOSTS = [f"east-{i:03d}" for i in range(1, 17)]


def _train_block(b: int, lines: int) -> str:
    """One block of a rank-0 log: mostly NCCL INFO, one Megatron line per 200 lines."""
    out = []
    for i in range(lines):
        h = HOSTS[i % len(HOSTS)]
        r = i % 128
        if i % 200 == 0:
            it = b * (lines // 200) + i // 200 + 1
            ts = (T0 + dt.timedelta(seconds=2 * it)).strftime("%Y-%m-%d %H:%M:%S")
            out.append(f" [{ts}] iteration {it:8d}/  500000 | consumed samples: {it * 256:12d} | "
                       f"elapsed time per iteration (ms): 2013.4 | throughput per GPU (TFLOP/s/GPU): 402.3 | "
                       f"learning rate: 3.000000E-04 | global batch size:   256 | lm loss: 2.345678E+00 | "
                       f"loss scale: 1.0 | grad norm: 0.812 | number of skipped iterations:   0 | "
                       f"number of nan iterations:   0 |")
        elif i % 997 == 0:
            out.append(f"{h}:{4000 + r}:{4100 + r} [{r % 8}] NCCL INFO comm 0x55d0c{r:04x} rank {r} nranks 128 "
                       f"cudaDev {r % 8} nvmlDev {r % 8} busId {(r % 8) * 0x10 + 0x18:x}000 commId 0x9f3a{b:06x} "
                       f"- Init COMPLETE")
        else:
            out.append(f"{h}:{4000 + r}:{4100 + r} [{r % 8}] NCCL INFO Channel {i % 32:02d}/0 : {r} -> "
                       f"{(r + 1) % 128} via P2P/CUMEM/read")
    return "\n".join(out) + "\n"


def _kernel_block(b: int, lines: int) -> str:
    out = []
    for i in range(lines):
        ts = (T0 + dt.timedelta(seconds=b * lines + i)).strftime("%Y-%m-%dT%H:%M:%S,000000+00:00")
        if i % 5000 == 0:
            out.append(f"{ts} NVRM: Xid (PCI:0000:5d:00): 79, pid=1234, name=python, GPU has fallen off the bus.")
        else:
            out.append(f"{ts} systemd[1]: Started session-{i}.scope - Session {i} of User slurm.")
    return "\n".join(out) + "\n"


def _steps_block(b: int, lines: int) -> str:
    out = []
    for i in range(lines):
        step, rank = (b * lines + i) // 64, i % 64
        out.append(json.dumps({"ts": 1764000000 + step * 2, "rank": rank, "host": HOSTS[rank // 8], "step": step,
                               "step_s": 2.01, "compute_s": 1.71, "comm_s": 0.21, "data_s": 0.02,
                               "tokens": 16384, "loss": 2.3}))
    return "\n".join(out) + "\n"


# Share of the corpus by bytes: NCCL-heavy training logs dominate, as in real evidence.
KINDS = [("runs/bench/attempt-1/train-{k}.log", _train_block, 0.80),
         ("nodes/{host}/dmesg-{k}.log", _kernel_block, 0.05),
         ("runs/bench/attempt-1/steps/rank-{k}.jsonl", _steps_block, 0.15)]


def make_corpus(root: Path, size_mb: int) -> list[Path]:
    """Write about size_mb of evidence under root; returns the files."""
    files = []
    for pattern, block, share in KINDS:
        target = int(size_mb * share * (1 << 20))
        per_file = 64 << 20
        k = 0
        while target > 0:
            p = root / pattern.format(k=k, host=HOSTS[k % len(HOSTS)])
            p.parent.mkdir(parents=True, exist_ok=True)
            written, b = 0, k * 10_000
            with p.open("w") as f:
                while written < min(per_file, target):
                    text = block(b, 4000)
                    f.write(text)
                    written += len(text)
                    b += 1
            files.append(p)
            target -= written
            k += 1
    return files


def grep_pattern() -> str:
    """The union of the collectors' patterns in GNU ERE (which has \\w, \\s, \\S and \\b but no \\d)."""
    pats = [c.PATTERN for c in all_collectors() if c.PATTERN] + ['"step"']
    ere = "|".join(f"({p})" for p in pats)
    # NOTE: (?i:...) becomes a plain group: grep then does less work, which only flatters grep.
    for a, b in (("(?i:", "("), ("(?:", "("), (r"\d", "[0-9]"), (r"\x1b", "\x1b")):
        ere = ere.replace(a, b)
    return ere


def timed(cmd: list[str], **kw) -> tuple[float, int]:
    """Wall seconds and peak RSS (MiB) of one child process."""
    # NOTE: not /dev/null: GNU grep notices it and stops at the first match.
    with tempfile.TemporaryFile() as out:
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, **kw)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) not in (0, 1, 2):
        raise RuntimeError(f"{cmd[0]} failed with status {status}")
    return elapsed, usage.ru_maxrss // 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes-mb", default="250,1000")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/clusterlab-bench"))
    args = ap.parse_args()
    rows = []
    for size in (int(s) for s in args.sizes_mb.split(",")):
        root = args.dir / f"corpus-{size}"
        shutil.rmtree(root, ignore_errors=True)
        files = make_corpus(root, size)
        total = sum(p.stat().st_size for p in files) / (1 << 20)
        subprocess.run(["cat", *map(str, files)], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
        g, _ = timed(["grep", "-cE", grep_pattern(), *map(str, files)])
        db = args.dir / f"bench-{size}.duckdb"
        db.unlink(missing_ok=True)
        t, rss = timed([sys.executable, "-m", "clusterlab.cli", "--db", str(db), "ingest", str(root)])
        rows.append((size, total, g, t, rss))
        print(f"{total:8.0f} MiB  grep {g:6.2f} s  ingest {t:6.2f} s  ratio {t / g:5.2f}x  "
              f"ingest {total / t:6.1f} MiB/s  peak RSS {rss} MiB", flush=True)
    if len(rows) > 1:
        (_, m0, _, t0, _), (_, m1, _, t1, _) = rows[0], rows[-1]
        print(f"linearity: {m1 / m0:.2f}x the input took {t1 / t0:.2f}x the time")


if __name__ == "__main__":
    main()

"""Ingest of a fleet's evidence (many files of each kind), against `cat` and `grep -cE` on the same files.

    python benchmarks/fleet_ingest.py [--nodes 1024] [--hours 1.25] [--attempts 3] [--scales 1,2,4] [--workers N]
                                      [--reuse] [--grep first|all|none]
    python benchmarks/fleet_ingest.py --corpus campaigns [--seeds 4] [--scales 1,2,4] [--gzip as-written|none|all]

The second form times the independent campaigns at many seeds, text-heavy (`campaign_corpus.py`).

What a 1,024-node x 8-GPU campaign leaves behind, in the bundle layout clusterlab reads:

    runs/fleet/attempt-K/steps/rank-R.jsonl     one per rank and attempt (per-rank step records)
    runs/fleet/attempt-K/nccl/<host>.log        one per node and attempt (NCCL INFO, the odd WARN)
    runs/fleet/attempt-K/train.log              one per attempt (Megatron iteration lines)
    nodes/<host>/kern.log                       one per node (journal lines, the odd Xid)
    sacct.txt                                   the scheduler's records

At --scales 1 that is about 28,000 files and 2 GB; each further scale multiplies the hours. For each
scale it prints MB/s, files/s, ms per file, peak RSS, and the ratios to `cat` (the floor: reading the
bytes) and to `grep -cE` with the collectors' own patterns, then how the time grew with the size.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import campaign_corpus  # noqa: E402  (the campaign corpus mode)
from ingest import grep_pattern, timed  # noqa: E402  (the sibling benchmark's ERE and process timer)

T0 = dt.datetime(2026, 11, 24, 8, 0, 0)
STEP_S = 10.0  # one optimizer step every ten seconds: 360 per rank per hour


def _host(n: int) -> str:
    return f"fleet-{n:04d}"


def _rank_file(rank: int, attempt: int, first: int, steps: int) -> str:
    host = _host(rank // 8)
    t0 = T0.timestamp() + (attempt - 1) * 3600 * 24
    out = []
    for s in range(first, first + steps):
        # NOTE: instrument.py's keys, as json.dumps spells them (formatted directly: the corpus is 2 GB and up)
        out.append(f'{{"ts": {t0 + s * STEP_S:.3f}, "rank": {rank}, "host": "{host}", "step": {s}, '
                   f'"step_s": {STEP_S - (s * 7 + rank) % 13 / 100:.3f}, "compute_s": 8.1, "comm_s": 1.4, '
                   f'"data_s": 0.05, "tokens": 32768, "loss": {2.5 - s / 1e5:.5f}}}')
    return "\n".join(out) + "\n"


def _nccl_file(node: int, attempt: int, lines: int) -> str:
    host, out = _host(node), []
    for i in range(lines):
        r = node * 8 + i % 8
        pid = 1000 + r
        if i < 8:
            out.append(f"{host}:{pid}:{pid + 100} [{i % 8}] NCCL INFO comm 0x55d0c{r:06x} rank {r} nranks 8192 "
                       f"cudaDev {i % 8} nvmlDev {i % 8} busId {(i % 8) * 0x10 + 0x18:x}000 commId 0x9f3a{attempt:06x}"
                       f" - Init COMPLETE")
        elif i % 4001 == 0:
            out.append(f"{host}:{pid}:{pid + 100} [{i % 8}] NCCL WARN NET/IB : Got async event : port error")
        else:
            out.append(f"{host}:{pid}:{pid + 100} [{i % 8}] NCCL INFO Channel {i % 32:02d}/0 : {r} -> "
                       f"{(r + 8) % 8192}[{(r + 8) % 8}] [send] via NET/IB/{i % 8}/GDRDMA")
    return "\n".join(out) + "\n"


def _kernel_file(node: int, lines: int, hours: float) -> str:
    host, out = _host(node), []
    for i in range(lines):
        ts = (T0 + dt.timedelta(seconds=i * hours * 3600 / lines)).strftime("%Y-%m-%dT%H:%M:%S.%f+0000")
        if i == lines // 2 and node % 97 == 3:
            out.append(f"{ts} {host} kernel: NVRM: Xid (PCI:0000:5d:00): 79, pid=1234, name=python, "
                       f"GPU has fallen off the bus.")
        elif i % 3 == 0:
            out.append(f"{ts} {host} kernel: mlx5_core 0000:{i % 256:02x}:00.1: mlx5e_port_module_event:"
                       f"{i % 9}: Port module event: module 1, Cable plugged")
        else:
            out.append(f"{ts} {host} systemd[1]: Started session-{i}.scope - Session {i} of User slurm.")
    return "\n".join(out) + "\n"


def _train_file(attempt: int, first: int, steps: int) -> str:
    out = []
    for s in range(first, first + steps):
        ts = (T0 + dt.timedelta(days=attempt - 1, seconds=s * STEP_S)).strftime("%Y-%m-%d %H:%M:%S")
        out.append(f" [{ts}] iteration {s:8d}/  500000 | consumed samples: {s * 1024:12d} | "
                   f"elapsed time per iteration (ms): {STEP_S * 1000:.1f} | throughput per GPU (TFLOP/s/GPU): 402.3 | "
                   f"learning rate: 3.000000E-04 | global batch size:  1024 | lm loss: 2.345678E+00 | "
                   f"loss scale: 1.0 | grad norm: 0.812 | number of skipped iterations:   0 | "
                   f"number of nan iterations:   0 |")
    return "\n".join(out) + "\n"


def make_fleet(root: Path, nodes: int, hours: float, attempts: int) -> list[Path]:
    """Write the fleet's evidence under root; returns the files."""
    steps = int(hours * 3600 / STEP_S)
    files: list[Path] = []

    def put(rel: str, text: str) -> None:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        files.append(p)

    put("inventory.toml", "[providers.acme]\nusd_per_gpu_hour = 2.5\n\n[clusters.fleet]\nprovider = \"acme\"\n"
        f"gpu = \"H100-SXM\"\ngpus_per_node = 8\nnodes = \"fleet-[0000-{nodes - 1:04d}]\"\n"
        f"contracted_nodes = {nodes}\n")
    put("runs/fleet/run.toml", f"cluster = \"fleet\"\ngpus = {nodes * 8}\ntokens_per_step = 33554432\n")
    sacct = ["JobID|JobName|State|ExitCode|Start|End|NodeList"]
    for a in range(1, attempts + 1):
        first = (a - 1) * steps + 1
        start = T0 + dt.timedelta(days=a - 1)
        sacct.append(f"{1000 + a}|fleet|{'COMPLETED' if a == attempts else 'FAILED'}|0:0|"
                     f"{start:%Y-%m-%dT%H:%M:%S}|{start + dt.timedelta(hours=hours):%Y-%m-%dT%H:%M:%S}|"
                     f"fleet-[0000-{nodes - 1:04d}]")
        put(f"runs/fleet/attempt-{a}/train.log", _train_file(a, first, steps))
        for node in range(nodes):
            put(f"runs/fleet/attempt-{a}/nccl/{_host(node)}.log", _nccl_file(node, a, int(200 * hours)))
            for g in range(8):
                put(f"runs/fleet/attempt-{a}/steps/rank-{node * 8 + g:05d}.jsonl",
                    _rank_file(node * 8 + g, a, first, steps))
    for node in range(nodes):
        put(f"nodes/{_host(node)}/kern.log", _kernel_file(node, int(300 * hours), hours))
    put("sacct.txt", "\n".join(sacct) + "\n")
    return files


def _timed_cpu(cmd: list[str]) -> tuple[float, int, float]:
    """Wall seconds, peak RSS (MiB) of the largest process, and CPU seconds of the command and its workers."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)  # the usage of its reaped workers is folded into it
    if os.waitstatus_to_exitcode(status) not in (0, 2):
        raise RuntimeError(f"ingest failed with status {status}")
    return time.perf_counter() - t, usage.ru_maxrss // 1024, usage.ru_utime + usage.ru_stime


def _xargs(tool: list[str], listing: Path) -> list[str]:
    """One command over many files without passing the argument limit (xargs batches them; no shell)."""
    return ["xargs", "-0", "-a", str(listing), *tool]


KINDS = {  # what each kind of file costs on its own (the first attempt's files of each kind)
    "per-rank step JSONL": "runs/fleet/attempt-1/steps",
    "NCCL logs": "runs/fleet/attempt-1/nccl",
    "kernel logs": "nodes",
}


def _per_kind(root: Path, work: Path, workers: list[str]) -> None:
    for kind, rel in KINDS.items():
        files = [p for p in (root / rel).rglob("*") if p.is_file()]
        mb = sum(p.stat().st_size for p in files) / 1e6
        db = work / "kind.duckdb"
        db.unlink(missing_ok=True)
        took, _ = timed([sys.executable, "-m", "clusterlab.cli", "--db", str(db), "ingest", *workers, str(root / rel)])
        print(f"  {kind:20s} {len(files):6,} files {mb:7.0f} MB  {took:6.1f} s  {mb / took:6.1f} MB/s  "
              f"{took * 1000 / len(files):5.2f} ms/file", flush=True)
        db.unlink(missing_ok=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1024)
    ap.add_argument("--hours", type=float, default=1.25, help="hours of evidence per attempt at scale 1 (2 GB)")
    ap.add_argument("--attempts", type=int, default=3)
    ap.add_argument("--scales", default="1,2,4")
    ap.add_argument("--workers", type=int, default=None, help="ingest workers (default: the core count)")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/clusterlab-fleet"))
    ap.add_argument("--reuse", action="store_true",
                    help="time the corpus an earlier run left at --dir, where it was made with the same shape")
    ap.add_argument("--grep", choices=("first", "all", "none"), default="first",
                    help="time grep -cE at the first scale only (default: it takes minutes a GB), at all, or none")
    ap.add_argument("--corpus", choices=("fleet", "campaigns"), default="fleet",
                    help="the simulated fleet (JSONL-heavy), or the independent campaigns at many seeds (text-heavy)")
    ap.add_argument("--seeds", type=int, default=4, help="campaigns: seeds of each campaign at scale 1")
    ap.add_argument("--gzip", choices=("as-written", "none", "all"), default="as-written",
                    help="campaigns: their files as the campaigns write them, all plain, or all gzipped")
    args = ap.parse_args()
    if args.corpus == "campaigns":
        campaign_corpus.run(args.dir, args.seeds, [int(float(s)) for s in args.scales.split(",")], args.gzip,
                            ["--workers", str(args.workers)] if args.workers else [])
        return
    campaign_corpus.compile_package()
    rows = []
    for scale in (float(s) for s in args.scales.split(",")):
        root = args.dir / f"fleet-x{scale:g}"
        listing = args.dir / f"fleet-x{scale:g}.files"
        shape = root / ".fleet.json"  # (hidden: no walk reads it) what the corpus there was made with
        want = json.dumps({"nodes": args.nodes, "hours": args.hours * scale, "attempts": args.attempts})
        t = time.perf_counter()
        if args.reuse and shape.is_file() and shape.read_text() == want and listing.is_file():
            files = [Path(p.decode()) for p in listing.read_bytes().split(b"\0") if p]
            made = "found"
        else:
            shutil.rmtree(root, ignore_errors=True)
            files = make_fleet(root, args.nodes, args.hours * scale, args.attempts)
            listing.write_bytes(b"".join(bytes(p) + b"\0" for p in files))
            shape.write_text(want)
            made = "written"
        mb = sum(p.stat().st_size for p in files) / 1e6
        print(f"scale {scale:g}: {len(files):,} files, {mb:,.0f} MB {made} in {time.perf_counter() - t:.0f} s",
              flush=True)
        cat, _ = timed(_xargs(["cat"], listing), stderr=subprocess.DEVNULL)  # also warms the page cache
        cat, _ = timed(_xargs(["cat"], listing), stderr=subprocess.DEVNULL)
        # NOTE: GNU grep warns about the collectors' `(?...)` groups it reads as plain ones: not worth a screenful
        first = scale == float(args.scales.split(",")[0])
        grep = None
        if args.grep == "all" or (args.grep == "first" and first):
            grep, _ = timed(_xargs(["grep", "-cE", grep_pattern()], listing), stderr=subprocess.DEVNULL)
        db = args.dir / f"fleet-x{scale:g}.duckdb"
        db.unlink(missing_ok=True)
        workers = ["--workers", str(args.workers)] if args.workers else []
        took, rss, cpu = _timed_cpu([sys.executable, "-m", "clusterlab.cli", "--db", str(db), "ingest", *workers,
                                     str(root)])
        rows.append((scale, mb, len(files), took))
        print(f"  ingest {took:7.1f} s ({cpu:.1f} s of CPU, workers included; load {os.getloadavg()[0]:.1f})  "
              f"{mb / took:6.1f} MB/s  {len(files) / took:7.0f} files/s  "
              f"{took * 1000 / len(files):5.2f} ms/file  peak RSS {rss:,} MiB  "
              f"cat {cat:5.1f} s ({took / cat:5.1f}x)"
              + (f"  grep -cE {grep:6.1f} s ({took / grep:5.2f}x)" if grep is not None else ""), flush=True)
        if first:
            _per_kind(root, args.dir, workers)
    if len(rows) > 1:
        (_, m0, _, t0), (_, m1, _, t1) = rows[0], rows[-1]
        print(f"linearity: {m1 / m0:.2f}x the input took {t1 / t0:.2f}x the time")


if __name__ == "__main__":
    main()

"""Preflight: the health check run on nodes before a long run and after a failure.

    clusterlab preflight --nproc 8 --json            # one node, launches itself under torchrun
    torchrun --nnodes 4 --nproc-per-node 8 ... -m clusterlab.torchtools.preflight --out preflight.jsonl

Per rank: dense matmul throughput, device memory bandwidth (a copy), and, across the group,
all-reduce bus bandwidth and a ring of point-to-point pairs (rank i with i+1) that measures each
link on its own, so one bad link or NIC stands out where an all-reduce only gets slower for
everyone. Figures more than `--threshold` below the fleet median are flagged, with the figure and
the median in `reason`. nccl on GPUs, gloo on CPU. Every record says what was measured: device,
dtype, sizes, repetitions (the median is reported), and `injected_slowdown` where a test slowed a
rank on purpose. Rank 0 writes the records as JSON Lines that `clusterlab ingest` reads
(clusterlab/collectors/preflight.py): to --out, else into clusterlab's state folder (`records_dir`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

METRICS = ("matmul_tflops", "mem_gbps")  # per-device figures compared with the fleet median


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m clusterlab.torchtools.preflight", description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, required=True, help="JSONL records (written by rank 0)")
    p.add_argument("--threshold", type=float, default=0.2, help="flag figures this fraction below the median")
    p.add_argument("--matmul-n", type=int, default=None, help="square matmul size (default: 8192 GPU, 512 CPU)")
    p.add_argument("--mem-mb", type=int, default=None, help="copy size in MiB (default: 1024 GPU, 64 CPU)")
    p.add_argument("--comm-mb", type=int, default=None, help="all-reduce / p2p size in MiB (default: 256 GPU, 8 CPU)")
    p.add_argument("--reps", type=int, default=5, help="timed repetitions of each test (after a warm-up)")
    p.add_argument("--timeout-s", type=float, default=300.0, help="collective timeout")
    p.add_argument("--slow-rank", type=int, default=None, help=argparse.SUPPRESS)  # tests: slow one rank
    p.add_argument("--slow-factor", type=float, default=4.0, help=argparse.SUPPRESS)
    p.add_argument("--print", dest="print_as", choices=["table", "json", "none"], default="table")
    return p


# ---------------------------------------------------------------- measurement (inside torchrun)

class Bench:
    """Times operations on one device, the slowed rank (a test's choice) taking `factor` times longer."""

    def __init__(self, device, reps: int, slow_factor: float | None) -> None:
        import torch

        self.torch, self.device, self.reps, self.slow = torch, device, reps, slow_factor

    def sync(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)

    def median_s(self, fn: Callable[[], None]) -> float:
        """Median seconds of `fn` over the repetitions, after one warm-up call."""
        fn()
        times = []
        for _ in range(self.reps):
            self.sync()
            t0 = time.perf_counter()
            fn()
            self.sync()
            took = time.perf_counter() - t0
            if self.slow:
                time.sleep((self.slow - 1) * took)
                took *= self.slow
            times.append(took)
        return statistics.median(times)


def measure_local(b: Bench, matmul_n: int, mem_bytes: int, dtype) -> dict[str, float]:
    """Matmul TFLOP/s (2·n³ per product) and copy GB/s (read plus write: 2·bytes per copy)."""
    torch = b.torch
    x = torch.randn(matmul_n, matmul_n, device=b.device, dtype=dtype)
    y = torch.randn(matmul_n, matmul_n, device=b.device, dtype=dtype)
    mm_s = b.median_s(lambda: torch.mm(x, y))
    src = torch.empty(mem_bytes // 4, device=b.device, dtype=torch.float32).fill_(1.0)
    dst = torch.empty_like(src)
    copy_s = b.median_s(lambda: dst.copy_(src))
    return {"matmul_tflops": 2 * matmul_n**3 / mm_s / 1e12, "mem_gbps": 2 * src.nbytes / copy_s / 1e9}


def measure_allreduce(b: Bench, nbytes: int) -> float | None:
    """All-reduce bus bandwidth in GB/s as nccl-tests define it: size / time · 2(n-1)/n."""
    import torch.distributed as dist

    n = dist.get_world_size()
    if n < 2:
        return None
    t = b.torch.ones(nbytes // 4, device=b.device, dtype=b.torch.float32)
    # NOTE: no injected slowdown here: one slow member slows the collective for all alike, which is
    # why the point-to-point ring exists.
    plain = Bench(b.device, b.reps, None)
    secs = plain.median_s(lambda: dist.all_reduce(t))
    return t.nbytes / secs * 2 * (n - 1) / n / 1e9


def ring_links(n: int) -> list[list[tuple[int, int]]]:
    """Phases of disjoint ring pairs (i, i+1 mod n): no rank is in two transfers at once."""
    links = [(i, (i + 1) % n) for i in range(n if n > 2 else n - 1)]
    wraps = n % 2 == 1  # with n odd the pair (n-1, 0) meets rank 0 in the even phase: a third phase
    phases = [[lk for lk in links if lk[0] % 2 == 0 and not (wraps and lk[1] == 0)],
              [lk for lk in links if lk[0] % 2 == 1],
              [lk for lk in links if wraps and lk[1] == 0]]
    return [p for p in phases if p]


def _round_trip(buf, rank: int, lo: int, peer: int, delay: float) -> None:
    import torch.distributed as dist

    # the slowed end (either one) holds each message for `delay` after it arrives
    if rank == lo:
        dist.send(buf, peer)
        dist.recv(buf, peer)
        time.sleep(delay)
    else:
        dist.recv(buf, peer)
        time.sleep(delay)
        dist.send(buf, peer)


def measure_ring(b: Bench, nbytes: int, rank: int, world: int) -> dict[tuple[int, int], float]:
    """Ping-pong GB/s (2·bytes per round trip) of each ring link this rank is on, measured at its lower end."""
    import torch.distributed as dist

    buf = b.torch.ones(nbytes // 4, device=b.device, dtype=b.torch.float32)
    out: dict[tuple[int, int], float] = {}
    plain = Bench(b.device, b.reps, None)
    for phase in ring_links(world):
        dist.barrier()
        mine = [lk for lk in phase if rank in lk]
        if not mine:
            continue
        lo, hi = mine[0]
        peer = hi if rank == lo else lo
        # NOTE: the slowed rank delays each reply by (factor - 1) plain round trips: a slow link or
        # NIC at its end, as its partner sees it (scaling its own times would feed back on itself).
        base = Bench(b.device, 1, None).median_s(lambda lo=lo, peer=peer: _round_trip(buf, rank, lo, peer, 0.0))
        delay = (b.slow - 1) * base if b.slow else 0.0
        secs = plain.median_s(lambda lo=lo, peer=peer, delay=delay: _round_trip(buf, rank, lo, peer, delay))
        if rank == lo:
            out[(lo, hi)] = 2 * buf.nbytes / secs / 1e9
    return out


def _take_turns(fn: Callable[[], dict[str, float]], rank: int, world: int, exclusive: bool) -> dict[str, float]:
    """`fn()` on every rank at once, or (exclusive) one rank after another.

    NOTE: CPU "devices" share cores and memory: measured together they measure the contention,
    and the noise flags healthy ranks. GPUs are measured together, as they will train.
    """
    import torch.distributed as dist

    if not exclusive:
        return fn()
    result: dict[str, float] = {}
    for turn in range(world):
        dist.barrier()
        if turn == rank:
            result = fn()
    return result


def _device_and_backend():
    import torch

    if torch.cuda.is_available():
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        return torch.device("cuda", local), "nccl", torch.bfloat16, torch.cuda.get_device_name(local)
    return torch.device("cpu"), "gloo", torch.float32, platform.processor() or platform.machine()


def worker(args: argparse.Namespace) -> list[dict[str, Any]] | None:
    """Measure this rank, gather on rank 0; rank 0 returns (and writes) every record."""
    import torch
    import torch.distributed as dist

    from clusterlab.torchtools.instrument import default_host

    device, backend, dtype, device_name = _device_and_backend()
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    if device.type == "cpu":
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // local_world))  # ranks share the cores
    kw = {"device_id": device} if backend == "nccl" else {}
    dist.init_process_group(backend, timeout=dt.timedelta(seconds=args.timeout_s), **kw)
    rank, world = dist.get_rank(), dist.get_world_size()
    gpu = device.type == "cuda"
    matmul_n = args.matmul_n or (8192 if gpu else 512)
    mem_bytes = (args.mem_mb or (1024 if gpu else 64)) << 20
    comm_bytes = (args.comm_mb or (256 if gpu else 8)) << 20
    slow = args.slow_factor if rank == args.slow_rank else None
    bench = Bench(device, args.reps, slow)
    local = _take_turns(lambda: measure_local(bench, matmul_n, mem_bytes, dtype), rank, world, exclusive=not gpu)
    mine: dict[str, Any] = {
        "preflight": "rank", "host": default_host(rank, int(os.environ.get("LOCAL_RANK", "0"))), "rank": rank,
        "world_size": world, "device": str(device), "device_name": device_name, "backend": backend,
        "dtype": str(dtype).removeprefix("torch."), "matmul_n": matmul_n, "mem_bytes": mem_bytes,
        "comm_bytes": comm_bytes, "reps": args.reps, "threads": torch.get_num_threads(),
        "exclusive": not gpu, **local,
        "allreduce_busbw_gbps": measure_allreduce(bench, comm_bytes),
    }
    if slow:
        mine["injected_slowdown"] = slow
    links = measure_ring(bench, comm_bytes, rank, world)
    mine["ts"] = dt.datetime.now(dt.UTC).isoformat(timespec="microseconds")
    gathered: list[Any] = [None] * world
    dist.all_gather_object(gathered, (mine, links))
    dist.barrier()
    dist.destroy_process_group()
    if rank != 0:
        return None
    records = assess([g[0] for g in gathered], {k: v for g in gathered for k, v in g[1].items()}, args.threshold,
                     comm_bytes)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "a") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)
    return records


# ---------------------------------------------------------------- assessment (pure)

def _below(value: float | None, median: float, threshold: float) -> bool:
    return value is not None and median > 0 and value < (1 - threshold) * median


def _reason(name: str, value: float, median: float) -> str:
    return f"{name} {value:.4g} is {100 * (1 - value / median):.0f}% below the fleet median {median:.4g}"


def assess(ranks: list[dict], links: dict[tuple[int, int], float], threshold: float,
           nbytes: int) -> list[dict[str, Any]]:
    """Rank, link and host records with `flagged` and `reason` against the fleet medians."""
    ranks = sorted(ranks, key=lambda r: r["rank"])
    host_of = {r["rank"]: r["host"] for r in ranks}
    reasons: dict[int, list[str]] = {r["rank"]: [] for r in ranks}
    for m in METRICS:
        med = statistics.median(r[m] for r in ranks)
        for r in ranks:
            if _below(r[m], med, threshold):
                reasons[r["rank"]].append(_reason(m, r[m], med))
    ts = max(r["ts"] for r in ranks)
    link_recs, slow_links = [], []
    link_med = statistics.median(links.values()) if links else 0.0
    for (lo, hi), gbps in sorted(links.items()):
        bad = _below(gbps, link_med, threshold)
        slow_links += [(lo, hi)] if bad else []
        link_recs.append({"preflight": "link", "ts": ts, "host": host_of[lo], "rank": lo, "peer_host": host_of[hi],
                          "peer_rank": hi, "comm_bytes": nbytes, "p2p_gbps": gbps, "flagged": bad,
                          "reason": _reason(f"p2p rank {lo}<->{hi}", gbps, link_med) if bad else ""})
    # A rank both of whose ring links are slow is the common end: the link's fault is at that rank.
    for r in ranks:
        mine = [lk for lk in slow_links if r["rank"] in lk]
        if len(mine) >= 2:
            reasons[r["rank"]].append(f"both ring links slow ({', '.join(f'{a}<->{b}' for a, b in mine)})")
    out = [{**r, "flagged": bool(reasons[r["rank"]]), "reason": "; ".join(reasons[r["rank"]])} for r in ranks]
    return out + link_recs + host_records(out, link_recs, ts)


def host_records(ranks: list[dict], links: list[dict], ts: str) -> list[dict[str, Any]]:
    """One verdict per host, written last (the relaunch planner reads a host's latest record)."""
    out = []
    flagged = {r["rank"] for r in ranks if r["flagged"]}
    # a slow link with a flagged rank at one end is explained by that rank, not suspect at the other
    unexplained = [lk for lk in links if lk["flagged"] and not {lk["rank"], lk["peer_rank"]} & flagged]
    for host in sorted({r["host"] for r in ranks}):
        bad = [f"rank {r['rank']}: {r['reason']}" for r in ranks if r["host"] == host and r["flagged"]]
        on_links = [lk["reason"] for lk in unexplained if host in (lk["host"], lk["peer_host"])]
        out.append({"preflight": "host", "ts": ts, "host": host, "ranks": sum(r["host"] == host for r in ranks),
                    "flagged": bool(bad), "suspect_link": bool(on_links) and not bad,
                    "reason": "; ".join(bad or on_links)})
    return out


# ---------------------------------------------------------------- output and the command

COLUMNS = ("host", "rank", "device", "matmul_tflops", "mem_gbps", "allreduce_busbw_gbps", "flagged", "reason")


def summary(records: list[dict]) -> dict[str, Any]:
    """The JSON document: one record per rank, the ring links and the host verdicts."""
    return {kind + "s": [r for r in records if r["preflight"] == kind] for kind in ("rank", "link", "host")}


def print_table(records: list[dict], echo: Callable[[str], None]) -> None:
    def cell(v: Any) -> str:
        return f"{v:.4g}" if isinstance(v, float) else "-" if v is None else str(v)

    ranks = [r for r in records if r["preflight"] == "rank"]
    if ranks:
        r0 = ranks[0]
        echo(f"# preflight: {len(ranks)} ranks, {r0['backend']} on {r0['device_name']} ({r0['dtype']}); matmul "
             f"{r0['matmul_n']}^2, copy {r0['mem_bytes'] >> 20} MiB, all-reduce/p2p {r0['comm_bytes'] >> 20} MiB, "
             f"median of {r0['reps']}")
    echo("  ".join(COLUMNS))
    for r in ranks:
        echo("  ".join(cell(r.get(c)) for c in COLUMNS))
    for lk in (r for r in records if r["preflight"] == "link"):
        flag = f"  FLAGGED {lk['reason']}" if lk["flagged"] else ""
        echo(f"link rank {lk['rank']} ({lk['host']}) <-> rank {lk['peer_rank']} ({lk['peer_host']}): "
             f"{lk['p2p_gbps']:.4g} GB/s{flag}")


def _emit(records: list[dict], print_as: str) -> None:
    if print_as == "json":
        click.echo(json.dumps(summary(records), indent=2))
    elif print_as == "table":
        print_table(records, click.echo)


def main(argv: list[str] | None = None) -> int:
    """Worker entry point (`python -m clusterlab.torchtools.preflight`, under torchrun)."""
    args = _parser().parse_args(argv)
    records = worker(args)
    if records is not None:
        _emit(records, args.print_as)
        return 1 if any(r["flagged"] for r in records) else 0
    return 0


def _inside_torchrun() -> bool:
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def _default_nproc() -> int:
    import torch

    return torch.cuda.device_count() or 2  # CPU: two processes, enough for a collective and a link


def records_dir() -> Path:
    """Where records go without --out: clusterlab's state folder ($XDG_STATE_HOME/clusterlab/preflight, by
    default ~/.local/state/clusterlab/preflight), never the working folder (a stray file in a checkout)."""
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "clusterlab" / "preflight"


@click.command("preflight")
@click.option("--nproc", type=int, default=None, help="Processes on this node (default: GPUs, else 2).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Records file for `clusterlab ingest` (default: preflight-<UTC time>.jsonl in "
                   "$XDG_STATE_HOME/clusterlab/preflight, ~/.local/state/clusterlab/preflight without it).")
@click.option("--threshold", type=float, default=0.2, show_default=True,
              help="Flag figures this fraction below the fleet median.")
@click.option("--reps", type=int, default=5, show_default=True, help="Timed repetitions (the median is kept).")
@click.option("--timeout", "timeout_s", type=float, default=600.0, show_default=True, help="Seconds for the whole run.")
@click.option("--slow-rank", type=int, default=None, hidden=True)  # tests: slow one process on purpose
@click.option("--slow-factor", type=float, default=4.0, hidden=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document and nothing else.")
def preflight(nproc, out, threshold, reps, timeout_s, slow_rank, slow_factor, as_json) -> None:
    """Node health check: matmul TFLOP/s, memory GB/s, all-reduce bus bandwidth and a ring of
    point-to-point links per rank; flags ranks and hosts below the fleet median. Launches itself
    under torchrun unless already inside one. Exit status 1 when something is flagged."""
    if importlib.util.find_spec("torch") is None:
        raise click.ClickException("preflight needs PyTorch: pip install 'clusterlab[torch]' (torch==2.13.0)")
    out = out or records_dir() / f"preflight-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}.jsonl"
    worker_args = ["--out", str(out), "--threshold", str(threshold), "--reps", str(reps)]
    if slow_rank is not None:
        worker_args += ["--slow-rank", str(slow_rank), "--slow-factor", str(slow_factor)]
    print_as = "json" if as_json else "table"
    if _inside_torchrun():  # launched by the user's own torchrun / srun: measure here
        sys.exit(main([*worker_args, "--print", print_as]))
    before = out.stat().st_size if out.exists() else 0
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc-per-node={nproc or _default_nproc()}", "-m", "clusterlab.torchtools.preflight", *worker_args,
            "--print", "none"]
    # NOTE: an argument list, never a shell; the workers' and torchrun's output goes to stderr so
    # that --json leaves stdout to the one document.
    try:
        sys.stderr.fileno()
        sink = sys.stderr
    except (AttributeError, OSError, ValueError):  # stderr is no file (a test runner's buffer): pass it on after
        sink = subprocess.PIPE
    try:
        res = subprocess.run(argv, stdout=sink, stderr=sink, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise click.ClickException(f"preflight did not finish in {timeout_s:g} s (a hung link or peer?)") from None
    if sink is subprocess.PIPE:
        click.echo((res.stdout or b"").decode(errors="replace") + (res.stderr or b"").decode(errors="replace"),
                   err=True, nl=False)
    records = _read_new(out, before)
    if not records:
        raise click.ClickException(f"preflight workers failed (exit status {res.returncode}); no records in {out}")
    _emit(records, print_as)
    if not as_json:
        click.echo(f"records: {out}  (clusterlab ingest {out})", err=True)
    sys.exit(1 if any(r["flagged"] for r in records) else 0)


def _read_new(path: Path, offset: int) -> list[dict]:
    """Records appended to `path` after `offset` bytes (the file may hold earlier runs)."""
    if not path.exists():
        return []
    with open(path, "rb") as f:
        f.seek(offset)
        return [json.loads(ln) for ln in f.read().decode().splitlines() if ln.strip()]


if __name__ == "__main__":
    sys.exit(main())

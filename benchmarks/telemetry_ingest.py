"""Telemetry ingest throughput (samples/s) against DuckDB's bare `read_csv` / `read_json` over the same files.

    python benchmarks/telemetry_ingest.py [--nodes 1024] [--hours 24] [--formats csv,json] [--dir /tmp/x]

The issue's size is one day of 15 s scrapes of 1,024 nodes x 8 GPUs (5,760 scrapes, 47 M GPU lines, 189 M
samples of 4 metrics): pass `--nodes 1024 --hours 24` on a machine with the disk for it (4 GB of CSV, 3.6 GB
of JSON). Per node it writes `nodes/<host>/nvidia-smi.log` (an `nvidia-smi --query-gpu ... --format=csv -l 15`
loop) and/or `nodes/<host>/query_range.txt` (Prometheus `query_range` responses, an hour a line, one series per
GPU and metric), then times `Lab.ingest` into a fresh database and a bare DuckDB read of the same files (rows counted,
nothing parsed or stored), and prints samples/s of each and their ratio, with the CPU seconds (user + system,
this process and its children) beside the wall time, the peak RSS so far and the load average: on a shared
machine the wall time alone says little. Run one format per process (`--formats csv`) for its own peak RSS.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

import duckdb
import polars as pl

from clusterlab import Lab

T0 = dt.datetime(2026, 11, 24, 0, 0, 0)
GPUS = 8
SCRAPE_S = 15
CSV_FIELDS = ("temperature.gpu", "power.draw", "clocks.sm", "clocks_throttle_reasons.active")
PROM = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")


def _scrapes(hours: float) -> int:
    return int(hours * 3600 // SCRAPE_S)


def write_csv(node_dir: Path, n: int, node: int) -> int:
    """One node's nvidia-smi loop; returns its samples (GPU lines x metrics)."""
    k = pl.int_range(0, n * GPUS, eager=True).alias("k")
    f = pl.DataFrame(k).with_columns(scrape=pl.col("k") // GPUS, gpu=pl.col("k") % GPUS)
    ts = (pl.lit(T0) + pl.duration(seconds=pl.col("scrape") * SCRAPE_S)).dt.strftime("%Y/%m/%d %H:%M:%S%.3f")
    bus = pl.col("gpu").replace_strict({g: f"{g * 16 + 24:02X}" for g in range(GPUS)}, return_dtype=pl.String)
    line = pl.format("{}, {}, 00000000:{}:00.0, {}, {} W, {} MHz, 0x{}", ts, "gpu", bus,
                     60 + (pl.col("k") + node) % 20, pl.lit("612.44"), 1980 - (pl.col("k") % 7) * 15,
                     pl.lit("0000000000000000"))
    header = "timestamp, index, pci.bus_id, temperature.gpu, power.draw [W], clocks.sm [MHz], " \
             "clocks_throttle_reasons.active\n"
    node_dir.mkdir(parents=True, exist_ok=True)
    (node_dir / "nvidia-smi.log").write_text(header + "\n".join(f.select(line.alias("l"))["l"].to_list()) + "\n")
    return n * GPUS * len(CSV_FIELDS)


def write_json(node_dir: Path, host: str, n: int) -> int:
    """One node's query_range responses, one a line, an hour each: a series per GPU and metric; returns its samples.

    A day in one response is 3.6 MB on one line, over the reader's 1 MiB line limit (skipped, nothing stored);
    a dump that asks an hour at a time writes lines of 150 kB."""
    start = int(T0.replace(tzinfo=dt.UTC).timestamp())
    window = 3600 // SCRAPE_S
    responses = []
    for first in range(0, n, window):
        k = pl.int_range(first, min(first + window, n), eager=True)
        t = (k * SCRAPE_S + start).cast(pl.String)
        # the points of a series are one vectorised string join
        pts = ",".join(pl.select(pl.format("[{},\"1980\"]", pl.lit(t)).alias("p"))["p"].to_list())
        series = [f'{{"metric":{{"__name__":"{name}","Hostname":"{host}","gpu":"{gpu}",'
                  f'"pci_bus_id":"00000000:{gpu * 16 + 24:02X}:00.0"}},"values":[{pts}]}}'
                  for name in PROM for gpu in range(GPUS)]
        responses.append('{"status":"success","data":{"resultType":"matrix","result":[' + ",".join(series) + "]}}")
    node_dir.mkdir(parents=True, exist_ok=True)
    (node_dir / "query_range.txt").write_text("\n".join(responses) + "\n")
    return n * GPUS * len(PROM)


def bare_csv(root: Path) -> float:
    t = time.perf_counter()
    duckdb.sql(f"SELECT count(*) FROM read_csv('{root}/nodes/*/nvidia-smi.log', header=true)").fetchall()
    return time.perf_counter() - t


def bare_json(root: Path) -> float:
    t = time.perf_counter()
    duckdb.sql(f"""SELECT count(*) FROM (SELECT unnest(r.values) FROM (SELECT unnest(data.result) AS r
                   FROM read_json('{root}/nodes/*/query_range.txt', maximum_object_size=1000000000)))""").fetchall()
    return time.perf_counter() - t


def timed_ingest(root: Path, name: str) -> tuple[float, int]:
    db = root / f"{name}.duckdb"
    t = time.perf_counter()
    with Lab(db) as lab:
        lab.ingest(*sorted(root.glob(f"nodes/*/{name}")), workers=1)
        stored = lab.con.execute("SELECT count(*) FROM telemetry").fetchall()[0][0]
    return time.perf_counter() - t, stored


def cpu_s() -> float:
    """User + system CPU seconds of this process and its (waited-for) children."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def peak_rss_mib() -> float:
    """The peak resident set so far of this process (or its largest child), MiB (Linux: ru_maxrss is KiB)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return max(own.ru_maxrss, kids.ru_maxrss) / 1024


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=32)
    ap.add_argument("--hours", type=float, default=2.0)
    ap.add_argument("--formats", default="csv,json")
    ap.add_argument("--dir", type=Path, default=None)
    a = ap.parse_args()
    root = a.dir or Path(tempfile.mkdtemp(prefix="clusterlab-telemetry-"))
    n = _scrapes(a.hours)
    print(f"{a.nodes} nodes x {GPUS} GPUs, {a.hours} h of {SCRAPE_S} s scrapes ({n} each), in {root}")
    try:
        for fmt in a.formats.split(","):
            samples = 0
            t, c = time.perf_counter(), cpu_s()
            for i in range(a.nodes):
                host = f"gpu-{i:04d}"
                node_dir = root / "nodes" / host
                samples += write_csv(node_dir, n, i) if fmt == "csv" else write_json(node_dir, host, n)
            name = "nvidia-smi.log" if fmt == "csv" else "query_range.txt"
            size = sum(f.stat().st_size for f in root.glob(f"nodes/*/{name}"))
            print(f"{fmt}: wrote {a.nodes:,} files, {size / 2**20:,.0f} MiB in {time.perf_counter() - t:.1f} s "
                  f"({cpu_s() - c:.1f} s CPU); {load()}", flush=True)
            c = cpu_s()
            took, stored = timed_ingest(root, name)
            took_cpu, rss = cpu_s() - c, peak_rss_mib()
            print(f"{fmt}: clusterlab {took:.2f} s ({took_cpu:.1f} s CPU), peak RSS {rss:,.0f} MiB; {load()}",
                  flush=True)
            c = cpu_s()
            bare = bare_csv(root) if fmt == "csv" else bare_json(root)
            bare_cpu = cpu_s() - c
            if stored != samples:  # a skipped file or line must not pass for speed
                raise SystemExit(f"{fmt}: {stored:,} rows stored of {samples:,} samples written: not a valid run")
            print(f"{fmt}: {samples:,} samples, {stored:,} rows stored; clusterlab {took:.2f} s = "
                  f"{samples / took:,.0f} samples/s; bare DuckDB read {bare:.2f} s ({bare_cpu:.1f} s CPU) = "
                  f"{samples / bare:,.0f} samples/s; ratio {took / bare:.1f}x wall, {took_cpu / bare_cpu:.1f}x CPU; "
                  f"{load()}", flush=True)
    finally:
        if a.dir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

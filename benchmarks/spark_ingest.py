"""Spark ingest (pyspark local mode, 1 and 2 executor slots) beside the DuckDB path, on the same corpus.

    python benchmarks/spark_ingest.py [--corpus fleet,nccl] [--nodes-per-cluster 8] [--days 0.5] [--nccl-mb 150]

Two corpora: `fleet`, a simulated fleet (`clusterlab.simulate`, 2 providers x 2 clusters: per-rank step
files, training logs, kernel logs; many rows per MB), and `nccl`, the mixed corpus of benchmarks/ingest.py
(NCCL INFO spam with a few Megatron, WARN and Xid lines; few rows per MB). Each is ingested into a fresh
DuckDB (the baseline: `Lab.ingest` with 1 and with 2 parsing processes) and into a fresh Parquet lake with
`clusterlab.scale.spark_ingest` on `local[1]` and `local[2]`. Prints MB/s and files/s of each, each time's ratio to
the DuckDB path with as many workers, the Spark session's start apart (a cluster pays it once per job), the
Spark path's phases (only `parse` runs on the executors; the rest is the driver's), and checks that every
lake holds the DuckDB store's rows (events, steps, rank_steps, checkpoints, by file and line).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

from clusterlab import Lab
from clusterlab.scale import spark_ingest
from clusterlab.simulator import simulate

sys.path.insert(0, str(Path(__file__).parent))
from ingest import make_corpus  # noqa: E402  (the sibling benchmark's NCCL-heavy corpus)

TABLES = ["events", "steps", "rank_steps", "checkpoints"]


def _rows(lab: Lab, table: str) -> pl.DataFrame:
    return lab.sql(f"SELECT f.path AS file_path, t.* EXCLUDE (file_id) FROM {table} t "
                   f"JOIN ingested_files f USING (file_id)").sort(pl.all())


def _line(label: str, seconds: float, mb: float, files: int, base: float | None) -> str:
    ratio = f"{seconds / base:6.2f}x the DuckDB path" if base else "(baseline)"
    return f"{label:<28} {seconds:8.1f} s {mb / seconds:8.2f} MB/s {files / seconds:8.1f} files/s  {ratio}"


def bench(name: str, corpus: Path, work: Path) -> None:
    """Time the DuckDB path and Spark local[1], local[2] on `corpus`; exit when a lake's rows differ."""
    files = [p for p in corpus.rglob("*") if p.is_file()]
    mb = sum(p.stat().st_size for p in files) / 1e6
    print(f"\n{name}: {len(files)} files, {mb:.1f} MB")
    base: dict[int, float] = {}
    for workers in (1, 2):
        with Lab(work / f"{name}-duckdb-{workers}.duckdb") as lab:
            t = time.perf_counter()
            lab.ingest(corpus, workers=workers)
            base[workers] = time.perf_counter() - t
        print(_line(f"duckdb, {workers} process(es)", base[workers], mb, len(files), None))
    for slots in (1, 2):
        t = time.perf_counter()
        spark = spark_ingest.spark_session(f"local[{slots}]", conf={"spark.ui.enabled": "false"})
        spark.sparkContext.setLogLevel("ERROR")
        started = time.perf_counter() - t
        out = work / f"{name}-lake-{slots}"
        phases: dict[str, float] = {}
        t = time.perf_counter()
        spark_ingest.ingest(spark, out, [corpus], timings=phases)
        took = time.perf_counter() - t
        t = time.perf_counter()
        spark_ingest.ingest(spark, out, [corpus])
        rerun = time.perf_counter() - t
        spark.stop()
        print(_line(f"spark local[{slots}]", took, mb, len(files), base[slots])
              + f"  (+{started:.1f} s session start; rerun, all unchanged: {rerun:.1f} s)\n" + " " * 29
              + "phases: " + ", ".join(f"{k} {v:.1f} s" for k, v in phases.items()))
        with Lab(work / f"{name}-duckdb-{slots}.duckdb", read_only=True) as db, Lab(lake=out) as lk:
            for table in TABLES:
                if not _rows(db, table).equals(_rows(lk, table)):
                    sys.exit(f"{name}, spark local[{slots}]: {table} differs from the DuckDB store")
    print(f"rows of {', '.join(TABLES)}: the same in both lakes as in the DuckDB stores")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="fleet,nccl", help="comma-separated: fleet, nccl")
    ap.add_argument("--nodes-per-cluster", type=int, default=8)
    ap.add_argument("--days", type=float, default=0.5)
    ap.add_argument("--nccl-mb", type=int, default=150)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--dir", type=Path, default=None, help="work folder (default: a temporary one, removed)")
    args = ap.parse_args()
    work = args.dir or Path(tempfile.mkdtemp(prefix="clusterlab-spark-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        for name in args.corpus.split(","):
            corpus = work / name
            if name == "fleet":
                simulate(corpus, seed=args.seed, nodes_per_cluster=args.nodes_per_cluster, days=args.days)
            elif name == "nccl":
                make_corpus(corpus, args.nccl_mb)
            else:
                sys.exit(f"--corpus {name!r}: fleet or nccl")
            bench(name, corpus, work)
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

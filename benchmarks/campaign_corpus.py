"""The campaign corpus of `fleet_ingest.py --corpus campaigns`: many seeds of the independent campaigns.

    python benchmarks/fleet_ingest.py --corpus campaigns [--seeds 4] [--scales 1,2,4] [--gzip as-written|none|all]

The campaigns (`shared/evidence/scenarios/campaign1.py`, `campaign2.py`) were written outside the team that writes
the collectors: NCCL at NCCL_DEBUG=INFO on every host, kernel journals and dmesg on every node, trainer output,
a few per-rank step files and the scheduler's records, some gzipped. Scale K holds seeds 1..K x --seeds of each
campaign, so the bytes grow with K. It prints, in one run: the whole ingest (wall and CPU seconds, MB/s, ms per
file, peak RSS), each kind's ingest on its own (its files hard-linked into a bundle of its own, so their paths,
hosts and runs are the ones they have in the whole), and the DuckDB line scan of the same files (read_csv as
lines, one regexp_matches with ten alternatives, 2 threads): the floor the ratio is taken against.
"""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

SCENARIOS = Path(__file__).resolve().parents[1] / ".." / "shared" / "evidence" / "scenarios"
CAMPAIGNS = ("campaign1.py", "campaign2.py")
# what the line scan looks for: ten alternatives of the kind the collectors' prefilters hold
SCAN_ALTERNATIVES = ("NCCL WARN", "Xid", "error", "fail", "timeout", "Traceback", "iteration", "segfault",
                     "NVRM", "Link down")
KIND_OF = (  # (a path fragment, the kind), first match wins
    ("/steps/", "step JSONL"), ("/timings/", "step JSONL"), ("/nccl/", "NCCL"), ("/nodes/", "kernel"),
    ("/scheduler/", "scheduler"), ("/runs/", "trainer"),
)
SHARED = (".toml",)  # inventory and run descriptions: in every kind's bundle, counted in none


def kind_of(rel: str) -> str | None:
    if rel.endswith(SHARED):
        return None
    return next((k for frag, k in KIND_OF if frag in "/" + rel), "other")


def make_campaigns(root: Path, seeds: range, gz: str) -> list[Path]:
    """Write each campaign at each seed under root/<campaign>-s<seed>/ (their bundles); returns the files."""
    for seed in seeds:
        for camp in CAMPAIGNS:
            out = root / f"{camp.removesuffix('.py')}-s{seed}"
            if (out / "bundle").is_dir():
                continue
            subprocess.run([sys.executable, str(SCENARIOS / camp), "--out", str(out), "--seed", str(seed)],
                           check=True, stdout=subprocess.DEVNULL)
            (out / "truth.json").unlink(missing_ok=True)  # the answer, not evidence
            if gz != "as-written":
                _recompress(out / "bundle", gz == "all")
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))


def campaign_files(root: Path, seeds: int, gz: str) -> list[Path]:
    """The files of the campaigns at seeds 1..`seeds` under root (written where missing): a corpus written for more
    seeds by an earlier run keeps its other bundles, which are not these."""
    files = make_campaigns(root, range(1, seeds + 1), gz)
    return [p for p in files if int(p.relative_to(root).parts[0].rsplit("-s", 1)[1]) <= seeds]


def _recompress(bundle: Path, want_gz: bool) -> None:
    for p in [p for p in bundle.rglob("*") if p.is_file() and not p.name.endswith(SHARED)]:
        if want_gz and p.suffix != ".gz":
            p.with_name(p.name + ".gz").write_bytes(gzip.compress(p.read_bytes(), mtime=0))
            p.unlink()
        elif not want_gz and p.suffix == ".gz":
            try:
                data = gzip.decompress(p.read_bytes())
            except (OSError, EOFError):  # a campaign's deliberately damaged member stays as it is
                continue
            p.with_name(p.name.removesuffix(".gz")).write_bytes(data)
            p.unlink()


def by_kind(root: Path, files: list[Path]) -> dict[str, list[Path]]:
    kinds: dict[str, list[Path]] = {}
    for p in files:
        k = kind_of(p.relative_to(root).as_posix())
        if k is not None:
            kinds.setdefault(k, []).append(p)
    return kinds


def kind_tree(root: Path, dest: Path, kind: str, files: list[Path]) -> Path:
    """The kind's files and the shared descriptions hard-linked under dest in the same layout."""
    shutil.rmtree(dest, ignore_errors=True)
    for p in [*files, *(q for q in root.rglob("*.toml") if q.is_file())]:
        to = dest / p.relative_to(root)
        to.parent.mkdir(parents=True, exist_ok=True)
        os.link(p, to)
    return dest


def line_scan(files: list[Path]) -> float:
    """Seconds DuckDB takes to read the files as lines and match one regex of ten alternatives (2 threads).

    NOTE: lines that are not UTF-8 are skipped by read_csv (ignore_errors): a few lines a campaign, which only
    flatters the floor."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET threads = 2")
    alt = "|".join(SCAN_ALTERNATIVES)
    t = time.perf_counter()
    con.execute(
        "SELECT count(*), count(*) FILTER (WHERE regexp_matches(line, ?)) FROM read_csv(?, "
        "columns = {'line': 'VARCHAR'}, header = false, delim = '\x01', quote = '', escape = '', "
        "auto_detect = false, ignore_errors = true, strict_mode = false, null_padding = true)",
        [alt, [str(p) for p in files]]).fetchall()
    return time.perf_counter() - t


def ingest(paths: list[Path], db: Path, workers: list[str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (workers included) and peak RSS (MiB) of one `clusterlab ingest`."""
    db.unlink(missing_ok=True)
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "clusterlab.cli", "--db", str(db), "ingest", *workers,
                             *map(str, paths)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # (the campaigns' deliberately damaged lines, reported)
    _, status, usage = os.wait4(proc.pid, 0)  # the usage of its reaped workers is folded into it
    took = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) not in (0, 2):
        raise RuntimeError(f"ingest failed with status {status}")
    db.unlink(missing_ok=True)
    return took, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024


def compile_package() -> None:
    """Write clusterlab's bytecode, as pip does for a package it installs: an editable install under
    PYTHONDONTWRITEBYTECODE=1 compiles every module it imports from source again in every process (~0.12 s of
    the start of an ingest and of each of its workers), which is no cost of the ingest."""
    import compileall

    import clusterlab

    compileall.compile_dir(Path(clusterlab.__file__).parent, quiet=1)


def _mb(files: list[Path]) -> float:
    return sum(p.stat().st_size for p in files) / 1e6


def run(work: Path, seeds: int, scales: list[int], gz: str, workers: list[str]) -> None:
    """Time the campaign corpus at each scale; per kind and against the line scan at the first."""
    corpus = work / f"campaigns-{gz}"
    corpus.mkdir(parents=True, exist_ok=True)
    compile_package()
    # a file no collector reads; the least of three (the first pays for a cold page cache)
    start = min(ingest([Path(__file__)], work / "start.duckdb", workers)[0] for _ in range(3))
    print(f"campaign corpus ({gz}); a process start with nothing to ingest: {start:.2f} s; "
          f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    rows = []
    for k, scale in enumerate(scales):
        root = corpus
        mine = campaign_files(root, scale * seeds, gz)
        bundles = sorted({root / p.relative_to(root).parts[0] / "bundle" for p in mine})
        mb = _mb(mine)
        took, cpu, rss = ingest(bundles, work / "campaigns.duckdb", workers)
        scan = line_scan(mine)
        rows.append((mb, took))
        print(f"x{scale}: {len(bundles)} bundles, {len(mine):,} files, {mb:,.0f} MB: ingest {took:6.1f} s wall, "
              f"{cpu:6.1f} s CPU, {mb / took:5.1f} MB/s, {took * 1000 / len(mine):5.2f} ms/file, peak RSS {rss:,} MiB"
              f"; line scan {scan:5.2f} s ({took / scan:4.1f}x); load {os.getloadavg()[0]:.1f}", flush=True)
        if k:
            continue
        for kind, kf in sorted(by_kind(root, mine).items()):
            tree = kind_tree(root, work / "kind-tree", kind, kf)
            kt, kc, _ = ingest(sorted(tree.glob("*/bundle")), work / "kind.duckdb", workers)
            kmb, ks = _mb(kf), line_scan(kf)
            print(f"  {kind:11s} {len(kf):6,} files {kmb:6.1f} MB  {kt:5.2f} s wall {kc:5.2f} s CPU  "
                  f"{kmb / kt:6.1f} MB/s ({kmb / max(kt - start, 1e-3):6.1f} past the start)  "
                  f"{kt * 1000 / len(kf):5.2f} ms/file  "
                  f"line scan {ks:5.2f} s ({kt / ks:4.1f}x)", flush=True)
        shutil.rmtree(work / "kind-tree", ignore_errors=True)
    if len(rows) > 1:
        (m0, t0), (m1, t1) = rows[0], rows[-1]
        print(f"linearity: {m1 / m0:.2f}x the bytes took {t1 / t0:.2f}x the time", flush=True)

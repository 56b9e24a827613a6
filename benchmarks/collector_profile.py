"""Where one kind of the campaign corpus spends its parse: each collector's parse, the prefilter and the row split.

    python benchmarks/collector_profile.py [--kinds trainer,scheduler] [--seeds 4] [--dir /tmp/clusterlab-fleet]

Takes the campaign corpus `fleet_ingest.py --corpus campaigns` writes (as written, seeds 1..--seeds of each
campaign; written here when missing), hard-links each kind's files into bundles of their own (as the benchmark's
per-kind rows do), ingests each in this process (`--workers 1`, so that every parse is seen) and prints the CPU
seconds of the whole ingest and of its parts: each collector's parse (calls, lines), the text groups' prefilter,
the split of a group's rows back to its files and their per-file records, and the structured groups. Then, per
collector called, the cost of one call on its first line with polars' compiled patterns thrown out (polars keeps
about 32: a real ingest compiles each collector's regexes again for every group), against the same call warm:
the fixed cost of a group that no grouping removes, and how much of it is regex compilation.
"""

from __future__ import annotations

import argparse
import collections
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import polars as pl

sys.path.insert(0, str(Path(__file__).parent))
from campaign_corpus import by_kind, campaign_files, kind_tree  # noqa: E402  (the corpus of fleet_ingest.py)

from clusterlab.collectors import all_collectors  # noqa: E402
from clusterlab.ingest import groups, groups_text  # noqa: E402
from clusterlab.lab import Lab  # noqa: E402


class Costs:
    """CPU seconds and calls per part, and each collector's first batch (to time a cold call on it)."""

    def __init__(self) -> None:
        self.cpu: collections.Counter[str] = collections.Counter()
        self.calls: collections.Counter[str] = collections.Counter()
        self.lines: collections.Counter[str] = collections.Counter()
        self.first: dict[str, tuple[ModuleType, pl.DataFrame, object]] = {}

    def timed(self, name: str, fn: Callable) -> Callable:
        def run(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            t = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.cpu[name] += time.process_time() - t
                self.calls[name] += 1
        return run


def _watch(costs: Costs, patch: list[tuple[object, str, object]]) -> None:
    for c in all_collectors():
        def parse(lines: pl.DataFrame, ctx: object, _c: ModuleType = c, _p: Callable = c.parse) -> object:
            costs.lines[_c.NAME] += lines.height
            costs.first.setdefault(_c.NAME, (_c, lines.head(1), ctx))
            return costs.timed(_c.NAME, _p)(lines, ctx)
        patch.append((c, "parse", c.parse))
        c.parse = parse
    for mod, name, label in ((groups_text, "split", "<prefilter>"), (groups_text, "split_rows", "<rows to files>"),
                             (groups_text, "_per_file", "<per-file records>"),
                             (groups, "parse_group", "<structured groups>")):
        patch.append((mod, name, getattr(mod, name)))
        setattr(mod, name, costs.timed(label, getattr(mod, name)))


def _cold(c: ModuleType, one: pl.DataFrame, ctx: object) -> tuple[float, float]:
    """(cold, warm) CPU seconds of one call on one line, the best of three."""
    probe = pl.DataFrame({"t": ["x"]})
    cold = warm = 1e9
    for _ in range(3):
        for i in range(80):  # other patterns push the collector's out of polars' cache of compiled ones
            probe.select(pl.col("t").str.contains(f"q{i}z{time.time_ns()}"))
        t = time.process_time()
        c.parse(one, ctx)
        cold = min(cold, time.process_time() - t)
        t = time.process_time()
        c.parse(one, ctx)
        warm = min(warm, time.process_time() - t)
    return cold, warm


def profile(tree: Path, work: Path) -> None:
    costs, patch = Costs(), []
    _watch(costs, patch)
    try:
        db = work / "profile.duckdb"
        db.unlink(missing_ok=True)
        t = time.process_time()
        with Lab(db) as lab:
            lab.ingest(*sorted(tree.glob("*/bundle")), workers=1)
        total = time.process_time() - t
    finally:
        for obj, name, fn in reversed(patch):
            setattr(obj, name, fn)
    print(f"  ingest in this process: {total:.2f} s CPU (the process start not included)")
    for name, cpu in costs.cpu.most_common():
        lines = f"{costs.lines[name]:8,} lines" if name in costs.lines else ""
        print(f"    {name:20s} {cpu:6.3f} s  {costs.calls[name]:4d} calls  {lines}")
    for name, (c, one, ctx) in sorted(costs.first.items()):
        cold, warm = _cold(c, one, ctx)
        print(f"    {name:20s} one call on one line: {cold * 1000:6.1f} ms cold, {warm * 1000:6.1f} ms warm")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kinds", default="trainer,scheduler", help="kinds of campaign_corpus.KIND_OF, or 'all'")
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/clusterlab-fleet"))
    args = ap.parse_args()
    root = args.dir / "campaigns-as-written"
    root.mkdir(parents=True, exist_ok=True)
    mine = campaign_files(root, args.seeds, "as-written")
    kinds = by_kind(root, mine)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for kind in sorted(kinds) if args.kinds == "all" else args.kinds.split(","):
            kf = kinds[kind]
            tree = kind_tree(root, work / "tree", kind, kf)
            mb = sum(p.stat().st_size for p in kf) / 1e6
            print(f"{kind}: {len(kf):,} files, {mb:.1f} MB (seeds 1-{args.seeds})", flush=True)
            profile(tree, work)
            shutil.rmtree(tree, ignore_errors=True)


if __name__ == "__main__":
    main()

"""The prefilter's two economies hold the rows: text groups that differ only in the context their collectors read
share one `split`, and the patterns run over the lines with their Perl classes in ASCII (`prefilter.ascii_classes`).

Syslog kernel logs (no year in their stamps) whose files were last written on different days take their year
from different days (`year_context`), so they form one group each; they are prefiltered once and each group is
still parsed with its own context: the rows are those of every file parsed alone. The ASCII patterns match the
same lines as the collectors' own on every real-format sample in `data_samples/` and on lines built to differ
only where Unicode and ASCII classes part (a non-ASCII letter beside a word boundary, a non-breaking space)."""

from __future__ import annotations

import datetime as dt
import os
from functools import cache
from pathlib import Path

import polars as pl
import pytest
from test_ingest_parallel import _ingest, _ingest_alone, _snapshot

from clusterlab.collectors import all_collectors
from clusterlab.ingest import groups as ingest_group
from clusterlab.ingest import groups_text as ingest_group_text
from clusterlab.ingest.prefilter import ascii_classes

SAMPLES = Path(__file__).parent.parent / "data_samples"
LINES = [
    "Dec 31 23:59:58 {host} kernel: [680111.646286] NVRM: Xid (PCI:0000:02:00): 79, pid=77123, name=python, "
    "GPU has fallen off the bus.",
    "Dec 31 23:59:59 {host} kernel: [680112.000001] mlx5_core 0000:0c:00.0: mlx5_ib0: Link down",
    "Jan  1 00:00:03 {host} kernel: [680115.100000] NVRM: Xid (PCI:0000:03:00): 48, pid=77123, name=python, "
    "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 0, "
    "subpartition 0.",
    "Jan  1 00:00:04 {host} CRON[88123]: (root) CMD (/usr/local/bin/gpu-health --quiet)",
]


def _write(root: Path, days: int) -> None:
    """Kernel logs of four nodes a day apart, across a year's end (their stamps' year is read from the files' times)."""
    for n in range(4):
        path = root / "nodes" / f"gpu-{n:03d}" / "kern.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(line.format(host=f"gpu-{n:03d}") for line in LINES) + "\n")
        when = dt.datetime(2027, 1, 1, 0, 5, tzinfo=dt.UTC) + dt.timedelta(days=days * n)
        os.utime(path, (when.timestamp(), when.timestamp()))


def test_groups_apart_by_context_share_one_prefilter_and_keep_their_rows(tmp_path: Path) -> None:
    _write(tmp_path, days=200)
    alone = _ingest_alone(tmp_path / "alone.duckdb", tmp_path / "nodes")
    splits: list[int] = []
    groups: list[int] = []
    with pytest.MonkeyPatch.context() as m:
        real_split, real_group = ingest_group_text.split, ingest_group_text.parse_text_group
        m.setattr(ingest_group_text, "split", lambda frame, *a: splits.append(frame.height) or real_split(frame, *a))
        m.setattr(ingest_group, "parse_text_group",
                  lambda items, chosen, *a: groups.append(len(items)) or real_group(items, chosen, *a))
        grouped = _ingest(tmp_path / "grouped.duckdb", tmp_path / "nodes")
    assert len(groups) >= 2, groups  # the trap is live: the files' contexts differ
    assert splits == [4 * len(LINES)]  # one prefilter for all of them
    assert grouped == alone
    snap = _snapshot(tmp_path / "grouped.duckdb")
    assert snap == _snapshot(tmp_path / "alone.duckdb")
    assert {r[0].split("/")[-2] for r in snap["events"]} == {f"gpu-{n:03d}" for n in range(4)}


def test_ascii_classes_rewrite() -> None:
    assert ascii_classes(r"\d+\s*[\w.-]+\b") == r"[0-9]+[\t\n\x0B\x0C\r ]*[0-9A-Za-z_.-]+(?-u:\b)"
    assert ascii_classes(r"[^\d\]x]\\d") == r"[^0-9\]x]\\d"  # an escaped backslash then a letter stays
    assert ascii_classes(r"[\W_]x\S\B") == r"[[^0-9A-Za-z_]_]x[^\t\n\x0B\x0C\r ](?-u:\B)"
    assert ascii_classes(r"[]a]\w\pL\x{41}") == r"[]a][0-9A-Za-z_]\pL\x{41}"


@cache
def _sample_lines() -> pl.Series:
    texts = []
    for p in sorted(SAMPLES.rglob("*")):
        if p.is_file() and p.suffix not in {".gz", ".duckdb", ".png"} and p.stat().st_size < 2_000_000:
            try:
                texts += p.read_text().splitlines()
            except UnicodeDecodeError:
                continue
    # where the two kinds of class part: a letter or digit that is not ASCII beside a pattern's literal
    texts += ["NCCL WARN é", "Xid ٣", "éval loss: 2.5", "NVRM:\u00a0Xid (PCI:0000:02:00): 79",
              "kernel:\u2003Out of memory"]
    return pl.Series("text", texts, dtype=pl.String)


@pytest.mark.parametrize("collector", [c for c in all_collectors() if getattr(c, "PATTERN", None)],
                         ids=lambda c: c.NAME)
def test_ascii_patterns_match_the_lines_of_every_sample(collector) -> None:
    lines = _sample_lines().to_frame()
    assert lines.height > 5_000
    own = lines.select(pl.col("text").str.contains(collector.PATTERN)).to_series()
    ascii_ = lines.select(pl.col("text").str.contains(ascii_classes(collector.PATTERN))).to_series()
    differ = lines.filter(own != ascii_)["text"].to_list()
    # the samples are real formats: ASCII wherever a class stands; only the built lines may part
    assert all(not t.isascii() for t in differ), differ[:5]

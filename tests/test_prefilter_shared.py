"""Text groups share what does not depend on their files' context: files whose kernel logs need different boot
times are parsed in groups apart and prefiltered in one `split`; files whose yearless stamps take different years
are parsed in one group, each line dated by its own file's year (`_base.YEAR_COLUMNS`); and the prefilter's
patterns run with their Perl classes in ASCII (`collectors._ascii`). Each time the rows are those of every
file parsed alone.

The ASCII patterns match the same lines as the collectors' own on every real-format sample in `data_samples/`,
and differ only on lines built where Unicode and ASCII classes part (a non-ASCII letter or blank)."""

from __future__ import annotations

import datetime as dt
import os
from functools import cache
from pathlib import Path

import polars as pl
import pytest
from test_ingest_parallel import _ingest, _ingest_alone, _snapshot

from clusterlab import Lab
from clusterlab.collectors import all_collectors
from clusterlab.collectors._ascii import ascii_classes
from clusterlab.ingest import groups as ingest_group
from clusterlab.ingest import groups_text as ingest_group_text

SAMPLES = Path(__file__).parent.parent / "data_samples"
# syslog lines across a year's end: no year of their own
SYSLOG = [
    "Dec 31 23:59:58 {host} kernel: [680111.646286] NVRM: Xid (PCI:0000:02:00): 79, pid=77123, name=python, "
    "GPU has fallen off the bus.",
    "Jan  1 00:00:03 {host} kernel: [680115.100000] NVRM: Xid (PCI:0000:03:00): 48, pid=77123, name=python, "
    "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 0, "
    "subpartition 0.",
    "Jan  1 00:00:04 {host} CRON[88123]: (root) CMD (/usr/local/bin/gpu-health --quiet)",
]
# raw dmesg: seconds since boot, dated by the node's boot_time file
RAW = ["[ 4242.000100] NVRM: Xid (PCI:0000:1b:00): 79, pid=1, name=python3, GPU has fallen off the bus.",
       "[ 4243.500000] mlx5_core 0000:0c:00.0: mlx5_ib0: Link down"]


def _spied(m: pytest.MonkeyPatch) -> tuple[list[int], list[int]]:
    """(the lines of each prefilter's split, the files of each group parsed) of the ingests under `m`."""
    splits: list[int] = []
    groups: list[int] = []
    real_split, real_group = ingest_group_text.split, ingest_group_text.parse_text_group
    m.setattr(ingest_group_text, "split", lambda frame, *a: splits.append(frame.height) or real_split(frame, *a))
    m.setattr(ingest_group, "parse_text_group",
              lambda items, chosen, *a: groups.append(len(items)) or real_group(items, chosen, *a))
    return splits, groups


def test_groups_apart_by_boot_time_share_one_prefilter(tmp_path: Path) -> None:
    for n in range(4):
        node = tmp_path / "nodes" / f"gpu-{n:03d}"
        node.mkdir(parents=True)
        (node / "dmesg.log").write_text("\n".join(RAW) + "\n")
        (node / "boot_time").write_text(f"2026-11-2{n}T06:00:00Z\n")
    alone = _ingest_alone(tmp_path / "alone.duckdb", tmp_path / "nodes")
    with pytest.MonkeyPatch.context() as m:
        splits, groups = _spied(m)
        grouped = _ingest(tmp_path / "grouped.duckdb", tmp_path / "nodes")
    assert groups == [1, 1, 1, 1]  # the trap is live: a group each, as their boot times differ
    assert splits == [4 * len(RAW)]  # one prefilter for all of them
    assert grouped == alone
    snap = _snapshot(tmp_path / "grouped.duckdb")
    assert snap == _snapshot(tmp_path / "alone.duckdb")
    assert len({r for r in snap["events"]}) == 8


# a format's lines across a year's end, no year in their stamps: (path under the tree, lines)
YEARLESS = {
    "kernel": ("nodes/gpu-00{n}/kern.log", [line.format(host="gpu-00{n}") for line in SYSLOG]),
    # torchrun's glog lines and an MMEngine guard's, in one trainer's output
    "trainer": ("runs/r{n}/attempt-1/train.log", [
        "W1231 23:59:58.530000 88120 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 88131 "
        "closing signal SIGTERM",
        "12/31 23:59:59 - mmengine - INFO - loss become infinite or NaN!",
        "W0101 00:00:02.100000 88120 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 88132 "
        "closing signal SIGTERM",
        "01/01 00:00:03 - mmengine - INFO - loss become infinite or NaN!"]),
    "slurmctld": ("scheduler/c{n}/slurmctld.log", [
        "[Dec 31 23:59:58.500] Node gpu-02{n} now responding",
        "[Jan 01 00:00:02.501] validate_node_specs: Node gpu-02{n} unexpectedly rebooted boot_time=1795705180 "
        "last response=1795704903"]),
}


@pytest.mark.parametrize("fmt", sorted(YEARLESS))
def test_files_of_other_years_are_one_group_each_line_of_its_own_year(fmt: str, tmp_path: Path) -> None:
    # written on New Year's day 2027, in July 2027 and in February 2028: each takes the year its write puts nearest
    where, lines = YEARLESS[fmt]
    for n, when in enumerate([dt.datetime(2027, 1, 1, 0, 5), dt.datetime(2027, 7, 20), dt.datetime(2028, 2, 5)]):
        path = tmp_path / "tree" / where.format(n=n)
        path.parent.mkdir(parents=True)
        path.write_text("\n".join(line.format(n=n) for line in lines) + "\n")
        stamp = when.replace(tzinfo=dt.UTC).timestamp()
        os.utime(path, (stamp, stamp))
    alone = _ingest_alone(tmp_path / "alone.duckdb", tmp_path / "tree")
    with pytest.MonkeyPatch.context() as m:
        splits, groups = _spied(m)
        grouped = _ingest(tmp_path / "grouped.duckdb", tmp_path / "tree")
    assert groups == [3] and len(splits) == 1
    assert grouped == alone
    assert _snapshot(tmp_path / "grouped.duckdb") == _snapshot(tmp_path / "alone.duckdb")
    with Lab(tmp_path / "grouped.duckdb", read_only=True) as lab:
        years = lab.sql("SELECT f.path, list(DISTINCT year(e.ts) ORDER BY year(e.ts)) FROM events e "
                        "JOIN ingested_files f USING (file_id) GROUP BY f.path ORDER BY f.path").rows()
    # the trap is live: the Dec 31 lines are of the year before each file's, the Jan 1 lines of its own
    assert [y for _, y in years] == [[2026, 2027], [2026, 2027], [2027, 2028]], years


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

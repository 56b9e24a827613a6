"""The literal prefilter (`ingest.prefilter`) selects exactly the lines each collector's PATTERN matches."""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl

from clusterlab.collectors import all_collectors
from clusterlab.ingest.prefilter import required, split

SAMPLES = Path(__file__).resolve().parents[1] / "data_samples"


def _lines() -> pl.DataFrame:
    texts: list[str] = []
    for p in sorted(SAMPLES.rglob("*")):
        if not p.is_file() or p.name.endswith(".expected.jsonl"):
            continue
        raw = p.read_bytes()
        try:
            raw = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
        except (OSError, EOFError):
            continue
        texts += raw.decode("utf-8", "replace").splitlines()
    # odd lines of our own: case, a Kelvin sign where (?i) reads a k, a literal cut across a line
    texts += ["nccl warn lower case", "NVRM: XID (PCI:0000:3b:00): 79", "\u212aernel: NVRM: Xid 48", "NCCL WA", "RN "]
    return pl.DataFrame({"text": texts}).with_row_index("line", 1).with_columns(pl.col("line").cast(pl.Int64))


def test_every_collector_gets_the_lines_its_pattern_matches() -> None:
    lines = _lines()
    chosen = [c for c in all_collectors() if getattr(c, "PATTERN", None)]
    sel, matched, rest = split(lines, chosen)
    assert rest is not None
    union = pl.Series([False] * lines.height)
    for c in chosen:
        want = lines.filter(pl.col("text").str.contains(c.PATTERN))
        assert sel[c.NAME].equals(want), c.NAME
        union = union | lines["text"].str.contains(c.PATTERN)
    assert matched.equals(lines.filter(union))
    assert rest.equals(lines.filter(~union))
    assert matched.height and rest.height


def test_required_literals() -> None:
    assert required(r"NCCL WARN |Got completion from peer ") == ("got completion from peer ", "nccl warn ")
    assert required(r"(?i:error)\s+\d+: (?:fatal|panic) x") == ("error",)  # the longest run wins
    assert required(r"\d+/\d+") is None  # nothing of 3 characters a match must hold
    assert required(r"abc|\d") is None  # a branch without a literal
    assert required(r"(unclosed") is None  # what Python cannot read is no prefilter

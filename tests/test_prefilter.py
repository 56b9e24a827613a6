"""The prefilter (`ingest.prefilter.split`) gives each collector exactly the lines its PATTERN matches."""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl

from clusterlab.collectors import all_collectors
from clusterlab.ingest.prefilter import split

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


def _line_based() -> list:
    """The collectors a text log goes through together (`parse.choose`: every one not EXCLUSIVE)."""
    return [c for c in all_collectors() if c.PATTERN and not getattr(c, "EXCLUSIVE", False)]


def test_every_collector_gets_the_lines_its_pattern_matches() -> None:
    lines = _lines()
    chosen = _line_based()
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
    one, alone, _ = split(lines, chosen[:1], rest=False)
    assert one[chosen[0].NAME].equals(alone)
    assert alone.equals(lines.filter(pl.col("text").str.contains(chosen[0].PATTERN)))


def test_dense_and_sparse_frames_give_the_same_lines(monkeypatch) -> None:
    """Where most lines match, the collectors that match many sampled lines run each over every line and the
    others' union after them: the same selection as through the union alone (none, some or all of them heavy)."""
    from clusterlab.ingest import prefilter

    lines = _lines()
    chosen = _line_based()
    monkeypatch.setattr(prefilter, "SAMPLE_LINES", 10)
    monkeypatch.setattr(prefilter, "DENSE", 2.0)  # never dense
    s1, m1, r1 = split(lines, chosen)
    assert r1 is not None
    monkeypatch.setattr(prefilter, "DENSE", -1.0)  # always dense
    for heavy in (2.0, 0.02, -1.0):  # no collector heavy, those over 2 % of the sample, every one
        monkeypatch.setattr(prefilter, "HEAVY_SHARE", heavy)
        s2, m2, r2 = split(lines, chosen)
        assert m1.equals(m2) and r2 is not None and r1.equals(r2), heavy
        assert all(s1[k].equals(s2[k]) for k in s1), heavy


def test_the_union_of_every_collector_is_scanned_in_parts_below_the_engines_cliff() -> None:
    """Past a compiled size the regex engine slows a hundredfold (13,005 characters of union: 13.6 s on a 22,000-line
    group that 12,898 scanned in 0.06 s); the union is built in parts, each of them one pattern or under the bar,
    together every pattern once."""
    from clusterlab.collectors._ascii import ascii_classes
    from clusterlab.ingest.prefilter import UNION_MAX_CHARS, unions

    chosen = _line_based()
    parts = unions(chosen)
    # (each pattern with its classes in ASCII: `test_prefilter_shared` holds that they read the same lines)
    mine = [ascii_classes(c.PATTERN) for c in chosen]
    assert sum(map(len, mine)) > UNION_MAX_CHARS  # the case the parts exist for
    assert len(parts) > 1
    singles = {f"(?:{p})" for p in mine}
    assert all(len(p) <= UNION_MAX_CHARS or p in singles for p in parts)
    assert "|".join(parts) == "|".join(f"(?:{p})" for p in mine)


def test_layered_resolution_gives_each_collector_its_lines(monkeypatch) -> None:
    """Past FEW_LINES matched lines, the collector most of a part's lines match takes the lines the others' union
    leaves (no other pattern runs over them); the selection is each PATTERN's own. Forced here on the samples with
    the lines repeated so that one collector dominates a part, and with every resolution layered."""
    from clusterlab.ingest import prefilter

    base = _lines()
    nccl = base.filter(pl.col("text").str.contains("NCCL INFO"))
    assert nccl.height > 5
    lines = pl.concat([base, *[nccl] * 20]).with_columns(line=pl.int_range(1, base.height + 20 * nccl.height + 1,
                                                                           dtype=pl.Int64))
    chosen = _line_based()
    monkeypatch.setattr(prefilter, "DENSE", 2.0)  # never dense: the union path
    for few in (0, 3, 50):
        monkeypatch.setattr(prefilter, "FEW_LINES", few)
        sel, matched, rest = split(lines, chosen)
        union = pl.Series([False] * lines.height)
        for c in chosen:
            assert sel[c.NAME].equals(lines.filter(pl.col("text").str.contains(c.PATTERN))), (few, c.NAME)
            union = union | lines["text"].str.contains(c.PATTERN)
        assert matched.equals(lines.filter(union)) and rest is not None and rest.equals(lines.filter(~union))

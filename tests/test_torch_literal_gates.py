"""The torch collector runs a kind's or a field's regex only where a line of the batch holds a literal it needs
(`_torch_literals.KIND_LITS`, `FIELD_LITS`): the rows are those of running every regex, on whole logs and on every
line alone."""

from __future__ import annotations

import tomllib
from pathlib import Path

import polars as pl
import pytest

from clusterlab.collectors import _torch_literals, torch_dist
from clusterlab.collectors._base import Context, Parsed

ROOT = Path(__file__).parent
LOGS = [p.read_text(errors="replace") for p in sorted((ROOT.parent / "data_samples" / "torch").glob("*.log"))]
LOGS += [c["text"] for name in ("pytorch.toml", "pytorch_beyond.toml")
         for c in tomllib.loads((ROOT / "real_excerpts" / name).read_text())["case"]]
LOGS += [c["text"] for c in tomllib.loads((ROOT / "format_variants" / "pytorch.toml").read_text()).get("case", [])
         if isinstance(c.get("text"), str)]


def _parse(lines: list[str]) -> Parsed:
    frame = pl.DataFrame({"line": range(1, len(lines) + 1), "text": lines},
                         schema={"line": pl.Int64, "text": pl.String})
    return torch_dist.parse(frame.filter(pl.col("text").str.contains(torch_dist.PATTERN)), Context(path="t.log"))


def _same(a: Parsed, b: Parsed) -> bool:
    return (a.tables.keys() == b.tables.keys() and all(a.tables[t].equals(b.tables[t]) for t in a.tables)
            and a.unparsed == b.unparsed and a.warnings == b.warnings)


class _Every(set):
    """Every literal found: each regex runs."""

    def isdisjoint(self, other: object) -> bool:
        return False


def test_gated_regexes_give_the_rows_of_every_regex() -> None:
    assert len(LOGS) > 60
    batches = [log.splitlines() for log in LOGS]
    # each line the collector reads, alone (where most regexes are left out), once
    read = pl.Series([ln for log in LOGS for ln in log.splitlines()]).unique(maintain_order=True)
    batches += [[ln] for ln in read.filter(read.str.contains(torch_dist.PATTERN)).to_list()]
    gated = [_parse(b) for b in batches]
    with pytest.MonkeyPatch.context() as m:
        m.setattr(torch_dist, "_present", lambda f: _Every())
        every = [_parse(b) for b in batches]
    assert sum("events" in p.tables for p in every) > 200
    assert [i for i, (a, b) in enumerate(zip(gated, every, strict=True)) if not _same(a, b)] == []


def test_every_kind_names_its_literals() -> None:
    assert set(_torch_literals.KIND_LITS) == {k for k, *_ in torch_dist._KINDS}

"""Step files read together (`step_jsonl.parse_whole`) give each file the rows and unparsed lines that reading it
line by line gives, whatever harm a file holds: Python's NaN / Infinity tokens, blank or white lines, junk, a cut
last line, ISO times beside epoch ones. A blank or white line costs no second read (the reader skips it: its file's
records are numbered by its other lines), and a NaN token is found by a scan once a read refuses, not by halving the
group down to its file."""

from __future__ import annotations

import json

import polars as pl
import pytest

from clusterlab.collectors import step_jsonl
from clusterlab.collectors._base import Context

BASE = 1 << 32


def _rec(rank: int, step: int, ts: object = None, **more: object) -> str:
    ts = 1795824000 + step * 2.5 if ts is None else ts
    return json.dumps({"ts": ts, "rank": rank, "host": f"n{rank:03d}", "step": step, "step_s": 2.5, "loss": 2.0,
                       **more})


def _file(rank: int, harm: str | None) -> bytes:
    lines = [_rec(rank, s) for s in range(1, 9)]
    if harm == "nan":
        lines[3] = lines[3].replace('"loss": 2.0', '"loss": NaN')
        lines[5] = lines[5].replace('"step_s": 2.5', '"step_s": -Infinity')
    elif harm == "blank":
        lines.insert(4, "")
    elif harm == "lead":
        lines.insert(0, "")
    elif harm == "white":
        lines.insert(2, "   \t")
    elif harm == "junk":
        lines.insert(6, "WARNING: not json")
    elif harm == "iso":
        lines = [_rec(rank, s, ts=f"2026-11-28T00:00:{s:02d}.5Z") for s in range(1, 9)]
    elif harm == "cut":
        lines[-1] = lines[-1][:30]
    return ("\n".join(lines) + "\n").encode()


def _alone(text: bytes, i: int) -> step_jsonl.Parsed:
    lines = text.decode().removesuffix("\n").split("\n")
    return step_jsonl.parse(pl.DataFrame({"line": pl.int_range(1, len(lines) + 1, dtype=pl.Int64, eager=True)
                                          + i * BASE, "text": lines}), Context(path=""))


def _same(got: step_jsonl.Parsed, want: list[step_jsonl.Parsed]) -> None:
    for table in ("rank_steps", "events"):
        parts = [w.tables[table] for w in want if table in w.tables]
        if not parts:
            assert table not in got.tables or got.tables[table].height == 0
            continue
        expect = pl.concat(parts).sort("line")
        assert got.tables[table].sort("line").equals(expect), table
    bad = [w.unparsed_lines for w in want if w.unparsed_lines is not None and len(w.unparsed_lines)]
    expect_bad = pl.concat(bad).sort().to_list() if bad else []
    assert (got.unparsed_lines.to_list() if got.unparsed_lines is not None else []) == expect_bad
    assert got.unparsed == sum(w.unparsed for w in want)


HARMS = [None, "nan", None, "blank", None, None, "lead", "white", None, "junk", None, "iso", None, "cut", None]


@pytest.mark.parametrize("order", [HARMS, HARMS[::-1], [None] * 6 + ["blank"] + [None] * 6, ["nan"] * 3])
def test_files_read_together_get_the_rows_they_get_alone(order: list[str | None]) -> None:
    texts = [_file(r, h) for r, h in enumerate(order)]
    got = step_jsonl.parse_whole(texts, BASE)
    assert got is not None
    _same(got, [_alone(t, i) for i, t in enumerate(texts)])
    for t in texts:  # and one file is the group of one it is when ingested alone
        one = step_jsonl.parse_whole([t], BASE)
        assert one is not None
        _same(one, [_alone(t, 0)])
    assert got.tables["rank_steps"].height > 0


@pytest.mark.parametrize("harm", ["blank", "lead", "white"])
def test_a_blank_line_costs_no_second_read(monkeypatch: pytest.MonkeyPatch, harm: str) -> None:
    texts = [_file(r, harm if r in (3, 20) else None) for r in range(40)]
    reads = []
    whole = step_jsonl._whole
    monkeypatch.setattr(step_jsonl, "_whole", lambda ts, *a: reads.append(len(ts)) or whole(ts, *a))
    got = step_jsonl.parse_whole(texts, BASE)
    assert got is not None
    _same(got, [_alone(t, i) for i, t in enumerate(texts)])
    assert reads == [40], reads  # one read of all: the blank lines' files numbered by their other lines


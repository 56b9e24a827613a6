"""Step files read together (`step_jsonl.parse_whole`) give each file the rows and unparsed lines that reading it
line by line gives, whatever harm a file holds: Python's NaN / Infinity tokens, blank or white lines, junk, a cut
last line, ISO times beside epoch ones. A blank or white line costs no second read (the reader skips it: its file's
records are numbered by its other lines), and a NaN token is found by a scan once a read refuses, not by halving the
group down to its file."""

from __future__ import annotations

import json

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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




# Harms drawn into any file at any line, several to a file: blank and white lines of every shape, an indented or
# space-ended record, junk, bytes that are no text, a NaN token, an ISO time among epoch ones, a cut last line.
DRAWN = ["blank", "blanks", "white", "tab", "end", "indent", "spaces after", "junk", "bytes", "nan", "iso", "cut"]


def _harmed(rank: int, harms: list[tuple[str, int]]) -> bytes:
    lines = [_rec(rank, s) for s in range(1, 9)]
    for harm, at in harms:
        i = at % len(lines)
        if harm in ("blank", "blanks", "white", "tab", "junk", "bytes"):
            new = {"white": " \t ", "tab": "\t", "junk": "WARNING: not json", "bytes": "\x00\x01\x7f"}.get(harm, "")
            lines[i:i] = [new] * (2 if harm == "blanks" else 1)
        elif harm == "end":
            lines.append("")
        elif harm == "indent":
            lines[i] = "  " + lines[i]
        elif harm == "spaces after":
            lines[i] += "   "
        elif harm == "nan":
            lines[i] = lines[i].replace('"loss": 2.0', '"loss": NaN')
        elif harm == "iso":
            lines[i] = _rec(rank, 99, ts="2026-11-28T00:00:01.5Z")
        else:  # cut
            lines[-1] = lines[-1][:25]
    return ("\n".join(lines) + "\n").encode()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(DRAWN), st.integers(0, 20)), max_size=3), min_size=1, max_size=25))
def test_drawn_harms_leave_every_file_the_rows_it_gets_alone(harms: list[list[tuple[str, int]]]) -> None:
    texts = [_harmed(r, h) for r, h in enumerate(harms)]
    got = step_jsonl.parse_whole(texts, BASE)
    if got is not None:  # (None: the engine reads every line one by one, as alone)
        _same(got, [_alone(t, i) for i, t in enumerate(texts)])

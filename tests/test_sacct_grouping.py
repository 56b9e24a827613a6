"""sacct dumps parsed together (one call per header, zone and run) store exactly the rows of each parsed alone."""

from __future__ import annotations

import datetime as dt
import gzip
from pathlib import Path

import pytest
from test_ingest_parallel import _ingest, _ingest_alone, _snapshot

from clusterlab.ingest import groups as ingest_group

SAMPLES = Path(__file__).parent.parent / "data_samples" / "sacct"
HEAD = "JobID|JobName|State|ExitCode|Start|End|Elapsed|NNodes|NodeList|AllocTRES|Reason"
OTHER = "JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode"
# The traps, each a dump under the same header as after_restart.psv and final_states.psv:
DUMPS = {
    # a failed job without times after a dated one: alone, its event takes the time of the line before it (a
    # jobs row, not an event); grouped, never the time of another file's line
    "undated.psv": [HEAD, "7|warmup|COMPLETED|0:0|2026-12-03T09:00:00|2026-12-03T09:10:00|00:10:00|1|node1||None",
                    "8|train|NODE_FAIL|0:0|Unknown|Unknown|00:00:00|2|node[1-2]||None"],
    # a failed job without times first in its file: alone it has no line before it
    "first_undated.psv": [HEAD, "9|train|NODE_FAIL|0:0|Unknown|Unknown|00:00:00|2|node[3-4]||None",
                          "10|eval|TIMEOUT|0:0|2026-12-03T09:20:00|2026-12-03T09:30:00|00:10:00|1|node3||None"],
    # a second --format below the first: its rows are read under their own header, the table stays in line order
    "two_formats.psv": [HEAD, "11|a|FAILED|1:0|2026-12-03T10:00:00|2026-12-03T10:05:00|00:05:00|1|node5||None",
                        OTHER, "12|b|main|root|4|TIMEOUT|0:0",
                        HEAD, "13|c|OUT_OF_MEMORY|0:125|2026-12-03T10:10:00|2026-12-03T10:15:00|00:05:00|1|n6||None"],
}
# a row that does not fit its header warns: its group (another header's) is parsed file by file
BAD = [OTHER, "14|d|main|root|4|COMPLETED|0:0", "15|e|main|root|COMPLETED|0:0"]


def _write(root: Path) -> Path:
    root.mkdir(parents=True)
    for p in SAMPLES.glob("*.psv"):
        (root / p.name).write_bytes(p.read_bytes())
    (root / "trailing.txt").write_bytes((SAMPLES / "duplicates_trailing_pipe.txt").read_bytes())
    for name, lines in DUMPS.items():
        (root / name).write_text("\n".join(lines) + "\n")
    (root / "crlf.psv").write_bytes(b"\r\n".join(ln.encode() for ln in DUMPS["undated.psv"]))  # no last newline
    (root / "again.psv.gz").write_bytes(gzip.compress((SAMPLES / "final_states.psv").read_bytes()))
    (root / "bad.psv").write_text("\n".join(BAD) + "\n")
    (root / "default_again.psv").write_bytes((SAMPLES / "default_format.psv").read_bytes())
    return root


def _grouped(tmp_path: Path, root: Path) -> tuple[list, list[tuple[int, int]]]:
    groups: list[tuple[int, int]] = []
    with pytest.MonkeyPatch.context() as m:
        real = ingest_group.parse_group
        m.setattr(ingest_group, "parse_group",
                  lambda items, c: groups.append((len(items), len(rest := real(items, c)))) or rest)
        got = _ingest(tmp_path / "grouped.duckdb", root)
    return got, sorted(groups)


def test_sacct_dumps_grouped_store_the_rows_of_each_alone(tmp_path: Path) -> None:
    root = _write(tmp_path / "logs" / "scheduler")
    alone = _ingest_alone(tmp_path / "alone.duckdb", root)
    grouped, groups = _grouped(tmp_path, root)
    assert grouped == alone
    snap = _snapshot(tmp_path / "grouped.duckdb")
    assert snap == _snapshot(tmp_path / "alone.duckdb")
    # after_restart, final_states, its gzipped copy, the three traps and the CRLF one: one call; the other header's
    # three dumps, one of them warned about, sent back whole; the other headers alone in their group of one
    assert (7, 0) in groups and (3, 3) in groups
    assert any("bad.psv:3: 1 sacct rows that do not fit the header" in m for r in grouped for m in r[4])
    # (columns after the file: source, run, attempt, line, ts)
    ts = {(r[0].rsplit("/", 1)[1], r[4]): r[5] for r in snap["events"] if "undated" in r[0] or "crlf" in r[0]}
    assert ts == {("undated.psv", 3): dt.datetime(2026, 12, 3, 9, 10), ("crlf.psv", 3): dt.datetime(2026, 12, 3, 9, 10),
                  ("first_undated.psv", 2): dt.datetime(2026, 12, 3, 9, 30),
                  ("first_undated.psv", 3): dt.datetime(2026, 12, 3, 9, 30)}


def test_the_prompt_test_without_counted_repeats_reads_lines_as_the_bounded_pattern() -> None:
    """`_prompt` (runs captured, their lengths checked) says what `_PROMPT` ({1,200} and {0,200} repeats) says."""
    import random

    import polars as pl

    from clusterlab.collectors import sacct

    lines = ["$ sacct -j 1", "[me@login1 ~]$ sacct -j 4711", "a" * 200 + "$ sacct", "a" * 201 + "$ sacct",
             "[" + "b" * 200 + "]$ sacct", "[" + "b" * 201 + "]$ sacct", "é" * 200 + "> sacct", "é" * 201 + "> sacct",
             "[]$ sacct", "[a]]$ sacct", "x y$ sacct", "$ sacctmgr", " " * 300 + "$ sacct", "JobID|State"]
    rng = random.Random(3)
    lines += ["".join(rng.choice("a[]$ #%>é.@:~/-\tsct\u00a0") for _ in range(rng.randint(0, 30)))
              + rng.choice(["sacct", " sacct", "$ sacct", ""]) for _ in range(3000)]
    frame = pl.DataFrame({"t": lines})
    bounded = frame.select(pl.col("t").str.contains(sacct._PROMPT))["t"]
    assert bounded.sum() > 20
    assert bounded.to_list() == frame.select(sacct._prompt(pl.col("t")))["t"].to_list()

"""A time printed without its year takes the year the file was last written, and the year before where that would
put it after the write; a time that prints its year keeps it, whatever the file's time says."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from clusterlab import Lab

XID = "{md} 23:59:00 gn17 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, GPU has fallen off the bus.\n"


def _written(path: Path, text: str, when: dt.datetime) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    stamp = when.replace(tzinfo=dt.UTC).timestamp()
    os.utime(path, (stamp, stamp))
    return path


def _times(lab: Lab, table: str) -> list[dt.datetime]:
    return [r[0] for r in lab.con.execute(f"SELECT ts FROM {table} ORDER BY file_id, line").fetchall()]


def test_a_december_syslog_line_in_a_file_written_in_january_is_of_the_year_before(tmp_path: Path) -> None:
    jan = _written(tmp_path / "a" / "kern.log", XID.format(md="Dec 31"), dt.datetime(2027, 1, 2, 8))
    soon = _written(tmp_path / "b" / "kern.log", XID.format(md="Dec 31").replace("4242", "4243"),
                    dt.datetime(2027, 1, 1, 2))
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(jan, host="gn17", run="r")
        lab.ingest(soon, host="gn17", run="r")
        assert _times(lab, "events") == [dt.datetime(2026, 12, 31, 23, 59)] * 2


def test_a_line_that_prints_its_year_keeps_it_in_a_file_written_before_it(tmp_path: Path) -> None:
    # a clock ahead, a copy whose time was reset, a bundle whose tool set every file's time to the epoch
    log = ("[titan] 2026-12-20 10:00:00,123 - root - INFO - step: 10  loss:  2.1000  grad_norm:  0.5000  "
           "memory: 30.00GiB(40.00%)  tps: 1,000  tflops: 100.00  mfu: 30.00%\n")
    early = _written(tmp_path / "early" / "train.log", log, dt.datetime(2026, 12, 6, 9))
    epoch = _written(tmp_path / "epoch" / "train.log", log.replace("step: 10", "step: 11"),
                     dt.datetime(1970, 1, 1, 0, 0, 1))
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(early, host="gn01", run="r1")
        lab.ingest(epoch, host="gn01", run="r2")
        assert _times(lab, "steps") == [dt.datetime(2026, 12, 20, 10, 0, 0, 123000)] * 2


def test_yearless_lines_of_many_files_parsed_together_are_dated_as_alone(tmp_path: Path) -> None:
    # a fleet's kernel logs parsed in one group: each file's lines rolled back by its own write time
    days = [dt.datetime(2027, 1, 3), dt.datetime(2026, 12, 31, 23, 0), dt.datetime(2027, 1, 1, 1)]
    files = [_written(tmp_path / "nodes" / f"gn{i:02d}" / "kern.log",
                      "".join(XID.format(md=md).replace("gn17", f"gn{i:02d}") for md in ("Dec 30", "Jan  1")), d)
             for i, d in enumerate(days * 4)]
    with Lab(tmp_path / "grouped.duckdb") as lab:
        lab.ingest(tmp_path / "nodes", run="r", workers=1)
        grouped = _times(lab, "events")
    alone = []
    for i, f in enumerate(files):
        with Lab(tmp_path / f"alone{i}.duckdb") as lab:
            lab.ingest(f, run="r", host=f"gn{i:02d}")
            alone += _times(lab, "events")
    assert sorted(grouped) == sorted(alone)
    # written in January 2027: Dec 30 of the year before, Jan 1 of its own; written on 31 December 2026: both of
    # 2026 (its Jan 1 line is from the January before)
    assert set(alone) == {dt.datetime(2026, 12, 30, 23, 59), dt.datetime(2027, 1, 1, 23, 59),
                          dt.datetime(2026, 1, 1, 23, 59)}

"""Bad input gets one clear line naming the file (and line), exit status 2, and loses nothing."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from clusterlab import Lab
from clusterlab.cli import main
from conftest import SAMPLES

GOOD = ("2026-11-24T08:00:{s:02d},000000+00:00 NVRM: Xid (PCI:0000:5d:00): 79, pid=1234, name=python, "
        "GPU has fallen off the bus.\n")


def good_lines(n: int) -> str:
    return "".join(GOOD.format(s=i) for i in range(n))


@pytest.fixture
def db_with_good(tmp_path: Path) -> Path:
    db = tmp_path / "t.duckdb"
    good = tmp_path / "good" / "dmesg.log"
    good.parent.mkdir()
    good.write_text(good_lines(3))
    res = CliRunner().invoke(main, ["--db", str(db), "ingest", "--host", "east-003", str(good)])
    assert res.exit_code == 0, res.output
    return db


def ingest(db: Path, *paths: Path) -> tuple[int, list[str]]:
    res = CliRunner().invoke(main, ["--db", str(db), "ingest", *map(str, paths)])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    return res.exit_code, errors


def event_count(db: Path) -> int:
    with Lab(db) as lab:
        return lab.sql("SELECT count(*) AS n FROM events")["n"][0]


def test_random_bytes_named_in_one_line(db_with_good: Path, tmp_path: Path) -> None:
    bad = tmp_path / "random.bin"
    bad.write_bytes(bytes(range(256)) * 64 + os.urandom(4096))
    code, errors = ingest(db_with_good, bad)
    assert code == 2
    assert len(errors) == 1 and str(bad.name) in errors[0] and "binary" in errors[0]
    assert event_count(db_with_good) == 3


def test_truncated_gzip_keeps_what_is_readable_and_names_the_last_good_line(db_with_good: Path,
                                                                         tmp_path: Path) -> None:
    whole = gzip.compress(good_lines(50_000).encode(), mtime=0)
    bad = tmp_path / "dmesg.log.gz"
    bad.write_bytes(whole[: len(whole) // 2])
    code, errors = ingest(db_with_good, bad)
    assert code == 2 and len(errors) == 1, errors
    where, _, why = errors[0].removeprefix("error: ").partition(": ")
    name, _, last = where.partition(":")
    assert name == "dmesg.log.gz" and "gzip" in why and int(last) > 20_000
    with Lab(db_with_good) as lab:
        lines = lab.sql("SELECT line FROM events WHERE file_id = 2 ORDER BY line")["line"].to_list()
    assert lines == list(range(1, int(last) + 1))  # every line before the damage, and the good file kept


def test_gzip_with_a_garbage_body_in_a_directory_is_named(db_with_good: Path, tmp_path: Path) -> None:
    d = tmp_path / "evidence"
    d.mkdir()
    (d / "dmesg.log").write_text(good_lines(2))
    (d / "kern.log.gz").write_bytes(gzip.compress(b"x", mtime=0)[:10] + bytes(range(256)) * 8)
    code, errors = ingest(db_with_good, d)
    assert code == 2 and len(errors) == 1 and "evidence/kern.log.gz" in errors[0] and "gzip" in errors[0], errors
    assert event_count(db_with_good) == 5


def test_raw_dmesg_without_boot_time_is_stored_undated_until_a_boot_time_is_put_beside_it(tmp_path: Path) -> None:
    # (issue 30: never refused; tests/test_kernel_undated.py has the rest)
    node = tmp_path / "bundle" / "nodes" / "gpu-021"
    node.mkdir(parents=True)
    (node / "dmesg").write_bytes((SAMPLES / "kernel" / "dmesg_raw_no_boot.log").read_bytes())
    db = tmp_path / "raw.duckdb"
    code, errors = ingest(db, tmp_path / "bundle")  # stored, and the user told its times are missing
    assert code == 2 and len(errors) == 1 and "kept undated" in errors[0] and "boot_time" in errors[0], errors
    with Lab(db) as lab:
        ev = lab.sql("SELECT count(*) AS n, count(ts) AS stamped FROM events")
    assert ev["n"][0] > 0 and ev["stamped"][0] == 0
    (node / "boot_time").write_text("2026-11-25T06:00:00Z\n")
    assert ingest(db, tmp_path / "bundle") == (0, [])
    with Lab(db) as lab:
        ev = lab.sql("SELECT count(*) AS n, count(ts) AS stamped FROM events")
    assert ev["n"][0] > 0 and ev["stamped"][0] == ev["n"][0]


def test_empty_directory_says_no_evidence_was_found(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code, errors = ingest(tmp_path / "e.duckdb", empty)
    assert code == 2 and len(errors) == 1 and "no evidence files found" in errors[0], errors
    with Lab(tmp_path / "e.duckdb") as lab:
        assert any("no evidence files found" in p for p in lab.ingest(empty).problems)


def test_one_out_of_range_rank_costs_one_named_line(tmp_path: Path) -> None:
    rec = '{{"ts": "2026-11-24T08:00:0{i}Z", "rank": {rank}, "host": "east-003", "step": {i}, "step_s": 1.0}}\n'
    log = tmp_path / "rank-3.jsonl"
    log.write_text("".join(rec.format(i=i, rank=3000000000 if i == 2 else 3) for i in range(1, 5)))
    code, errors = ingest(tmp_path / "s.duckdb", log)
    assert code == 2 and len(errors) == 1 and errors[0].startswith("error: rank-3.jsonl:2: "), errors
    with Lab(tmp_path / "s.duckdb") as lab:
        assert lab.sql("SELECT step FROM rank_steps ORDER BY step")["step"].to_list() == [1, 3, 4]


def test_ten_megabyte_line_is_skipped_with_its_line_number(db_with_good: Path, tmp_path: Path) -> None:
    bad = tmp_path / "long.log"
    bad.write_text(GOOD.format(s=10) + "x" * (10 << 20) + "\n" + GOOD.format(s=11))
    code, errors = ingest(db_with_good, bad)
    assert code == 2
    assert errors == [f"error: {bad.name}:2: line longer than 1 MiB skipped"]
    with Lab(db_with_good) as lab:
        lines = lab.sql("SELECT line FROM events WHERE file_id = 2 ORDER BY line")["line"].to_list()
    assert lines == [1, 3]


def test_non_utf8_text_is_read_with_replacement(db_with_good: Path, tmp_path: Path) -> None:
    bad = tmp_path / "latin1.log"
    bad.write_bytes(GOOD.format(s=20).encode() + "caf\xe9 na\xefve\n".encode("latin-1") + GOOD.format(s=21).encode())
    code, errors = ingest(db_with_good, bad)
    assert (code, errors) == (0, [])
    assert event_count(db_with_good) == 5


def test_utf16_file_is_not_recognised(db_with_good: Path, tmp_path: Path) -> None:
    bad = tmp_path / "utf16.log"
    bad.write_bytes(good_lines(2).encode("utf-16"))
    code, errors = ingest(db_with_good, bad)
    assert code == 2 and len(errors) == 1 and "utf16.log" in errors[0]


def test_empty_file(db_with_good: Path, tmp_path: Path) -> None:
    bad = tmp_path / "empty.log"
    bad.write_bytes(b"")
    code, errors = ingest(db_with_good, bad)
    assert code == 2 and errors == [f"error: {bad.name}: empty file"]


def test_missing_path(db_with_good: Path, tmp_path: Path) -> None:
    code, errors = ingest(db_with_good, tmp_path / "nope")
    assert code == 2 and len(errors) == 1 and "no such file" in errors[0]


def test_fifo_in_a_directory_is_named_not_opened(db_with_good: Path, tmp_path: Path) -> None:
    d = tmp_path / "evidence"
    d.mkdir()
    os.mkfifo(d / "pipe.log")
    code, errors = ingest(db_with_good, d)
    assert code == 2 and errors == ["error: evidence/pipe.log: not a regular file"]


def test_directory_of_unreadable_files(tmp_path: Path) -> None:
    """Through the real command; as root, without the capabilities that let root read anything."""
    d = tmp_path / "locked"
    d.mkdir()
    for i in range(3):
        (d / f"dmesg{i}.log").write_text(good_lines(2))
        (d / f"dmesg{i}.log").chmod(0)
    db = tmp_path / "u.duckdb"
    cmd = [sys.executable, "-m", "clusterlab.cli", "--db", str(db), "ingest", str(d)]
    if os.geteuid() == 0:
        cmd = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *cmd]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert lines == [f"error: locked/dmesg{i}.log: permission denied" for i in range(3)]
    assert "Traceback" not in res.stderr


def test_file_and_folder_names_that_are_not_utf8_are_stored_and_found_again(tmp_path: Path) -> None:
    """Through the real command: Linux names are bytes, and a stray byte must cost nothing beside it."""
    root = os.fsencode(tmp_path / "bundle")
    os.makedirs(os.path.join(root, b"runs", b"r\xe9sum\xe9", b"attempt-1"))
    with open(os.path.join(root, b"runs", b"r\xe9sum\xe9", b"attempt-1", b"kern\xff.log"), "w") as f:
        f.write(good_lines(2))
    with open(os.path.join(root, b"dmesg.log"), "w") as f:
        f.write(good_lines(3))
    db = tmp_path / "n.duckdb"
    cmd = [sys.executable, "-m", "clusterlab.cli", "--db", str(db), "ingest", "--host", "east-003",
           str(tmp_path / "bundle")]
    first = subprocess.run(cmd, capture_output=True, text=True)
    assert first.returncode == 0 and "Traceback" not in first.stderr, first.stderr
    again = subprocess.run(cmd, capture_output=True, text=True)
    assert again.returncode == 0 and "2 unchanged" in again.stdout, again.stdout + again.stderr
    assert event_count(db) == 5
    with Lab(db, read_only=True) as lab:
        files = lab.sql("SELECT path, run FROM ingested_files ORDER BY path")
        assert files["run"].to_list() == [None, "r\\xe9sum\\xe9"]
        assert files["path"][1].endswith("/runs/r\\xe9sum\\xe9/attempt-1/kern\\xff.log")


@pytest.mark.parametrize("name, lines", [
    ("rank-3.jsonl", [f'{{"ts": "2026-11-24T08:00:{i:02d}Z", "rank": 3, "host": "east-003", "step": {i}, '
                      f'"step_s": {"5.6e64" if i == 2 else "1.0"}, "data_s": {"-3.0" if i == 3 else "0.1"}}}'
                      for i in range(1, 5)]),
    # a Megatron iteration line whose timer a flipped byte made 10^67 ms
    ("train.log", [f"[2026-11-24 08:00:{i:02d}] iteration {i:8d}/    5000 | consumed samples:     {i * 512:8d} | "
                   f"elapsed time per iteration (ms): {'5.6E+67' if i == 2 else '1000.2'} | learning rate: 3.000E-04 | "
                   "global batch size:   512 | lm loss: 7.512E+00 | loss scale: 1.0 | number of skipped iterations:   0"
                   for i in range(1, 5)]),
])
def test_a_duration_no_clock_can_hold_is_left_empty_and_named(tmp_path: Path, name: str, lines: list[str]) -> None:
    log = tmp_path / name
    log.write_text("\n".join(lines) + "\n")
    code, errors = ingest(tmp_path / "s.duckdb", log)
    assert code == 2 and errors and all(e.startswith(f"error: {name}:") for e in errors), errors
    assert any(f"{name}:2: " in e for e in errors), errors
    with Lab(tmp_path / "s.duckdb") as lab:
        table = "rank_steps" if name.endswith(".jsonl") else "steps"
        got = lab.sql(f"SELECT step, step_s FROM {table} ORDER BY step").rows()
        # the damaged number is gone (its row kept empty, or the collector's own reading refused the line)
        assert [s for s, _ in got if s != 2] == [1, 3, 4] and all(v is None for s, v in got if s == 2), got
        assert all(v is None or 0 <= v < 1e6 for _, v in got), got

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


def test_truncated_gzip_rolls_back_and_says_so(db_with_good: Path, tmp_path: Path) -> None:
    whole = gzip.compress(good_lines(50_000).encode(), mtime=0)
    bad = tmp_path / "dmesg.log.gz"
    bad.write_bytes(whole[: len(whole) // 2])
    code, errors = ingest(db_with_good, bad)
    assert code == 2
    assert len(errors) == 1 and "dmesg.log.gz" in errors[0] and "gzip" in errors[0]
    assert event_count(db_with_good) == 3  # nothing of the truncated file, nothing lost


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

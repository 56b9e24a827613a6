"""A small gzip is decompressed once, for its head and its group parse (`reader.gunzip_small`), and gives the rows
and messages it gave when its head was read from the file: a clean log, a multi-member gzip (`cat a.gz b.gz`),
one that holds more than a group reads whole (a highly compressible bomb: the decompression stops at the bound),
and one cut short."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import pytest
from test_ingest_parallel import _ingest, _snapshot

from clusterlab.ingest import heads
from clusterlab.ingest.reader import MAX_LINE_BYTES, Unzipped, gunzip_small

XID = "[ 4242.{n:06d}] NVRM: Xid (PCI:0000:1b:00): 79, pid=1, name=python3, GPU has fallen off the bus.\n"
JOURNAL = "2026-11-24T06:01:{s:02d}+00:00 gpu-{n:03d} kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid=7, name=python3\n"


def _tree(root: Path) -> None:
    for n in range(3):
        node = root / "nodes" / f"gpu-{n:03d}"
        node.mkdir(parents=True)
        (node / "boot_time").write_text("2026-11-24T05:00:00Z\n")
        (node / "dmesg.log.gz").write_bytes(gzip.compress(XID.format(n=n).encode(), mtime=0))
        text = "".join(JOURNAL.format(s=s, n=n) for s in range(20)).encode()
        # two members, as `cat` of two gzips or a rotated log appended makes
        (node / "kern.log.gz").write_bytes(gzip.compress(text[:300], mtime=0) + gzip.compress(text[300:], mtime=0))
    big = root / "nodes" / "gpu-009"
    big.mkdir(parents=True)
    # compresses to a few KB, decompresses past what a group reads whole
    filler = ("x" * 200 + "\n") * (MAX_LINE_BYTES // 200 + 50)
    (big / "kern.log.gz").write_bytes(gzip.compress((JOURNAL.format(s=1, n=9) + filler).encode(), mtime=0))
    cut = gzip.compress("".join(JOURNAL.format(s=s, n=8) for s in range(40)).encode(), mtime=0)
    (root / "nodes" / "gpu-008").mkdir(parents=True)
    (root / "nodes" / "gpu-008" / "kern.log.gz").write_bytes(cut[: len(cut) // 2])


def test_small_gzips_give_the_rows_they_gave_decompressed_twice(tmp_path: Path) -> None:
    _tree(tmp_path)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(heads, "gunzip_small", lambda raw: None)  # the way before: the head read again from the file
        before = _ingest(tmp_path / "before.duckdb", tmp_path / "nodes")
    opened: list[str] = []
    with pytest.MonkeyPatch.context() as m:
        real = heads.read_head_checked
        m.setattr(heads, "read_head_checked", lambda path: opened.append(path.name) or real(path))
        after = _ingest(tmp_path / "after.duckdb", tmp_path / "nodes")
    assert after == before
    assert _snapshot(tmp_path / "after.duckdb") == _snapshot(tmp_path / "before.duckdb")
    # only the gzips that gunzip_small leaves had their heads read again: two members (3), the bomb, the cut one
    assert sorted(opened) == ["kern.log.gz"] * 5
    assert any("gzip ends before its end of stream" in msg for r in after for msg in r[4])


def test_gunzip_small_is_bounded_and_strict() -> None:
    one = gzip.compress(b"a line\n", mtime=0)
    got = gunzip_small(one)
    assert isinstance(got, Unzipped) and got == b"a line\n"
    assert gunzip_small(one + one) is None  # a second member: read as any gzip
    assert gunzip_small(one[:-4]) is None  # cut short
    assert gunzip_small(b"\x1f\x8b" + b"\x00" * 30) is None  # not a gzip body
    bomb = zlib.compressobj(9, zlib.DEFLATED, 31)
    data = bomb.compress(b"\0" * (64 * MAX_LINE_BYTES)) + bomb.flush()
    assert len(data) < 1 << 20 and gunzip_small(data) is None

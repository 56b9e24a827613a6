"""GlusterFS logs: stale file handles, lost bricks and I/O errors are shared-filesystem faults; the rest is not read."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl
import pytest

from clusterlab import Lab
from clusterlab.collectors import glusterfs
from clusterlab.collectors._base import Context

STALE = ("[2026-04-11 22:05:31.204117 +0000] W [MSGID: 114031] [client-rpc-fops_v2.c:2561:client4_0_lookup_cbk] "
         "0-scratch-client-3: remote operation failed [Stale file handle]")


def events(*texts: str) -> list[dict]:
    lines = pl.DataFrame({"line": range(1, len(texts) + 1), "text": list(texts)},
                         schema={"line": pl.Int64, "text": pl.String})
    lines = lines.filter(pl.col("text").str.contains(glusterfs.PATTERN))
    parsed = glusterfs.parse(lines, Context(path="x", host="trn-b12"))
    return parsed.tables["events"].to_dicts() if "events" in parsed.tables else []


@pytest.mark.parametrize(("line", "kind", "severity"), [
    (STALE, "gluster_stale_file_handle", "warning"),
    ("[2026-04-11 22:05:31.300000] E [fuse-bridge.c:2830:fuse_readv_cbk] 0-glusterfs-fuse: 7731: READ => -1 "
     "gfid=4068dcae-a9d1-4429-aa86-621f9a242fd1 fd=0x7fe552460b88 (Stale file handle)",
     "gluster_stale_file_handle", "error"),
    ("[2026-04-11 22:06:02.000112] C [rpc-clnt-ping.c:152:rpc_clnt_ping_timer_expired] 0-scratch-client-1: "
     "server 10.3.0.12:49153 has not responded in the last 42 seconds, disconnecting.",
     "gluster_disconnected", "error"),
    ("[2026-04-11 22:06:02.100000] E [MSGID: 108006] [afr-common.c:6140:__afr_handle_child_down_event] "
     "0-scratch-replicate-0: All subvolumes are down. Going offline until at least one of them comes back up.",
     "gluster_disconnected", "error"),
    ("[2026-04-11 22:06:05.000000] E [MSGID: 108008] [afr-read-txn.c:312:afr_read_txn_refresh_done] "
     "0-scratch-replicate-0: Failing READ on gfid 0b7d5c21-9a4e-4f31-b8c2-55e0d7a1f3c4: split-brain observed. "
     "[Input/output error]", "gluster_io_error", "error"),
])
def test_what_a_job_feels_is_a_filesystem_fault(line: str, kind: str, severity: str) -> None:
    (e,) = events(line)
    assert (e["kind"], e["failure_mode"], e["severity"], e["host"]) == (kind, "filesystem_io", severity, "trn-b12")


def test_the_time_is_utc_and_the_fields_are_kept() -> None:
    (e,) = events(STALE)
    assert e["ts"] == dt.datetime(2026, 4, 11, 22, 5, 31, 204117)
    d = json.loads(e["detail"])
    assert (d["level"], d["msgid"], d["source"], d["xlator"]) == ("W", 114031, "client-rpc-fops_v2.c:2561",
                                                                  "0-scratch-client-3")


def test_a_printed_offset_is_applied() -> None:
    (e,) = events(STALE.replace("+0000", "+0200"))
    assert e["ts"] == dt.datetime(2026, 4, 11, 20, 5, 31, 204117)


def test_informational_lines_are_not_selected() -> None:
    line = ("[2026-04-11 22:06:02.002930] I [MSGID: 114018] [client.c:2229:client_rpc_notify] 0-scratch-client-1: "
            "disconnected from client, process will keep trying to connect glusterd until brick's port is available")
    assert events(line) == []


def test_sniff_takes_gluster_logs_and_not_others() -> None:
    assert glusterfs.sniff(((STALE + "\n") * 3).encode(), "mnt-scratch.log")
    assert glusterfs.sniff((STALE + "\n").encode(), "excerpt.log")
    assert not glusterfs.sniff(b"[2026-04-11 22:05:31] rank 0: step 10 loss 2.31\n" * 5, "train.log")


def test_a_saved_excerpt_is_ingested_alone(tmp_path: Path) -> None:
    path = tmp_path / "excerpt.log"
    path.write_text(STALE.lstrip("[") + "\n")  # pasted without its first bracket
    with Lab(":memory:") as lab:
        lab.ingest(path)
        got = lab.sql("SELECT source, failure_mode FROM events").rows()
    assert got == [("glusterfs", "filesystem_io")]

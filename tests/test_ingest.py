"""Ingestion is idempotent, adds only what a grown log added, and survives being killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from clusterlab import Lab
from clusterlab.tables import TABLE_COLUMNS
from conftest import SAMPLES

XID = ("2026-11-24T08:{m:02d}:{s:02d},000000+00:00 NVRM: Xid (PCI:0000:5d:00): 79, pid=1234, name=python, "
       "GPU has fallen off the bus.")


def counts(lab: Lab) -> dict[str, int]:
    return {t: lab.sql(f"SELECT count(*) AS n FROM {t}")["n"][0] for t in [*TABLE_COLUMNS, "ingested_files"]}


def xid_lines(n: int, start: int = 0) -> str:
    return "".join(XID.format(m=(start + i) // 60, s=(start + i) % 60) + "\n" for i in range(n))


def test_reingesting_the_bundle_changes_no_row_count(lab: Lab) -> None:
    lab.ingest(SAMPLES / "bundle")
    before = counts(lab)
    again = lab.ingest(SAMPLES / "bundle")
    assert counts(lab) == before
    assert set(again.counts()) <= {"unchanged", "skipped"}


def test_appended_log_adds_exactly_the_new_rows(lab: Lab, tmp_path: Path) -> None:
    log = tmp_path / "nodes" / "east-003" / "dmesg.log"
    log.parent.mkdir(parents=True)
    log.write_text(xid_lines(3))
    lab.ingest(tmp_path)
    assert counts(lab)["events"] == 3
    with log.open("a") as f:
        f.write(xid_lines(2, start=3))
    res = lab.ingest(tmp_path)
    assert [f.status for f in res.files] == ["appended"]
    ev = lab.sql("SELECT line, ts, host FROM events ORDER BY line")
    assert ev["line"].to_list() == [1, 2, 3, 4, 5]
    assert ev["host"].unique().to_list() == ["east-003"]
    assert counts(lab)["ingested_files"] == 1


def test_open_last_line_is_read_again_once_completed(lab: Lab, tmp_path: Path) -> None:
    log = tmp_path / "dmesg.log"
    full = xid_lines(2)
    log.write_text(full[:-40])  # the second line is cut mid-way, as a log being written is
    lab.ingest(log, host="east-003")
    with log.open("a") as f:
        f.write(full[-40:])
    lab.ingest(log, host="east-003")
    ev = lab.sql("SELECT line, text FROM events ORDER BY line")
    assert ev["line"].to_list() == [1, 2]
    assert ev["text"][1] == full.splitlines()[1]


def test_a_rewritten_file_is_a_new_file_and_the_old_rows_stay(lab: Lab, tmp_path: Path) -> None:
    # a job log the next attempt overwrote: what the first attempt printed is still evidence
    log = tmp_path / "dmesg.log"
    log.write_text(xid_lines(4))
    lab.ingest(log, host="east-003")
    log.write_text(xid_lines(2, start=100))
    res = lab.ingest(log, host="east-003")
    assert res.files[0].status == "changed"
    assert counts(lab)["events"] == 6


def test_a_rewritten_superset_stores_only_what_is_new(lab: Lab, tmp_path: Path) -> None:
    # a dump written again with more in it (an `sacct` export, a log copied again): nothing twice
    log = tmp_path / "dmesg.log"
    log.write_text(xid_lines(3))
    lab.ingest(log, host="east-003")
    log.write_text("# exported again\n" + xid_lines(5))
    assert lab.ingest(log, host="east-003").files[0].status == "changed"
    assert lab.sql("SELECT count(*) AS n, count(DISTINCT text) AS d FROM events").row(0) == (5, 5)


def _kern(tmp_path: Path, lab: Lab, text: str) -> Path:
    node = tmp_path / "nodes" / "east-003"
    node.mkdir(parents=True, exist_ok=True)
    (node / "kern.log").write_text(text)
    lab.ingest(tmp_path / "nodes")
    return node


def _xids(lab: Lab) -> list[str]:
    return sorted(lab.sql("SELECT text FROM events")["text"].to_list())


def test_logrotate_create_keeps_the_rotated_evidence_once(lab: Lab, tmp_path: Path) -> None:
    node = _kern(tmp_path, lab, xid_lines(3))
    (node / "kern.log").rename(node / "kern.log.1")
    (node / "kern.log").write_text(xid_lines(2, start=10))
    res = lab.ingest(tmp_path / "nodes")
    assert res.counts() == {"changed": 1, "unchanged": 1}
    assert _xids(lab) == sorted(xid_lines(3).splitlines() + xid_lines(2, start=10).splitlines())


def test_logrotate_copytruncate_and_gz_generations_add_only_unseen_lines(lab: Lab, tmp_path: Path) -> None:
    import gzip

    node = _kern(tmp_path, lab, xid_lines(3))
    with (node / "kern.log").open("a") as f:  # written after the last ingest, before the rotation
        f.write(xid_lines(1, start=3))
    (node / "kern.log.1").write_bytes((node / "kern.log").read_bytes())  # copytruncate: copy, then truncate
    (node / "kern.log").write_text(xid_lines(1, start=20))
    lab.ingest(tmp_path / "nodes")
    # the next rotation: .1 compressed to .2.gz, the current log copied to .1
    with gzip.open(node / "kern.log.2.gz", "wb") as g:
        g.write((node / "kern.log.1").read_bytes())
    with (node / "kern.log").open("a") as f:
        f.write(xid_lines(1, start=21))
    (node / "kern.log.1").write_bytes((node / "kern.log").read_bytes())
    (node / "kern.log").write_text("")
    lab.ingest(tmp_path / "nodes")
    expected = xid_lines(4).splitlines() + xid_lines(2, start=20).splitlines()
    assert _xids(lab) == sorted(expected)


def test_same_content_under_two_hosts_is_kept_twice(lab: Lab, tmp_path: Path) -> None:
    for h in ("east-001", "east-002"):
        p = tmp_path / "nodes" / h / "dmesg.log"
        p.parent.mkdir(parents=True)
        p.write_text(xid_lines(1))
    lab.ingest(tmp_path)
    assert sorted(lab.sql("SELECT host FROM events")["host"]) == ["east-001", "east-002"]


def _step_records(path: Path, n: int) -> None:
    i = pl.int_range(n, eager=True)
    pl.DataFrame({"ts": 1764000000 + i, "rank": i % 64, "host": "east-" + (i % 8).cast(pl.String).str.zfill(3),
                  "step": i // 64}).with_columns(
        step_s=pl.lit(1.5), compute_s=pl.lit(1.2), comm_s=pl.lit(0.2), data_s=pl.lit(0.1), tokens=pl.lit(65536),
        loss=pl.lit(2.5)).write_ndjson(path)


@pytest.mark.slow
def test_sigkill_mid_ingest_leaves_no_partial_rows(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    small, big = tmp_path / "small.jsonl", tmp_path / "big.jsonl"
    _step_records(small, 1000)
    _step_records(big, 3_000_000)
    cli = [sys.executable, "-m", "clusterlab.cli", "--db", str(db), "ingest"]
    subprocess.run([*cli, str(small)], check=True, capture_output=True)
    proc = subprocess.Popen([*cli, str(big)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(2.5)  # well inside the big file's transaction (it takes several seconds)
    assert proc.poll() is None, "ingest finished before it could be killed: make the file bigger"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with Lab(db) as lab:
        files = lab.sql("SELECT path FROM ingested_files")["path"].to_list()
        assert files == [str(small.resolve())]
        assert counts(lab)["rank_steps"] == 1000
    subprocess.run([*cli, str(big)], check=True, capture_output=True)
    with Lab(db) as lab:
        assert counts(lab)["rank_steps"] == 3_001_000


def _events_of(path: Path) -> list[tuple]:
    with Lab(":memory:") as lab:
        lab.ingest(path)
        # NOTE: not ts: a line before the file's first time takes the next one in its batch, so tiny
        # batches legitimately leave it empty; the block's own fields are what must not change
        return lab.sql("SELECT line, kind, failure_mode, severity, rank, host, text, detail FROM events "
                       "ORDER BY line, kind").rows()


def test_a_batch_boundary_never_cuts_a_failure_summary_or_traceback(monkeypatch) -> None:
    """Flushes every few lines: the ChildFailedError summaries and tracebacks come out as from one batch."""
    from clusterlab.collectors import torch_dist
    from clusterlab.ingest import groups as ingest_groups
    from clusterlab.ingest import parse as ingest_parse
    from clusterlab.ingest import reader

    log = SAMPLES / "torch" / "legacy_1_13.log"
    whole = _events_of(log)
    assert any(k == "child_failed" for _, k, *_ in whole)
    monkeypatch.setattr(reader, "CHUNK_BYTES", 128)  # a frame every line or two, so flushes can fall anywhere
    # (a whole small log is otherwise parsed in one call with its group, never in batches)
    monkeypatch.setattr(ingest_groups, "GROUP_FILES", False)
    cut = {}
    monkeypatch.setattr(ingest_parse, "BLOCK_LINES", 24)  # the sample's blocks are shorter than that
    for rows in range(25, 45, 3):  # batches at least a block longer than the window, as in real ingests
        monkeypatch.setattr(ingest_parse, "FLUSH_ROWS", rows)
        assert _events_of(log) == whole, f"flushing every {rows} lines changed the events"
        with monkeypatch.context() as m:  # and the check can fail: without the hold-back, blocks are cut
            m.setattr(torch_dist, "BLOCK_START", None)
            cut[rows] = _events_of(log) != whole
    assert any(cut.values()), "no flush point fell inside a block: the test proves nothing"


def _all_rows(lab: Lab) -> dict[str, list[tuple]]:
    """Every evidence row of the store, without the file id (a clean and an appended read number files alike)."""
    return {t: lab.sql(f"SELECT * EXCLUDE (file_id) FROM {t} ORDER BY ALL").rows() for t in TABLE_COLUMNS}


def test_line_appended_without_a_time_gets_the_time_a_clean_ingest_gives(tmp_path: Path) -> None:
    src = SAMPLES / "bundle" / "runs" / "llama8b-pretrain" / "attempt-2" / "train.log"
    grown = tmp_path / "grown" / "runs" / "llama8b-pretrain" / "attempt-2" / "train.log"
    clean = tmp_path / "clean" / "runs" / "llama8b-pretrain" / "attempt-2" / "train.log"
    for p in (grown, clean):
        p.parent.mkdir(parents=True)
    grown.write_bytes(src.read_bytes())
    warn = ("east-001:68267:68301 [0] transport/net_ib.cc:1190 NCCL WARN NET/IB : Got completion from peer "
            "10.10.0.5<50021> with status=12 opcode=0 len=0 vendor err 129 (Send)\n")
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path / "grown")
        with grown.open("a") as f:
            f.write(warn)
        assert [f.status for f in lab.ingest(tmp_path / "grown").files] == ["appended"]
        appended = _all_rows(lab)
    clean.write_bytes(grown.read_bytes())
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path / "clean")
        assert _all_rows(lab) == appended
        last = lab.sql("SELECT ts FROM events WHERE kind = 'ib_completion_error' ORDER BY line DESC LIMIT 1")
        assert last["ts"][0] is not None


def test_folders_named_below_the_bundle_root_keep_run_and_host(tmp_path: Path) -> None:
    import shutil

    bundle = shutil.copytree(SAMPLES / "bundle", tmp_path / "bundle")
    with Lab(tmp_path / "whole.duckdb") as whole, Lab(tmp_path / "parts.duckdb") as parts:
        whole.ingest(bundle)
        parts.ingest(bundle / "runs", bundle / "nodes", bundle / "scheduler")
        query = "SELECT regexp_replace(path, '.*/bundle/', '') AS p, run, attempt, host FROM ingested_files ORDER BY p"
        assert parts.sql(query).rows() == whole.sql(query).rows()
        assert parts.incidents().select("incident_id", "failure_mode", "host").sort("incident_id").rows() == \
            whole.incidents().select("incident_id", "failure_mode", "host").sort("incident_id").rows()
        assert parts.incidents().height >= 6


def test_an_ingest_killed_before_it_rebuilt_the_attempts_is_repaired_on_open(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    # the files are stored, then the process dies where the attempts were to be rebuilt
    code = ("import os, sys; from clusterlab.ingest import attempts; "
            "attempts.refresh = lambda con: os._exit(9); "
            "from clusterlab import Lab; Lab(sys.argv[1]).ingest(sys.argv[2], workers=1)")
    killed = subprocess.run([sys.executable, "-c", code, str(db), str(SAMPLES / "bundle")], capture_output=True,
                            text=True)
    assert killed.returncode == 9, killed.stderr
    cli = [sys.executable, "-m", "clusterlab.cli", "--db", str(db)]
    res = subprocess.run([*cli, "incidents", "--json"], capture_output=True, text=True)  # opened read-only
    assert res.returncode == 0, res.stderr
    assert "note: rebuilt the attempts" in res.stderr
    with Lab(db) as lab:
        assert lab.notes == []  # repaired once, for good
        assert lab.sql("SELECT count(*) AS n FROM attempts")["n"][0] >= 5
        assert len(lab.incidents()) >= 6

"""Batched, grouped and parallel ingest store exactly the rows of a file-by-file, one-process ingest."""

from __future__ import annotations

import gzip
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clusterlab import Lab, ingest_group, ingest_write
from clusterlab.collectors import all_collectors
from clusterlab.collectors._base import TABLE_COLUMNS
from clusterlab.ingest_parse import choose
from clusterlab.reader import read_head

SAMPLES = Path(__file__).parent.parent / "data_samples"


def _snapshot(db: Path | str) -> dict[str, list[tuple]]:
    """Every stored row, keyed by the file's path instead of its id, and each file's record."""
    with Lab(db, read_only=True) as lab:
        out = {t: lab.sql(f"SELECT f.path AS _file, t.* EXCLUDE (file_id) FROM {t} t "
                          "JOIN ingested_files f USING (file_id) ORDER BY ALL").rows()
               for t in [*TABLE_COLUMNS, "unmatched_lines"]}
        out["ingested_files"] = lab.sql(
            "SELECT * EXCLUDE (file_id, ingested_at) FROM ingested_files ORDER BY path").rows()
        out["orphans"] = lab.sql("SELECT count(*) FROM events WHERE file_id NOT IN "
                                 "(SELECT file_id FROM ingested_files)").rows()
    return out


def _ingest(db: Path, *paths: Path, workers: int | None = 1, one_by_one: bool = False) -> list[tuple]:
    with Lab(db) as lab:
        if one_by_one:
            got = []
            for p in paths:
                got += [(f.status, f.rows, f.unparsed, f.messages) for f in lab.ingest(p, workers=workers).files]
            return got
        return [(f.display, f.status, f.rows, f.unparsed, f.messages)
                for f in lab.ingest(*paths, workers=workers).files]


def _many_step_files(root: Path, n: int = 120) -> None:
    """Small per-rank step files, some gzipped, some with junk or blank lines, a rank past 32 bits, a record
    without a time, some without a last newline."""
    rng = random.Random(7)
    for r in range(n):
        recs = [json.dumps({"ts": 1795824000 + s * 2.5, "rank": r, "host": f"n{r // 8:03d}", "step": s,
                            "step_s": 2.5, "compute_s": 2.0, "comm_s": 0.4, "data_s": 0.1, "tokens": 4096,
                            "loss": 3 - s / 100}) for s in range(rng.randint(5, 40))]
        if r % 17 == 3:
            recs.insert(2, "WARNING: not json")
        if r % 23 == 5:
            recs.insert(1, "")
        if r == 11:
            recs.append(json.dumps({"ts": 1795824999, "rank": 2**40, "step": 1}))
        if r == 13:
            recs.append(json.dumps({"rank": 13, "step": 99, "step_s": 1.0}))  # no time: takes the one before
        text = "\n".join(recs) + ("\n" if r % 5 else "")
        p = root / "runs" / "many" / f"attempt-{1 + r % 2}" / "steps" / f"rank-{r}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        if r % 3 == 0:
            p.with_suffix(".jsonl.gz").write_bytes(gzip.compress(text.encode()))
        else:
            p.write_text(text)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("many")
    _many_step_files(root)
    return [SAMPLES / "bundle", SAMPLES / "simulated", root]


@pytest.fixture(scope="module")
def reference(corpus: list[Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, list]:
    """Each file parsed alone, one per transaction, in this process."""
    db = tmp_path_factory.mktemp("ref") / "ref.duckdb"
    with pytest.MonkeyPatch.context() as m:
        m.setattr(ingest_group, "GROUP_FILES", False)
        m.setattr(ingest_write, "BATCH_FILES", 1)
        results = _ingest(db, *corpus)
    return _snapshot(db), results


def test_grouped_and_batched_ingest_stores_the_rows_of_a_file_by_file_one(corpus, reference, tmp_path) -> None:
    snap, results = reference
    assert any(r[1] == "ingested" and r[2].get("rank_steps") for r in results)
    assert any("not a step record" in m for r in results for m in r[4])
    with pytest.MonkeyPatch.context() as m:
        m.setattr(ingest_group, "GROUP_BYTES", 3000)  # many groups, cut anywhere
        assert _ingest(tmp_path / "g.duckdb", *corpus) == results
    assert _snapshot(tmp_path / "g.duckdb") == snap


def test_two_workers_store_the_rows_of_one(corpus, reference, tmp_path) -> None:
    snap, results = reference
    assert _ingest(tmp_path / "w.duckdb", *corpus, workers=2) == results
    assert _snapshot(tmp_path / "w.duckdb") == snap


def test_files_one_call_each_store_the_rows_of_one_call(corpus, reference, tmp_path) -> None:
    snap, _ = reference
    many = corpus[2]
    files = sorted(p for p in many.rglob("*") if p.is_file())[:30]  # a call costs ~0.3 s: thirty make the point
    db = tmp_path / "one.duckdb"
    one = _ingest(db, *files, one_by_one=True)
    assert {s for s, *_ in one} == {"ingested"}
    names = {str(p) for p in files}
    mine = {t: [r for r in rows if str(r[0]) in names] for t, rows in _snapshot(db).items() if t != "orphans"}
    ref = {t: [r for r in rows if str(r[0]) in names] for t, rows in snap.items() if t != "orphans"}
    assert mine == ref
    assert len(mine["rank_steps"]) > 300 and len(mine["ingested_files"]) == 30


def test_sniff_hints_are_necessary_conditions() -> None:
    """A collector's SNIFF_HINT skips its sniff: no file it would claim may lack the hint."""
    hinted = [c for c in all_collectors() if getattr(c, "SNIFF_HINT", None)]
    assert {c.NAME for c in hinted} >= {"step_jsonl", "sacct", "preflight"}
    checked = 0
    for p in SAMPLES.rglob("*"):
        if not p.is_file() or p.suffix in (".toml", ".json") and p.name != "truth.json":
            continue
        head = read_head(p)
        for c in hinted:
            if c.sniff(head, p.name):
                checked += 1
                assert any(h in head.lower() for h in c.SNIFF_HINT), f"{p}: {c.NAME} sniffs it without its hint"
    assert checked > 50
    assert choose(read_head(next(SAMPLES.rglob("rank-0.jsonl.gz"))), "x", all_collectors())[0].NAME == "step_jsonl"


@pytest.mark.slow
def test_sigkill_during_a_parallel_batched_ingest_leaves_whole_files(tmp_path: Path) -> None:
    """Killed at random moments (process group and workers), the store holds whole files only; a rerun completes
    it to exactly what a clean ingest gives."""
    root = tmp_path / "fleet"
    _many_step_files(root, n=900)
    clean = tmp_path / "clean.duckdb"
    _ingest(clean, root, workers=1)
    want = _snapshot(clean)
    db = tmp_path / "k.duckdb"
    cli = [sys.executable, "-m", "clusterlab.cli", "--db", str(db), "ingest", "--workers", "2", str(root)]
    rng = random.Random(3)
    kills = 0
    for _ in range(3):
        proc = subprocess.Popen(cli, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(rng.uniform(1.0, 4.0))
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
        if not db.exists():  # killed before it made the database
            continue
        got = _snapshot(db)
        assert got["orphans"] == [(0,)]
        stored = {r[0] for r in got["ingested_files"]}
        for t in ("rank_steps", "ingested_files"):
            assert got[t] == [r for r in want[t] if r[0] in stored], f"{t}: a partial file after the kill"
    done = subprocess.run(cli, capture_output=True, text=True)
    assert done.returncode == 2 and "not a step record" in done.stderr  # the junk lines, reported: exit 2
    assert _snapshot(db) == want
    assert kills, "every ingest finished before its kill: the test proves nothing"

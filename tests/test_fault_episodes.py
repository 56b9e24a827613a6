"""Node fault episodes: the InfiniteHBD trace and the episode CSV become `fault_episodes` rows."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from clusterlab import store
from clusterlab.cli import main
from clusterlab.lab import Lab

TRACE_DIR = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "infinitehbd-trace"
TRACE = TRACE_DIR / "fault_trace.json"
needs_trace = pytest.mark.skipif(not TRACE.exists(), reason="the InfiniteHBD trace is not in ../shared/datasets/")


@needs_trace
def test_trace_gives_its_584_episodes_per_class_and_per_host() -> None:
    lab = Lab(":memory:")
    lab.ingest(TRACE, epoch=dt.date(2024, 3, 30), workers=1)
    events = json.loads(TRACE.read_text())
    starts = [e for e in events if e["event_type"] == "fault_start"]
    stats = json.loads((TRACE_DIR / "fault_statistics.json").read_text())
    eps = lab.sql("SELECT * FROM fault_episodes")
    assert eps.height == len(starts) == 584
    assert eps["end_ts"].null_count() == 0  # every start of the trace is ended
    by_class = Counter(zip(eps["level"], eps["fault_class"], strict=True))
    assert by_class == Counter({(lvl, cls): v["ClassTotal"] for lvl, classes in stats.items()
                                for cls, v in classes.items() if cls != "LevelTotal"})
    assert Counter(eps["host"]) == Counter(e["node_id"] for e in starts)
    assert eps["host"].n_unique() == 231 and max(Counter(eps["host"]).values()) == 14
    assert eps["ts"].min() == dt.datetime(2024, 3, 30) + dt.timedelta(days=min(e["event_time"] for e in starts))


@needs_trace
def test_trace_without_an_epoch_is_refused_with_the_option_to_give(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    res = CliRunner().invoke(main, ["--db", str(db), "ingest", str(TRACE), "--workers", "1"])
    assert res.exit_code == 2 and "--epoch" in res.output
    ok = CliRunner().invoke(main, ["--db", str(db), "ingest", str(TRACE), "--workers", "1", "--epoch", "2024-03-30"])
    assert ok.exit_code == 0, ok.output
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM fault_episodes").fetchall()[0][0] == 584


def _ingest(tmp_path: Path, name: str, text: str, **kw) -> Lab:
    p = tmp_path / name
    p.write_text(text)
    lab = Lab(":memory:")
    lab.ingest(p, workers=1, **kw)
    return lab


def test_csv_reads_iso_times_offsets_and_open_episodes(tmp_path: Path) -> None:
    lab = _ingest(tmp_path, "eps.csv", "host,start,end,class,detail\n"
                  "n-01,2026-05-02T10:00:00+02:00,2026-05-02T12:30:00Z,GPU,\"ECC DBE, row remap failed\"\n"
                  "n-02,2026-05-03 07:00:00,,Fan,fan 3 critical\n")
    eps = lab.sql("SELECT host, ts, end_ts, detail, failure_mode, line FROM fault_episodes ORDER BY line").to_dicts()
    assert eps[0] == {"host": "n-01", "ts": dt.datetime(2026, 5, 2, 8), "end_ts": dt.datetime(2026, 5, 2, 12, 30),
                      "detail": "ECC DBE, row remap failed", "failure_mode": "gpu_memory_ecc", "line": 2}
    assert eps[1]["end_ts"] is None and eps[1]["failure_mode"] == "host_hw"


def test_csv_relative_days_count_from_the_epoch(tmp_path: Path) -> None:
    lab = _ingest(tmp_path, "rel.csv", "host,start,end,class,detail\nn-07,1.5,2.25,NIC,NIC Lost\n",
                  epoch=dt.datetime(2026, 1, 1))
    row = lab.sql("SELECT ts, end_ts, failure_mode FROM fault_episodes").to_dicts()[0]
    assert row == {"ts": dt.datetime(2026, 1, 2, 12), "end_ts": dt.datetime(2026, 1, 3, 6), "failure_mode": "network"}


def test_trace_pairs_overlapping_faults_of_one_node_by_type(tmp_path: Path) -> None:
    def ev(t: float, kind: str, cls: str) -> dict:
        return {"node_id": "n-x", "event_time": t, "event_type": kind,
                "fault_type": {"Level": "Hardware Failure", "Class": cls, "Desc": cls + " fault"}}
    trace = [ev(1.0, "fault_start", "GPU"), ev(1.5, "fault_start", "Fan"), ev(2.0, "fault_end", "Fan"),
             ev(3.0, "fault_end", "GPU"), ev(4.0, "fault_end", "NIC")]
    p = tmp_path / "t.json"
    p.write_text(json.dumps(trace))
    lab = Lab(":memory:")
    summary = lab.ingest(p, workers=1, epoch=dt.date(2026, 1, 1))
    eps = lab.sql("SELECT fault_class, ts, end_ts FROM fault_episodes ORDER BY ts").to_dicts()
    day = dt.datetime(2026, 1, 1)
    assert eps == [{"fault_class": "GPU", "ts": day + dt.timedelta(days=1), "end_ts": day + dt.timedelta(days=3)},
                   {"fault_class": "Fan", "ts": day + dt.timedelta(days=1.5), "end_ts": day + dt.timedelta(days=2)}]
    assert summary.files[0].unparsed == 1  # the NIC's end without a start is counted, not paired with another


def test_an_older_database_gains_the_episode_table(tmp_path: Path) -> None:
    db = tmp_path / "old.duckdb"
    con = duckdb.connect(str(db))
    # a database as the schema stood before issue 31's migration
    con.execute("BEGIN")
    for v in range(store.MIGRATIONS.index(store._FAULT_EPISODES)):
        for stmt in store.MIGRATIONS[v]:
            con.execute(stmt.replace("CREATE TABLE fault_episodes", "CREATE TABLE _unused_fault_episodes"))
        con.execute("INSERT INTO schema_version (version) VALUES (?)", [v + 1])
    con.execute("COMMIT")
    con.close()
    con = store.connect(db)
    assert store.current_version(con) == store.SCHEMA_VERSION
    assert con.execute("SELECT count(*) FROM fault_episodes").fetchall()[0][0] == 0


def test_episodes_ingested_under_a_run_make_no_attempt(tmp_path: Path) -> None:
    lab = _ingest(tmp_path, "eps.csv", "host,start,end,class,detail\nn-01,2025-01-01,2025-03-01,NIC,NIC Lost\n",
                  run="llm-7b")
    assert lab.sql("SELECT count(*) AS n FROM fault_episodes WHERE run = 'llm-7b'")["n"][0] == 1
    assert lab.sql("SELECT count(*) AS n FROM attempts")["n"][0] == 0

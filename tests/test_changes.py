"""Did the hot-fix work? A cluster's record before against after a change, with intervals and plain words."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl
import pytest
from click.testing import CliRunner
from timelines import T0, Attempt, write_events, write_run

from clusterlab import Lab
from clusterlab.cli import main
from clusterlab.whatif.changes import TOO_SMALL

GPUS = 2048  # a big job: 12 short attempts hold over 1,000 GPU-hours, enough exposure for a rate


def _bad_then_good(lab: Lab) -> dt.datetime:
    """Before the change: a run of 12 attempts each killed by an Xid 79 (2.0 s steps); after it: a run of 3
    attempts that end at their time limit (1.6 s steps, 1,600 GPU-hours). Returns the change's time."""
    lab.con.execute("INSERT INTO clusters (cluster, provider, gpu) VALUES ('c1', 'p1', 'H100 SXM')")
    before = [Attempt(k * 400.0, 20, [2.0] * 60, first_step=1 + 60 * k, load_step=60 * k or None, tail_s=60)
              for k in range(12)]
    write_run(lab.con, "old", GPUS, before)
    write_events(lab.con, [{"t": a.start_s + 20 + 120 + 5, "host": "h-001", "kind": "xid", "xid": 79,
                            "failure_mode": "gpu_fell_off_bus"} for a in before], name="dmesg")
    change = T0 + dt.timedelta(seconds=12 * 400 + 100)
    after = [Attempt(5000 + k * 1000.0, 20, [1.6] * 600, first_step=1 + 600 * k, load_step=600 * k or None,
                     saves={600 * (k + 1): 5.0}, tail_s=2) for k in range(3)]
    write_run(lab.con, "new", GPUS, after)
    for k, a in enumerate(after):
        write_events(lab.con, [{"t": a.end_s - 1, "source": "slurm", "kind": "time_limit",
                                "failure_mode": "time_limit", "host": "h-001"}], run="new", attempt=k + 1,
                     name=f"slurm-{k}")
    lab.con.execute("UPDATE runs SET tokens_per_step = 4000000, flops_per_token = 6e10")
    return change


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("changes") / "c.duckdb"
    with Lab(path) as lab:
        at = _bad_then_good(lab)
        lab.change("c1", at, "replaced the PCIe riser of h-001", author="ops")
    return path


def _metric(c, metric: str, mode: str = "all") -> dict:
    return c.metrics.filter(pl.col("metric") == metric, pl.col("mode") == mode).row(0, named=True)


def test_changes_are_recorded_in_utc_and_listed_oldest_first(lab: Lab) -> None:
    lab.change("c9", dt.datetime(2026, 11, 24, 10, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))), "NCCL 2.21 -> 2.23")
    lab.change("c9", "2026-11-23T09:00", "NCCL_IB_TIMEOUT=22")
    got = lab.changes("c9")
    assert got["what"].to_list() == ["NCCL_IB_TIMEOUT=22", "NCCL 2.21 -> 2.23"]
    assert got["ts"][1] == dt.datetime(2026, 11, 24, 8, 0)
    with pytest.raises(ValueError, match="what changed"):
        lab.change("c9", "2026-11-23T09:00", "  ")


def test_a_fix_that_worked_shows_fewer_failures_and_higher_mfu(db) -> None:
    with Lab(db, read_only=True) as lab:
        c = lab.compare("c1", "replaced the PCIe riser of h-001")
    fails = _metric(c, "failures_per_1000_gpu_days")
    assert fails["before"] > 0 and fails["after"] == 0
    assert fails["verdict"] == "better" and fails["after_hi"] < fails["before_lo"]
    assert _metric(c, "failures_per_1000_gpu_days", "gpu_fell_off_bus")["verdict"] == "better"
    mfu = _metric(c, "steady_mfu")
    assert mfu["after"] == pytest.approx(mfu["before"] * 2.0 / 1.6, rel=1e-3) and mfu["verdict"] == "better"
    ettr = _metric(c, "ettr")
    assert ettr["after"] > ettr["before"] and ettr["verdict"] == "better"


def test_a_thin_sample_is_too_small_to_tell(lab: Lab) -> None:
    write_run(lab.con, "tiny", 8, [Attempt(0, 10, [2.0] * 40), Attempt(200, 10, [2.0] * 40, first_step=41)])
    lab.change("c1", T0 + dt.timedelta(seconds=150), "NCCL_IB_TIMEOUT=22")
    c = lab.compare("c1", "NCCL_IB_TIMEOUT=22")
    assert {r["verdict"] for r in c.metrics.filter(pl.col("metric") != "gpu_hours").to_dicts()} == {TOO_SMALL}


def test_change_commands(tmp_path) -> None:
    db = tmp_path / "o.duckdb"
    Lab(db).close()
    res = CliRunner().invoke(main, ["--db", str(db), "change", "add", "--cluster", "c1", "--at", "yesterday",
                                    "--what", "x"])
    assert res.exit_code == 2 and "ISO 8601" in res.output
    res = CliRunner().invoke(main, ["--db", str(db), "change", "add", "--cluster", "c1", "--at",
                                    "2026-11-24T09:00", "--what", "NCCL_IB_TIMEOUT=22"])
    assert res.exit_code == 0 and "change 1 on c1" in res.stdout
    res = CliRunner().invoke(main, ["--db", str(db), "change", "list", "--json"])
    assert json.loads(res.stdout)[0]["what"] == "NCCL_IB_TIMEOUT=22"
    res = CliRunner().invoke(main, ["--db", str(db), "change", "compare", "--cluster", "c1", "--change", "1",
                                    "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["change"]["what"] == "NCCL_IB_TIMEOUT=22"
    res = CliRunner().invoke(main, ["--db", str(db), "change", "compare", "--cluster", "c1", "--change", "99"])
    assert res.exit_code == 2 and "no change" in res.stderr

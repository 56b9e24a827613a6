"""The steady-state breakdown splits the peak-to-steady MFU gap by where the step's time goes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from timelines import Attempt, write_run

from clusterlab import Lab
from clusterlab.account.steady_state import COMPONENTS, NEEDS_RANKS, breakdown
from clusterlab.cli import main

GOLDEN = Path(__file__).parent / "steady_state_golden"  # hand-made per-rank records, expected.json by hand
PEAK_H100_SXM = 989.4e12


def _golden_db(path: Path) -> Path:
    """The golden per-rank sample ingested through the real collector, with run facts for a steady MFU of 0.4."""
    with Lab(path) as lab:
        lab.ingest(GOLDEN / "ranks.jsonl", run="golden")
        lab.con.execute("INSERT OR REPLACE INTO clusters (cluster, provider, gpu) VALUES ('gc', 'gp', 'H100 SXM')")
        # 1,000 tokens a 1.0 s step on 4 GPUs at 40 % of peak
        lab.con.execute("""INSERT OR REPLACE INTO runs (run, cluster, gpus, tokens_per_step, flops_per_token)
                           VALUES ('golden', 'gc', 4, 1000, ?)""", [0.4 * 4 * PEAK_H100_SXM / 1000])
    return path


@pytest.fixture(scope="module")
def golden_db(tmp_path_factory) -> Path:
    return _golden_db(tmp_path_factory.mktemp("steady") / "g.duckdb")


def _close(got: dict, want: dict) -> None:
    for k, v in want.items():
        assert math.isclose(got[k], v, abs_tol=1e-6), (k, got[k], v)


def test_golden_breakdown_overall_per_host_and_over_time(golden_db: Path) -> None:
    want = json.loads((GOLDEN / "expected.json").read_text())
    with Lab(golden_db, read_only=True) as lab:
        a = lab.attribute("golden")
        assert math.isclose(a.steady_mfu, want["steady_mfu"], rel_tol=1e-9)
        s = breakdown(lab.con, "golden", a.steady_mfu, bins=2)
    _close(dict(zip(s.overall["component"], s.overall["mfu_points"], strict=True)), want["overall"])
    for host, points in want["by_host"].items():
        _close(s.by_host.filter(pl.col("host") == host).row(0, named=True), points)
    assert s.over_time.height == len(want["over_time_2_bins"])
    for got, expected in zip(s.over_time.to_dicts(), want["over_time_2_bins"], strict=True):
        _close(got, expected)
    # every view adds up to the gap between peak and steady-state MFU
    for frame in (s.by_host, s.over_time):
        assert frame.select(pl.sum_horizontal(COMPONENTS)).to_series().to_list() == pytest.approx([60.0] * frame.height)
    assert s.notes == []


def test_records_whose_regions_overrun_their_step_are_named_and_left_out(tmp_path: Path) -> None:
    bad = tmp_path / "ranks.jsonl"
    lines = (GOLDEN / "ranks.jsonl").read_text().splitlines()
    rec = json.loads(lines[0]) | {"comm_s": 5.0}
    bad.write_text("\n".join([json.dumps(rec), *lines[1:]]) + "\n")
    with Lab(tmp_path / "b.duckdb") as lab:
        lab.ingest(bad, run="golden")
        s = breakdown(lab.con, "golden", 0.4, bins=2)
    assert any("ranks.jsonl line 1" in n for n in s.notes)
    assert s.by_host.filter(pl.col("host") == "gpu-a")["records"].item() == 23


def test_a_run_with_only_log_lines_says_it_needs_per_rank_records(lab: Lab) -> None:
    write_run(lab.con, "logonly", 8, [Attempt(0, 10, [2.0] * 20)])
    s = breakdown(lab.con, "logonly", lab.attribute("logonly").steady_mfu)
    assert not s.available and s.notes == [NEEDS_RANKS]


def test_attribute_json_carries_the_breakdown_and_the_plot_draws(golden_db: Path) -> None:
    res = CliRunner().invoke(main, ["--db", str(golden_db), "attribute", "--run", "golden", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)["steady_state"]
    points = {r["component"]: r["mfu_points"] for r in doc["overall"]}
    assert sum(points.values()) == pytest.approx(60.0) and doc["notes"] == []
    import matplotlib

    matplotlib.use("Agg")
    with Lab(golden_db, read_only=True) as lab:
        ax = lab.steady_state("golden").plot()
    assert len(ax.patches) == len(COMPONENTS) * len(doc["over_time"])

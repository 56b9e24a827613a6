"""The simulator's round trip with telemetry: each straggler's throttling GPU is found as gpu_throttle on its host
and GPU, and the hot GPU beside it (a decoy) is never blamed."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from clusterlab import Lab
from clusterlab.simulator.cli import simulate as simulate_command
from clusterlab.simulator.score import score


@pytest.mark.slow
def test_simulated_throttling_gpus_are_found_and_hot_ones_are_not_blamed(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    res = CliRunner().invoke(simulate_command, ["--out", str(bundle), "--seed", "3", "--providers", "1",
                                                "--clusters-per-provider", "1", "--nodes-per-cluster", "4",
                                                "--days", "0.15", "--telemetry"])
    assert res.exit_code == 0, res.output
    truth = json.loads((bundle / "truth.json").read_text())
    amended = [i for i in truth["incidents"] if i["failure_mode"] == "gpu_throttle"]
    assert amended, "the scenario guarantees a straggler"
    assert {d["kind"] for d in truth["decoys"]} == {"hot_gpu"}
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(bundle)
        s = score(lab, bundle)
        found = pl.concat([lab.attribute(run).incidents for run in truth["runs"]], how="diagonal_relaxed")
    assert not [m for m in s.missed if m["failure_mode"] == "gpu_throttle"], s.report()
    assert not s.decoys_blamed, s.report()
    throttled = found.filter(pl.col("failure_mode") == "gpu_throttle")
    want = {(i["run"], i["attempt"], i["host"], i["gpu"]) for i in amended}
    assert set(throttled.select("run", "attempt", "host", "gpu").iter_rows()) == want

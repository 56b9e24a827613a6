"""The simulator's round trip with telemetry: each straggler's throttling GPU is found as gpu_throttle on its host
and GPU, the hot GPU beside it (a decoy) is never blamed, and each bulk transfer's slow stretch is put on the
filesystem with its figures and the outside host that moved the data."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from clusterlab import Lab
from clusterlab.cli.simulate import simulate as simulate_command
from clusterlab.simulator.score import score


@pytest.mark.slow
def test_simulated_throttling_gpus_and_transfers_are_found_and_hot_gpus_are_not_blamed(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    # seed 35: a guaranteed straggler and two job-wide slowdowns (9 % and 6 % of the step) in one attempt
    res = CliRunner().invoke(simulate_command, ["--out", str(bundle), "--seed", "35", "--providers", "1",
                                                "--clusters-per-provider", "1", "--nodes-per-cluster", "4",
                                                "--days", "0.15", "--telemetry"])
    assert res.exit_code == 0, res.output
    truth = json.loads((bundle / "truth.json").read_text())
    amended = [i for i in truth["incidents"] if i["failure_mode"] == "gpu_throttle"]
    assert amended, "the scenario guarantees a straggler"
    transfers = [i for i in truth["incidents"] if i.get("cause") == "bulk_transfer"]
    assert len(transfers) == 2, "each noticeable slowdown is a bulk transfer in the truth"
    assert {d["kind"] for d in truth["decoys"]} == {"hot_gpu"}
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(bundle)
        s = score(lab, bundle)
        found = pl.concat([lab.attribute(run).incidents for run in truth["runs"]], how="diagonal_relaxed")
        slow = found.filter(pl.col("kind") == "slowdown")
        evidence = {i: lab.evidence(i)["text"].to_list() for i in slow["incident_id"]}
    assert not [m for m in s.missed if m["failure_mode"] in ("gpu_throttle", "filesystem_io")], s.report()
    assert not s.decoys_blamed, s.report()
    throttled = found.filter(pl.col("failure_mode") == "gpu_throttle")
    want = {(i["run"], i["attempt"], i["host"], i["gpu"]) for i in amended}
    assert set(throttled.select("run", "attempt", "host", "gpu").iter_rows()) == want
    assert set(slow.select("run", "attempt", "failure_mode", "host").iter_rows()) == {
        (i["run"], i["attempt"], "filesystem_io", i["host"]) for i in transfers}
    for x in transfers:
        row = slow.filter(pl.col("host") == x["host"], (pl.col("first_step") - x["steps"][0]).abs() <= 2)
        assert row.height == 1, (x, slow)
        text = evidence[row["incident_id"][0]][0]
        assert "NFS throughput" in text and "x its usual" in text, text
        assert f"traffic from hosts outside the job: {x['outside_host']} (" in text, text

"""The simulator's round trip with error counters: an attempt that died of a GPU fault has its culprit GPU's counter
climbing in DCGM's scrapes before it (clusterlab.simulator.telemetry), and attribution finds the fault on the right
host with that GPU named and the counters among its evidence."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from clusterlab import Lab, telemetry
from clusterlab.simulator import simulate
from clusterlab.simulator.score import score
from clusterlab.simulator.telemetry import add_telemetry


@pytest.mark.slow
def test_simulated_gpu_faults_are_backed_by_their_gpus_counters(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    # seed 2: one attempt ends of an uncorrectable ECC error, the next of a GPU that fell off the bus
    simulate(bundle, seed=2, providers=1, clusters_per_provider=1, nodes_per_cluster=2, days=0.1,
             rates={"gpu_memory_ecc": 0.03, "gpu_fell_off_bus": 0.03}, scenarios=False)
    add_telemetry(bundle, seed=2)
    truth = json.loads((bundle / "truth.json").read_text())
    faults = [i for i in truth["incidents"] if i.get("counters")]
    assert {i["failure_mode"] for i in faults} == {"gpu_memory_ecc", "gpu_fell_off_bus"}
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(bundle)
        s = score(lab, bundle)
        found = pl.concat([lab.attribute(run).incidents for run in truth["runs"]], how="diagonal_relaxed")
        evidence = {i: lab.evidence(i) for i in found["incident_id"]}
    assert not [m for m in s.missed if m.get("counters")], s.report()
    for f in faults:
        row = found.filter(pl.col("kind") == "attempt_end", pl.col("run") == f["run"],
                           pl.col("attempt") == f["attempt"]).row(0, named=True)
        assert (row["failure_mode"], row["host"], row["gpu"]) == (f["failure_mode"], f["host"], f["counters"]["gpu"])
        assert row["confidence"] > 0.9, row  # the log's cause, backed up
        counters = evidence[row["incident_id"]].filter(pl.col("source") == "telemetry")
        assert counters.height and set(counters["host"]) == {f["host"]}
        metric = telemetry.PROMETHEUS[f["counters"]["metric"]].name
        assert set(counters["kind"]) == {f"{metric}_rising"}

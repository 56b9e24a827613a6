"""Silent data corruption: one host's rank goes non-finite while its peers' losses stay finite on the same steps;
a model that diverges goes non-finite on every rank at once and stays the user's loss divergence."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

import polars as pl
import pytest

from clusterlab import Lab, taxonomy

T0 = dt.datetime(2026, 12, 2, 9, 0, 0, tzinfo=dt.UTC)
HOSTS = {"sdc-a": range(0, 4), "sdc-b": range(4, 8)}


def _end(tmp_path: Path, bad_ranks: set[int], from_step: int = 40, steps: int = 60) -> dict:
    """8 ranks record their own loss for `steps` steps; `bad_ranks` record a non-finite loss from `from_step`."""
    att = tmp_path / "bundle" / "runs" / "sdcrun" / "attempt-1"
    att.mkdir(parents=True)
    lines = []
    for host, ranks in HOSTS.items():
        for r in ranks:
            for step in range(1, steps + 1):
                rec = {"ts": (T0 + dt.timedelta(seconds=5 * step)).timestamp(), "rank": r, "host": host, "step": step,
                       "step_s": 5.0, "compute_s": 4.5, "comm_s": 0.5}
                if r in bad_ranks and step >= from_step:
                    rec["loss_nonfinite"] = True
                else:
                    rec["loss"] = round(3.0 - 0.01 * step + 0.001 * r, 4)
                lines.append(json.dumps(rec))
    (att / "steps.jsonl").write_text("\n".join(lines) + "\n")
    with Lab(tmp_path / "s.duckdb") as lab:
        lab.ingest(tmp_path / "bundle")
        inc = lab.incidents("sdcrun").filter(pl.col("kind") == "attempt_end")
        assert inc.height == 1, inc
        return inc.row(0, named=True)


def test_one_rank_non_finite_while_its_peers_stay_finite_is_silent_data_corruption_on_its_host(tmp_path) -> None:
    end = _end(tmp_path, {5})
    assert (end["failure_mode"], end["host"], end["rank"]) == ("silent_data_corruption", "sdc-b", 5), end
    assert end["blame"] == "provider" and not math.isnan(end["confidence"])
    assert taxonomy.mode("silent_data_corruption").blame == "provider"


@pytest.mark.parametrize("bad", [set(range(8)), {1, 6}], ids=["every-rank-at-once", "ranks-of-two-hosts"])
def test_non_finite_losses_on_every_rank_or_on_several_hosts_stay_a_loss_divergence(tmp_path, bad) -> None:
    assert _end(tmp_path, bad)["failure_mode"] == "loss_divergence"

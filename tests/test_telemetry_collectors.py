"""Telemetry collectors: counters become rates that never go negative across resets; each format is claimed by its
own collector only; garbage is counted, never a traceback. (The golden samples, with their provenance, are in
data_samples/{prometheus_text,prometheus_range,nvidia_smi_csv,dcgmi_dmon}/ and run in test_golden.py.)"""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterlab import telemetry
from clusterlab.collectors import all_collectors
from clusterlab.collectors._base import Context
from conftest import SAMPLES

T0 = dt.datetime(2026, 11, 24, 8, 0)
FORMATS = {"prometheus_text": "prometheus_text/dcgm_exporter_scrapes.txt",
           "prometheus_range": "prometheus_range/query_range_dcgm.txt",
           "nvidia_smi_csv": "nvidia_smi_csv/query_gpu_loop.log", "dcgmi_dmon": "dcgmi_dmon/dmon_ts_loop.log"}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**12), st.booleans()), min_size=2, max_size=40))
def test_counter_rates_never_go_negative_and_add_up_across_resets(steps: list[tuple[int, bool]]) -> None:
    """A counter that grows by `inc` a scrape, or restarts from zero and counts `inc` (reset), every 15 s."""
    values, v, counted = [], 0, 0
    for i, (inc, reset) in enumerate(steps):
        # NOTE: a reset is only visible when the counter comes back lower (as for Prometheus' rate())
        v = inc if reset and inc < v else v + inc
        counted += inc if i else 0
        values.append(float(v))
    samples = pl.DataFrame({"line": range(1, len(values) + 1), "ts": [T0 + dt.timedelta(seconds=15 * i)
                            for i in range(len(values))], "host": "h", "device": "mlx5_0/1",
                            "name": "node_infiniband_port_data_received_bytes_total", "value": values})
    out = telemetry.to_rows(samples, telemetry.PROMETHEUS)
    assert out.filter(pl.col("metric") == "ib_rx_bytes_total")["value"].to_list() == values
    rows = out.filter(pl.col("metric") == "ib_rx_bytes_per_s")
    assert rows.height == len(values) - 1 and (rows["value"] >= 0).all()
    assert rows["value"].sum() * 15 == pytest.approx(counted, rel=1e-9, abs=1e-6)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_each_telemetry_format_is_claimed_by_its_own_collector_only(name: str) -> None:
    path = SAMPLES / FORMATS[name]
    head = path.read_bytes()[:65536]
    claimed = [c.NAME for c in all_collectors() if c.sniff(head, str(path))]
    assert claimed == [name]


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_garbage_in_a_telemetry_format_is_counted_not_raised(name: str) -> None:
    mod = next(c for c in all_collectors() if name == c.NAME)
    header = (SAMPLES / FORMATS[name]).read_text().splitlines()[0]
    junk = ["GPU 0 x y z", "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\" 5", "2026/13/45 99:99:99, 0, zz", "{\"data\": [",
            "\x00\x01 <script>alert(1)</script>", "#Entity SMCLK", "2026-11-24T10:00:00 GPU 0 N/A"]
    lines = pl.DataFrame({"line": range(1, len(junk) + 1), "text": junk}, schema={"line": pl.Int64,
                                                                                 "text": pl.String})
    out = mod.parse(lines, Context(path="junk", host="h", header=header))
    rows = out.tables.get("telemetry", pl.DataFrame())
    assert rows.height == 0 or rows["value"].is_finite().all()

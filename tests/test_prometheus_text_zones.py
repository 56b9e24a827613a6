"""Scrape times of a node exporter / dcgm-exporter loop on a host whose clock is not UTC.

A loop that stamps scrapes with `date +"# %FT%T"` (no `-u`, no offset) prints the node's local time; one with
`date -u +"# %FT%TZ"` prints UTC. Both may reach one file (a loop fixed halfway through). The format is the
Prometheus text exposition format (https://prometheus.io/docs/instrumenting/exposition_formats/).
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from clusterlab.collectors import prometheus_text
from clusterlab.collectors._base import Context

SCRAPES = """\
# 2026-11-24T09:00:00
# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-1",pci_bus_id="00000000:18:00.0",device="nvidia0",Hostname="n-001"} 61
# 2026-11-24T08:00:15Z
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-1",pci_bus_id="00000000:18:00.0",device="nvidia0",Hostname="n-001"} 62
"""


def _times(tz: str) -> list[dt.datetime]:
    text = SCRAPES.splitlines()
    lines = pl.DataFrame({"line": range(1, len(text) + 1), "text": text}, schema={"line": pl.Int64, "text": pl.String})
    got = prometheus_text.parse(lines, Context(path="scrapes.txt", tz=tz)).tables["telemetry"]
    return got.filter(pl.col("metric") == "gpu_temp_c").sort("line")["ts"].to_list()


def test_local_and_utc_scrape_times_in_one_file_are_both_utc() -> None:
    # Berlin is UTC+1 in November: the local 09:00:00 scrape is 08:00:00 UTC, 15 s before the UTC one
    assert _times("Europe/Berlin") == [dt.datetime(2026, 11, 24, 8, 0, 0), dt.datetime(2026, 11, 24, 8, 0, 15)]
    assert _times("UTC") == [dt.datetime(2026, 11, 24, 9, 0, 0), dt.datetime(2026, 11, 24, 8, 0, 15)]

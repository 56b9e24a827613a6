"""Corrected PCIe AER errors: a healthy link's noise, or a flood from one device that is a link fault (the kernel
collector's `aer` family)."""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import file_of_line

# Corrected AER reports from one device within AER_FLOOD_S of each other (undated: in one read of a file) that make a
# link fault (an error). NOTE: a NIC that reports one every few hours for days is a healthy link's noise, not a flood.
AER_FLOOD, AER_FLOOD_S = 3, 600


def aer_flood(part: pl.DataFrame) -> pl.DataFrame:
    """Corrected PCIe errors are PCIe errors the link coped with: warnings, unless one device reports them again
    and again (AER_FLOOD reports within AER_FLOOD_S), which is a link fault (an error)."""
    # NOTE: a stream of them from the same port (replay timeouts, bad TLPs) is a degraded link or riser, the usual
    # prelude of a GPU falling off the bus; a lone one (ASPM quirks print them by the thousand) says nothing.
    corrected = pl.col("failure_mode").is_null()
    dev = pl.coalesce("adev", "asrc")
    # one report is a header (`AER: Corrected error received`) and its `PCIe Bus Error` line, each naming the device
    # or the port above it: a device's reports are the more numerous of the two kinds of line
    # the time in microseconds (undated lines: one window, the whole read), looking back, and negated looking ahead
    us = pl.col("ts").dt.epoch("us").fill_null(0)
    window = f"{int(AER_FLOOD_S * 1e6)}i"
    group = (file_of_line(), dev)
    # a report ends a flood where the window before it holds AER_FLOOD; every report within the window before such an
    # end is in that flood (a later end within AER_FLOOD_S of a line: looking ahead from it)
    ends = pl.max_horizontal(*[(corrected & (pl.col("kind") == k)).cast(pl.Int32).rolling_sum_by(
        "_back", window).over(*group) for k in ("pcie_aer", "pcie_bus_error")]) >= AER_FLOOD
    part = part.with_columns(_back=us, _ahead=-us).with_columns(_end=ends.cast(pl.Int32))
    flood = corrected & dev.is_not_null() & (pl.col("_end").rolling_max_by("_ahead", window).over(*group) >= 1)
    # NOTE: a lone one is still a PCIe error to whoever reads the excerpt: its mode, as a warning, which root cause
    # ranks as a symptom (incidents.TIERS); a flood is an error
    return part.with_columns(
        failure_mode=pl.when(corrected).then(pl.lit("pcie_error")).otherwise(pl.col("failure_mode")),
        severity=pl.when(flood).then(pl.lit("error")).otherwise(pl.col("severity"))).drop("_back", "_ahead", "_end")

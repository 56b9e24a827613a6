"""Telemetry samples, whatever exporter wrote them, as one long table: one name per quantity, counters as rates.

Every telemetry collector reads its format into `samples` (line, ts, host, gpu, bus_id, device, name, value)
with the exporter's own metric name, and `to_rows` turns them into `telemetry` rows: the name becomes the
canonical metric below, gauges are kept as they are, and counters (bytes, error counts) become per-second
rates between consecutive samples of one series (`..._per_s`; the reading itself is kept as `..._total`).
A counter that went down was reset (a driver reload, a
reboot, an exporter restart): it restarted from zero, so the increase since the reset is its new value,
never a negative rate.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from clusterlab.tables import TABLE_COLUMNS

# NVML's clock throttle (since driver 535: "clocks event") reason bits, the same in DCGM's
# DCGM_CLOCKS_THROTTLE_REASON_* / DCGM_CLOCKS_EVENT_REASON_* macros and nvidia-smi's
# `clocks_throttle_reasons.active` (docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html).
THROTTLE_BITS: dict[str, int] = {
    "gpu_idle": 0x1,
    "applications_clocks_setting": 0x2,
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sync_boost": 0x10,
    "sw_thermal_slowdown": 0x20,
    "hw_thermal_slowdown": 0x40,
    "hw_power_brake_slowdown": 0x80,
    "display_clock_setting": 0x100,
}
# The reasons that mean the hardware slowed the GPU down against the job's will: heat, the power brake
# of the board or chassis, the HW slowdown line. A power cap or an idle GPU is no fault.
FAULT_THROTTLE_MASK = (THROTTLE_BITS["hw_slowdown"] | THROTTLE_BITS["sw_thermal_slowdown"]
                       | THROTTLE_BITS["hw_thermal_slowdown"] | THROTTLE_BITS["hw_power_brake_slowdown"])


@dataclass(frozen=True)
class Metric:
    name: str  # canonical name in the telemetry table
    counter: bool = False  # a monotonic counter: stored as a per-second rate
    scale: float = 1.0  # multiplies the exporter's value (kB/s -> bytes/s, ...)


_SM = Metric("sm_clock_mhz")
_MEM = Metric("mem_clock_mhz")
_TEMP = Metric("gpu_temp_c")
_POWER = Metric("power_w")
_UTIL = Metric("gpu_util_pct")
_THROTTLE = Metric("throttle_reasons")  # bitmask of THROTTLE_BITS
_XID = Metric("xid_last")  # DCGM: the last Xid seen (a gauge, 0 when none)
_DBE = Metric("ecc_dbe_per_s", counter=True)
_SBE = Metric("ecc_sbe_per_s", counter=True)
_REPLAY = Metric("pcie_replay_per_s", counter=True)
_NVL_CRC = Metric("nvlink_crc_errors_per_s", counter=True)

# The exporter's metric name -> canonical metric. Prometheus names: dcgm-exporter's default counters
# (github.com/NVIDIA/dcgm-exporter/blob/main/etc/default-counters.csv) and node exporter's collectors
# (github.com/prometheus/node_exporter: diskstats, infiniband, mountstats, netdev).
PROMETHEUS: dict[str, Metric] = {
    "DCGM_FI_DEV_SM_CLOCK": _SM,
    "DCGM_FI_DEV_MEM_CLOCK": _MEM,
    "DCGM_FI_DEV_GPU_TEMP": _TEMP,
    "DCGM_FI_DEV_POWER_USAGE": _POWER,
    "DCGM_FI_DEV_GPU_UTIL": _UTIL,
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": _THROTTLE,
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": _THROTTLE,
    "DCGM_FI_DEV_XID_ERRORS": _XID,
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": _DBE,
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": _SBE,
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": _REPLAY,
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": _NVL_CRC,
    "node_mountstats_nfs_read_bytes_total": Metric("nfs_read_bytes_per_s", counter=True),
    "node_mountstats_nfs_write_bytes_total": Metric("nfs_write_bytes_per_s", counter=True),
    "node_disk_read_bytes_total": Metric("disk_read_bytes_per_s", counter=True),
    "node_disk_written_bytes_total": Metric("disk_write_bytes_per_s", counter=True),
    "node_infiniband_port_data_received_bytes_total": Metric("ib_rx_bytes_per_s", counter=True),
    "node_infiniband_port_data_transmitted_bytes_total": Metric("ib_tx_bytes_per_s", counter=True),
    "node_network_receive_bytes_total": Metric("net_rx_bytes_per_s", counter=True),
    "node_network_transmit_bytes_total": Metric("net_tx_bytes_per_s", counter=True),
}
# `nvidia-smi --query-gpu` field names (`nvidia-smi --help-query-gpu`), units stripped from the header.
NVIDIA_SMI: dict[str, Metric] = {
    "clocks.sm": _SM, "clocks.current.sm": _SM,
    "clocks.mem": _MEM, "clocks.current.memory": _MEM,
    "temperature.gpu": _TEMP,
    "power.draw": _POWER, "power.draw.instant": _POWER,
    "utilization.gpu": _UTIL,
    "clocks_throttle_reasons.active": _THROTTLE, "clocks_event_reasons.active": _THROTTLE,
    "pcie.link.gen.current": Metric("pcie_link_gen"),
    "pcie.link.width.current": Metric("pcie_link_width"),
}
# `dcgmi dmon` column short names (DCGM's dcgmlib/src/dcgm_fields.cpp: each field's "tag").
DCGMI_DMON: dict[str, Metric] = {
    "SMCLK": _SM, "MMCLK": _MEM, "TMPTR": _TEMP, "POWER": _POWER, "GPUTL": _UTIL, "DVCCTR": _THROTTLE,
    "RPCTR": _REPLAY, "XIDER": _XID,
}

# Groups of metrics that measure one shared service's throughput (attribution: saturation).
THROUGHPUT: dict[str, tuple[str, ...]] = {
    "filesystem": ("nfs_read_bytes_per_s", "nfs_write_bytes_per_s"),
    "disk": ("disk_read_bytes_per_s", "disk_write_bytes_per_s"),
    "fabric": ("ib_rx_bytes_per_s", "ib_tx_bytes_per_s"),
}

SAMPLE_SCHEMA: dict[str, pl.DataType] = {
    "line": pl.Int64, "ts": pl.Datetime("us"), "host": pl.String, "gpu": pl.Int32, "bus_id": pl.String,
    "device": pl.String, "name": pl.String, "value": pl.Float64,
}


def catalogue(names: dict[str, Metric]) -> pl.DataFrame:
    """The exporter-name -> metric table of one format, to join samples with."""
    return pl.DataFrame({
        "name": list(names), "metric": [m.name for m in names.values()],
        "counter": [m.counter for m in names.values()], "scale": [m.scale for m in names.values()],
    }, schema={"name": pl.String, "metric": pl.String, "counter": pl.Boolean, "scale": pl.Float64})


def bus_id(printed: pl.Expr) -> pl.Expr:
    """`0000:5d:00`, the spelling of the events table's pci_bus, from `00000000:5D:00.0` (null: not a bus id)."""
    g = printed.str.strip_chars().str.to_lowercase().str.extract_groups(
        r"^(?P<dom>[0-9a-f]{4,8}):(?P<b>[0-9a-f]{2}):(?P<d>[0-9a-f]{2})")
    return pl.concat_str([g.struct.field("dom").str.slice(-4), g.struct.field("b"), g.struct.field("d")],
                         separator=":")


def bus_ids(printed: pl.Series) -> pl.Series:
    """`bus_id` of each value, each distinct spelling parsed once: a file repeats its few GPUs' ids on every line."""
    # NOTE: the regex per row was a fifth of an nvidia-smi loop's parse; a lookup of 8 spellings costs a fraction
    distinct = printed.unique().drop_nulls()
    parsed = distinct.to_frame("printed").select(bus_id(pl.col("printed"))).to_series()
    return printed.replace_strict(distinct, parsed, default=None, return_dtype=pl.String)


def to_rows(samples: pl.DataFrame, names: dict[str, Metric], apart: pl.Expr | None = None) -> pl.DataFrame:
    """`telemetry` rows from samples in the exporter's names: known metrics only, counters as read and as rates.

    A counter's first sample in the frame has no rate (nothing before it to compare with) and is left out.
    `apart`: an expression of the samples' columns whose values are never compared (a collector's
    `file_of_line()`, where many files are parsed together: a rate never spans two files)."""
    schema = TABLE_COLUMNS["telemetry"]
    known = (samples.select([pl.col(c).cast(t) if c in samples.columns else pl.lit(None, t).alias(c)
                             for c, t in SAMPLE_SCHEMA.items()])
             .join(catalogue(names), on="name", how="inner")
             .filter(pl.col("value").is_finite()))
    if not known.height:
        return pl.DataFrame(schema=schema)
    value = pl.col("value") * pl.col("scale")
    gauges = known.filter(~pl.col("counter")).with_columns(value=value)
    counted = known.filter(pl.col("counter")).with_columns(value=value)
    # NOTE: the counter as printed is kept too (`..._total`): a rate needs the sample before it, which a cut
    # or garbled scrape may have lost; the reading itself never depends on another line.
    cols = list(schema)
    parts = [gauges.select(cols)]
    if counted.height:  # NOTE: rates of no counters still cost a sort and a window (a tenth of a GPU file's parse)
        raw = counted.with_columns(metric=pl.col("metric").str.replace(r"_per_s$", "_total"))
        parts += [raw.select(cols), rates(counted, apart).select(cols)]
    return pl.concat(parts, how="vertical_relaxed").sort("line", "metric")


def rates(counters: pl.DataFrame, apart: pl.Expr | None = None) -> pl.DataFrame:
    """Per-second rates of counter samples between consecutive samples of each series (of each value of `apart`,
    see `to_rows`); resets never go below zero."""
    series = ["host", "gpu", "device", "metric"]
    s = counters.filter(pl.col("ts").is_not_null())
    if apart is not None:
        s = s.with_columns(apart.alias("_apart"))
        series = ["_apart", *series]
    s = s.sort([*series, "ts", "line"], nulls_last=True)
    prev_v = pl.col("value").shift(1).over(series)
    prev_t = pl.col("ts").shift(1).over(series)
    dt_s = (pl.col("ts") - prev_t).dt.total_microseconds() / 1e6
    # NOTE: a counter that went down restarted from zero: what it counted since is its value now
    increase = pl.when(pl.col("value") >= prev_v).then(pl.col("value") - prev_v).otherwise(pl.col("value"))
    return (s.with_columns(value=(increase / dt_s).clip(lower_bound=0.0), _dt=dt_s)
            .filter(pl.col("_dt") > 0, pl.col("value").is_not_null()).drop("_dt", "_apart", strict=False))


def throttle_names(mask: int) -> list[str]:
    """The names of the reason bits set in `mask`."""
    return [n for n, b in THROTTLE_BITS.items() if mask & b]

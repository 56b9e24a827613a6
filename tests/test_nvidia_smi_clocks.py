"""nvidia-smi -q snapshots carry the clock state: throttle reasons, SM clock, temperature become telemetry, so a GPU
throttled by heat that only a saved `nvidia-smi -q` shows can explain a straggler (diagnose.telemetry_incidents)."""

from __future__ import annotations

import polars as pl

from clusterlab import telemetry
from clusterlab.collectors import nvidia_smi
from clusterlab.collectors._base import Context

# an older driver's spelling (`Clocks Throttle Reasons`), two GPUs: the second is held down by the power brake
REPORT = """==============NVSMI LOG==============

Timestamp                                 : Wed Mar 11 14:22:05 2026
Driver Version                            : 525.85.12
CUDA Version                              : 12.0

Attached GPUs                             : 2
GPU 00000000:07:00.0
    Product Name                          : NVIDIA A100-SXM4-80GB
    Utilization
        Gpu                               : 0 %
        Memory                            : 0 %
    Clocks Throttle Reasons
        Idle                              : Active
        Applications Clocks Setting       : Not Active
        SW Power Cap                      : Not Active
        HW Slowdown                       : Not Active
            HW Thermal Slowdown           : Not Active
            HW Power Brake Slowdown       : Not Active
        Sync Boost                        : Not Active
        SW Thermal Slowdown               : Not Active
        Display Clock Setting             : Not Active
    Temperature
        GPU Current Temp                  : 29 C
    Power Readings
        Power Draw                        : 61.20 W
    Clocks
        Graphics                          : 210 MHz
        SM                                : 210 MHz
    Max Clocks
        SM                                : 1410 MHz
GPU 00000000:0F:00.0
    Product Name                          : NVIDIA A100-SXM4-80GB
    Utilization
        Gpu                               : 97 %
    Clocks Throttle Reasons
        Idle                              : Not Active
        Applications Clocks Setting       : Not Active
        SW Power Cap                      : Not Active
        HW Slowdown                       : Active
            HW Thermal Slowdown           : Not Active
            HW Power Brake Slowdown       : Active
        Sync Boost                        : Not Active
        SW Thermal Slowdown               : Not Active
        Display Clock Setting             : Not Active
    Temperature
        GPU Current Temp                  : 71 C
    Power Readings
        Power Draw                        : 188.04 W
    Clocks
        SM                                : 705 MHz
    Max Clocks
        SM                                : 1410 MHz
"""


def _telemetry(text: str) -> pl.DataFrame:
    lines = pl.DataFrame({"line": range(1, len(text.splitlines()) + 1), "text": text.splitlines()},
                         schema={"line": pl.Int64, "text": pl.String})
    lines = lines.filter(pl.col("text").str.contains(nvidia_smi.PATTERN))
    out = nvidia_smi.parse(lines, Context(path="smi-q.txt", host="a100-n3", tz="UTC"))
    return out.tables.get("telemetry", pl.DataFrame(schema=telemetry.SAMPLE_SCHEMA))


def test_throttle_reasons_clock_and_temperature_per_gpu_index():
    t = _telemetry(REPORT)
    got = {(r["gpu"], r["metric"]): r["value"] for r in t.iter_rows(named=True)}
    bits = telemetry.THROTTLE_BITS
    assert got[0, "throttle_reasons"] == bits["gpu_idle"]
    assert got[1, "throttle_reasons"] == bits["hw_slowdown"] | bits["hw_power_brake_slowdown"]
    # the current SM clock, not the `Max Clocks` one
    assert (got[0, "sm_clock_mhz"], got[1, "sm_clock_mhz"]) == (210.0, 705.0)
    assert (got[1, "gpu_temp_c"], got[1, "gpu_util_pct"], got[1, "power_w"]) == (71.0, 97.0, 188.04)
    assert set(t["bus_id"]) == {"0000:07:00", "0000:0f:00"} and set(t["host"]) == {"a100-n3"}
    assert t["ts"].dt.strftime("%Y-%m-%d %H:%M:%S").unique().to_list() == ["2026-03-11 14:22:05"]


def test_a_report_without_clock_sections_gives_no_telemetry():
    ecc_only = REPORT.split("GPU 00000000:07:00.0")[0] + "GPU 00000000:07:00.0\n    ECC Errors\n        Volatile\n" \
        "            DRAM Uncorrectable            : 0\n"
    assert _telemetry(ecc_only).height == 0

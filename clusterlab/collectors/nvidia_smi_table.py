"""The default `nvidia-smi` table (what users paste with any GPU question) → events for GPUs it shows in error.

Each GPU takes two rows of the table (three from driver 530 on, the third holding only `MIG M.`), driver 418-595:

    |   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |
    | N/A   31C    P0             71W /  700W |       4MiB /  81559MiB |      0%      Default |

the first: index, name, persistence mode | bus id, display active | volatile uncorrectable ECC count; the second:
fan, temperature, performance state, power | memory | utilisation, compute mode. NVML's error for a field is
printed `ERR!` in it (a GPU that no longer answers for its fan, power or counters: the driver asks for a reset or
worse); a volatile uncorrectable ECC count above zero is an uncorrectable error since the driver loaded. A table
of healthy GPUs (`Off`, `N/A`, `0`) gives no event. The table names no host and prints its date above the header
only: the events keep the bundle's host and no time.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, file_of_line, json_detail, search

NAME = "nvidia_smi_table"
EXCLUSIVE = False

# a GPU's first row: `|   0  <name>  On  |   00000000:18:00.0 Off |   <ecc> |` (a name cut to `...`)
_GPU_ROW = (r"^\|\s+(\d{1,3})\s+(.+?)\s+(?:On|Off|ERR!)\s+\|\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)"
            r"\s+(?:On|Off|ERR!|N/A)\s+\|\s*(\S+)\s*\|")
# its second: `| N/A   31C    P0   71W /  700W |   4MiB /  81559MiB |   0%   Default |` (fan first)
_STATS_ROW = r"^\|\s*(?:N/A|ERR!|\d+%)\s+(?:\d+C|ERR!|N/A)\s+(?:P\d+|ERR!|N/A)\s+.*\|\s*(?:\d+|ERR!|N/A)\s*MiB\s*/"
PATTERN = f"{_GPU_ROW}|{_STATS_ROW}"
SNIFF_HINT = (b"mib /",)


def sniff(head: bytes, path: str) -> bool:
    """A GPU's first or second row of the table in the head (a paste may start at any row)."""
    return search(head.decode("utf-8", "replace").splitlines()[:400], PATTERN)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """An event per GPU row whose ECC count is above zero and per row of a GPU that shows `ERR!`."""
    out = Parsed()
    text = pl.col("text")
    gpu = text.str.extract_groups(_GPU_ROW)
    f = lines.sort("line").with_columns(
        _idx=gpu.struct.field("1").cast(pl.Int32, strict=False), _bus=gpu.struct.field("3"),
        _ecc=gpu.struct.field("4"), _stats=text.str.contains(_STATS_ROW),
    ).with_columns(
        # NOTE: a stats row belongs to the GPU row just above it, in the same file (forward fill)
        pl.col("_idx").forward_fill().over(file_of_line()).alias("_gpu"),
        pl.col("_bus").forward_fill().over(file_of_line()).alias("_gbus"),
    )
    ecc = f["_ecc"].cast(pl.Int64, strict=False) if f.height else pl.Series([], dtype=pl.Int64)
    f = f.with_columns(_eccn=ecc)
    err = text.str.contains(r"(?:^|\s|\|)ERR!(?:\s|\||$)") & (pl.col("_idx").is_not_null() | pl.col("_stats"))
    bad_ecc = (pl.col("_eccn") > 0).fill_null(False)
    hit = f.filter(err | bad_ecc)
    if not hit.height:
        return out
    out.add("events", hit.select(
        pl.col("line").cast(pl.Int64), pl.lit(None, pl.Datetime("us")).alias("ts"),
        pl.lit(ctx.host, pl.String).alias("host"),
        pl.when(bad_ecc).then(pl.lit("smi_uncorrectable_ecc")).otherwise(pl.lit("smi_field_error")).alias("kind"),
        pl.when(bad_ecc).then(pl.lit("gpu_memory_ecc")).otherwise(pl.lit("gpu_hw_other")).alias("failure_mode"),
        pl.lit("error").alias("severity"), text.str.strip_chars().alias("text"),
        json_detail({"gpu": pl.col("_gpu"), "bus_id": pl.col("_gbus"), "volatile_uncorrectable_ecc": pl.col("_eccn"),
                     "via": pl.lit("nvidia-smi table")}).alias("detail"),
    ))
    return out

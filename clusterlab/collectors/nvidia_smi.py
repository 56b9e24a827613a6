"""`nvidia-smi -q` snapshots (whole, or `-d ECC,ROW_REMAPPER,PAGE_RETIREMENT`) → one event per GPU per snapshot.

The report is a header (`==============NVSMI LOG==============`, `Timestamp : Mon Nov 24 08:00:01 2026` in
local time, `Driver Version`), then one block per GPU opened by its bus id (`GPU 00000000:5D:00.0`) and
nested by indentation, four spaces a level:

    GPU 00000000:5D:00.0
        Remapped Rows                          a section
            Pending                     : Yes  a key under it
        ECC Errors
            Volatile
                DRAM Uncorrectable      : 0

The same key means different things in different sections (`Pending` under `ECC Mode`, `MIG Mode`,
`Remapped Rows` or, on older drivers, `Retired Pages`), so every key is read with its section path.
PATTERN keeps only section lines and the keys read here, so a GPU block is a few dozen lines; a block
is never cut between batches (BLOCK_START). A `-l` loop repeats the whole report; each copy is a
snapshot. `Unable to determine the device handle for GPU ...: GPU is lost` is what nvidia-smi prints
for a GPU that fell off the bus. The host is the bundle's (`nodes/<host>/`); the report names none.

What a GPU's state means (NVIDIA's GPU memory error management and debug guidelines):
- `Remapping Failure Occurred: Yes`: the memory could not be repaired; the GPU is replaced (drain).
- `SRAM Threshold Exceeded: Yes` (Hopper and later): uncorrectable SRAM errors past NVIDIA's limit (drain).
- `Remapped Rows / Pending: Yes`, `Pending Page Blacklist: Yes` (or `Retired Pages / Pending: Yes`):
  a row remap or page retirement waits for a GPU reset (reset).
- volatile uncorrectable ECC counts (since the driver loaded) above zero: an uncorrectable error hit the
  running job (reset).
- `GPU Reset Status / Reset Required` or `Drain and Reset Recommended: Yes`, or a `GPU Recovery Action`
  other than None: the driver asks for a reset.
- aggregate (lifetime) counts alone, or rows already remapped with nothing pending, are history: a
  warning without a failure mode. Everything else is a healthy GPU (info).
"""

from __future__ import annotations

import re

import polars as pl

from clusterlab import telemetry
from clusterlab.collectors._base import (
    FILE_LINE_BASE,
    TABLE_COLUMNS,
    Context,
    Parsed,
    file_of_line,
    json_detail,
    local_to_utc,
)

NAME = "nvidia_smi"
FILE_HOST_COLUMN = True  # parsed with other files, the lines carry their file's host (ctx.host) as `file_host`
EXCLUSIVE = True
SNIFF_HINT = (b"nvsmi log", b"unable to determine the device handle", b"driver version")

_BUS = r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]"
_GPU = rf"^GPU (?P<bus>{_BUS})\s*$"
_LOST = rf"^Unable to determine the device handle for GPU ?(?P<lbus>{_BUS}): (?P<why>.*?)\s*$"
_LOG = r"^=+\s*NVSMI LOG\s*=+\s*$"
# a shell prompt running another command than nvidia-smi (`root@gpu-d04:~# dmesg -T`, `$ sudo dmesg`)
_OTHER_COMMAND = re.compile(r"^(?:\S*[$#]|\[[^\]]+\][$#]) +(?!(?:sudo +)?nvidia-smi\b)\S")
_TS = r"^Timestamp\s+: (?:[A-Z][a-z]{2} )?(?P<tstamp>[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d \d{4})\s*$"
# The keys read here (any section: the section path tells them apart).
_KEYS = (r"Product Name|Serial Number|GPU UUID|Pending|Remapping Failure Occurred|Correctable Error|"
         r"Uncorrectable Error|Single Bit ECC|Double Bit ECC|Pending Page Blacklist|Pending Page Retirement|"
         r"(?:SRAM|DRAM) (?:Correctable|Uncorrectable)[\w -]*|SRAM Threshold Exceeded|Total|Reset Required|"
         r"Drain and Reset Recommended|GPU Recovery Action")
# The clock state keys (read as telemetry): the throttle reasons under `Clocks Event Reasons` (driver 535 and
# later; `Clocks Throttle Reasons` before), the SM clock under `Clocks`, the current temperature, the GPU's
# utilisation and power draw (an idle GPU's low clock is no slowdown).
_CLOCK_KEYS = (r"Idle|Applications Clocks Setting|SW Power Cap|HW Slowdown|HW Thermal Slowdown|"
               r"HW Power Brake Slowdown|Sync Boost|SW Thermal Slowdown|Display Clock Setting|SM|"
               r"GPU Current Temp|Gpu|Power Draw")
PATTERN = "|".join([
    _LOG, r"^Timestamp\s+: ", _GPU, r"^Unable to determine the device handle for GPU",
    r"^ {4,}[A-Z][^:]*$",  # a section line: indented, no `key : value`
    rf"^ {{4,}}(?:{_KEYS}) *: ",
    rf"^ {{4,}}(?:{_CLOCK_KEYS}) *: ",
])
# A GPU block, and the snapshot header before it, are read whole: the header's time is the block's.
BLOCK_START = rf"{_LOG}|^Timestamp\s+: |{_GPU}"

_YES, _NO = "yes", "no"
_NOT_THERE = ["n/a", "[n/a]", "not supported", "[not supported]", ""]
# key path (lower case, `/`-joined sections and key) -> what it is
_PENDING_REMAP = "remapped rows/pending"
_REMAP_FAILED = "remapped rows/remapping failure occurred"
_PAGE_PENDING = ["retired pages/pending page blacklist", "retired pages/pending",
                 "retired pages/pending page retirement"]
_SRAM_LIMIT = "ecc errors/aggregate/sram threshold exceeded"
_RESET = "gpu reset status/reset required"
_DRAIN_RESET = "gpu reset status/drain and reset recommended"
_YES_NO = [_PENDING_REMAP, _REMAP_FAILED, *_PAGE_PENDING, _SRAM_LIMIT, _RESET, _DRAIN_RESET]


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802  (a collector's contract names are capitals)
    """What parse() reads of the context (the host is the file's: `file_host`): reports agreeing on it may be
    parsed together (a fleet's nodes each keep a few small ones)."""
    return (ctx.tz,)


def sniff(head: bytes, path: str) -> bool:
    """An nvidia-smi -q report: it starts with the NVSMI LOG banner, a `Timestamp` over a `Driver Version`
    line, or nvidia-smi's message for a GPU it cannot reach."""
    lines = [ln.strip() for ln in head.decode("utf-8", "replace").splitlines()[:20] if ln.strip()]
    if not lines:
        return False
    first = lines[0]
    if first.startswith("=") and first.strip("=").strip() == "NVSMI LOG":
        return True
    if _unreachable_gpu_after_command(lines):
        return True
    return first.startswith("Timestamp") and any(ln.startswith("Driver Version") for ln in lines[1:4])


def _unreachable_gpu_after_command(lines: list[str]) -> bool:
    """nvidia-smi's message for a GPU it cannot reach, first, or pasted after what printed it: the command line
    that ran nvidia-smi (a shell prompt, `docker run ... nvidia-smi`) or the top of its table."""
    # NOTE: anything else before the message (a training log, a kernel log quoting it) is another collector's file
    at = next((i for i, ln in enumerate(lines) if ln.startswith("Unable to determine the device handle for GPU")), None)
    if at is None:
        return False
    # NOTE: a terminal session pasted whole (the scheduler's verdict above the prompt, another command's output after
    # it: `dmesg -T | grep NVRM`) is no nvidia-smi report: its line-oriented collectors read it all
    if any(_OTHER_COMMAND.match(ln) for ln in lines[at + 1:]):
        return False
    return at == 0 or any("nvidia-smi" in ln.lower() for ln in lines[:at])


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One event per GPU block of the batch, and one per GPU nvidia-smi could not reach."""
    out = Parsed()
    rows = _rows(lines, ctx)
    lost = rows.filter(pl.col("lbus").is_not_null())
    out.add("events", _lost_events(lost, ctx))
    keyed = rows.filter(pl.col("key").is_not_null())
    # Keys before the batch's first GPU line belong to a block whose start is not at hand (a block
    # longer than the engine holds back): counted, not guessed.
    out.unparsed_lines = keyed.filter(pl.col("gpu") == 0)["line"]
    out.unparsed = len(out.unparsed_lines)
    gpus = rows.filter(pl.col("gpu") > 0)
    if gpus.height:
        out.add("events", _gpu_events(gpus, ctx))
        clocks = _clock_telemetry(gpus)
        if clocks.height:
            out.add("telemetry", clocks)
    if "events" in out.tables:
        out.tables["events"] = out.tables["events"].sort("line")
    return out


def _rows(lines: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    """The batch's lines with their GPU block, snapshot time, section path, key and value.

    Every relation between lines is within one file (`_f`: many files may be parsed together): a file's first
    keys never belong to the block another file ends with, nor its blocks to that file's `Timestamp`."""
    text = pl.col("text").str.strip_chars_end()
    indent = text.str.len_chars() - text.str.strip_chars_start(" ").str.len_chars()
    level = indent // 4
    own = pl.col("file_host") if "file_host" in lines.columns else pl.lit(ctx.host, pl.String)
    frame = lines.select(
        "line", text.alias("text"), level.alias("level"), own.alias("file_host"), file_of_line().alias("_f"),
        pl.col("text").str.extract(_GPU, 1).alias("bus"),
        pl.col("text").str.extract_groups(_LOST).alias("_l"),
        pl.col("text").str.extract(_TS, 1).alias("tstamp"),
        pl.col("text").str.extract_groups(r"^ +(?P<key>[^:]*?) *: (?P<val>.*?)\s*$").alias("_kv"),
    ).unnest("_l", "_kv")
    section = (frame["key"].is_null() & (frame["level"] >= 1) & frame["bus"].is_null()
               & frame["tstamp"].is_null() & (frame["text"].str.strip_chars() != ""))
    # a block's number: its file's count of blocks so far (0: before the file's first), unique in the group
    block = (pl.col("bus").is_not_null() | pl.col("lbus").is_not_null()
             | pl.col("text").str.contains(_LOG)).cum_sum().over("_f")
    frame = frame.with_columns(
        section=pl.when(section).then(pl.col("text").str.strip_chars().str.to_lowercase()),
        gpu=pl.when(block > 0).then(block + pl.col("_f") * FILE_LINE_BASE).otherwise(0),
        ts=_snapshot_time(ctx).forward_fill().over("_f"),
        # the file's count of snapshot banners so far (0: the batch holds none of this block's)
        snap=pl.col("text").str.contains(_LOG).cum_sum().over("_f"),
    )
    # Section path: the latest section of each level above a key, each reset by any section above it.
    paths = []
    for lv in (1, 2, 3):
        opened = pl.col("bus").is_not_null() | (pl.col("section").is_not_null() & (pl.col("level") <= lv))
        scope = opened.cum_sum()
        name = pl.when(pl.col("level") == lv).then(pl.col("section"))
        paths.append(name.forward_fill().over("_f", scope).alias(f"s{lv}"))
    frame = frame.with_columns(paths)
    parts = [pl.when(pl.col("level") > lv).then(pl.col(f"s{lv}")) for lv in (1, 2, 3)]
    path = pl.concat_str([*parts, pl.col("key").str.to_lowercase()], separator="/", ignore_nulls=True)
    return frame.with_columns(path=pl.when(pl.col("key").is_not_null()).then(path),
                              val=pl.col("val").str.to_lowercase(), raw=pl.col("val"))


def _snapshot_time(ctx: Context) -> pl.Expr:
    """Naive UTC of a `Timestamp` line (printed in the node's local time, weekday skipped)."""
    local = (pl.col("tstamp").str.replace_all(" +", " ")
             .str.strptime(pl.Datetime("us"), "%b %d %H:%M:%S %Y", strict=False))
    return local_to_utc(local, ctx.tz)


def _bdf(bus: pl.Expr) -> pl.Expr:
    """`0000:5d:00` (the kernel collector's spelling) from `00000000:5D:00.0`."""
    g = bus.str.to_lowercase().str.extract_groups(r"^(?P<dom>[0-9a-f]{4,8}):(?P<b>[0-9a-f]{2}):(?P<d>[0-9a-f]{2})")
    return pl.concat_str([g.struct.field("dom").str.slice(-4), g.struct.field("b"), g.struct.field("d")],
                         separator=":")


def _lost_events(lost: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    """nvidia-smi could not reach a GPU: lost from the bus, or an unknown error."""
    gone = pl.col("why").str.contains(r"(?i)GPU is lost")
    return lost.select(
        pl.col("line").cast(pl.Int64), pl.col("ts").cast(TABLE_COLUMNS["events"]["ts"]),
        pl.col("file_host").alias("host"),
        pl.when(gone).then(pl.lit("gpu_lost")).otherwise(pl.lit("gpu_unreachable")).alias("kind"),
        pl.when(gone).then(pl.lit("gpu_fell_off_bus")).otherwise(pl.lit("gpu_hw_other")).alias("failure_mode"),
        pl.when(gone).then(pl.lit("critical")).otherwise(pl.lit("error")).alias("severity"),
        pl.lit(None, pl.Int32).alias("xid"), _bdf(pl.col("lbus")).alias("pci_bus"), pl.col("text"),
        json_detail({"bus_id": pl.col("lbus"), "message": pl.col("why"),
                     "action": pl.when(gone).then(pl.lit("drain node")).otherwise(pl.lit("reset GPU"))})
        .fill_null("{}").alias("detail"),
    )


def _num(path: pl.Expr) -> pl.Expr:
    """The sum of the numeric values of the keys `path` selects (null: none printed a number)."""
    v = pl.when(path).then(pl.col("val").str.extract(r"^(\d+)", 1).cast(pl.Int64, strict=False))
    return pl.when(v.count() > 0).then(v.sum())


def _any(path: pl.Expr, value: str = _YES) -> pl.Expr:
    return (path & (pl.col("val") == value)).any()


def _first(path: str) -> pl.Expr:
    return pl.col("raw").filter(pl.col("path") == path).first()


# throttle reason key (lower case) -> its NVML bit name (clusterlab.telemetry.THROTTLE_BITS)
_REASONS = {"idle": "gpu_idle", **{k.replace("_", " "): k for k in telemetry.THROTTLE_BITS if k != "gpu_idle"}}
_REASON_SECTIONS = ("clocks event reasons/", "clocks throttle reasons/")


def _clock_telemetry(rows: pl.DataFrame) -> pl.DataFrame:
    """The snapshot's clock state of each GPU as telemetry: throttle reasons (as NVML's bitmask), SM clock,
    temperature, utilisation and power, at the snapshot's time.

    A report names GPUs by bus id in nvidia-smi's index order, so a block's index is its place in its snapshot;
    where the snapshot's banner is not in the batch (a block held back from an earlier one) the place is
    unknown and the index is left null rather than guessed."""
    p = pl.col("path")
    reason = p.str.replace(r"^clocks (?:event|throttle) reasons/", "")
    is_reason = p.str.starts_with(_REASON_SECTIONS[0]) | p.str.starts_with(_REASON_SECTIONS[1])
    known = reason.is_in(list(_REASONS)) & pl.col("val").is_in(["active", "not active"])
    bit = reason.replace_strict({k: telemetry.THROTTLE_BITS[v] for k, v in _REASONS.items()}, default=0,
                                return_dtype=pl.Float64)
    number = pl.col("val").str.extract(r"^(\d+(?:\.\d+)?)", 1).cast(pl.Float64, strict=False)
    g = rows.group_by("gpu").agg(
        pl.col("line").first(), pl.col("bus").first(), pl.col("ts").first(), pl.col("file_host").first(),
        pl.col("_f").first(), pl.col("snap").first(),
        mask=pl.when(is_reason & known).then(pl.when(pl.col("val") == "active").then(bit).otherwise(0.0)).sum(),
        n_reasons=(is_reason & known).sum(),
        sm=number.filter(p == "clocks/sm").first(), temp=number.filter(p == "temperature/gpu current temp").first(),
        util=number.filter(p == "utilization/gpu").first(),
        power=number.filter(p.str.contains(r"power readings/power draw$")).first(),
    ).filter(pl.col("bus").is_not_null(), pl.col("ts").is_not_null())
    if not g.height:
        return pl.DataFrame(schema=telemetry.SAMPLE_SCHEMA)
    g = g.sort("line").with_columns(
        idx=pl.when(pl.col("snap") > 0).then(pl.int_range(pl.len()).over("_f", "snap")).cast(pl.Int32))
    base = g.select("line", "ts", host="file_host", gpu="idx", bus_id=telemetry.bus_id(pl.col("bus")),
                    mask=pl.when(pl.col("n_reasons") > 0).then(pl.col("mask")), sm="sm", temp="temp",
                    util="util", power="power")
    names = {"mask": "clocks_event_reasons.active", "sm": "clocks.sm", "temp": "temperature.gpu",
             "util": "utilization.gpu", "power": "power.draw"}
    samples = pl.concat([base.select("line", "ts", "host", "gpu", "bus_id", name=pl.lit(n), value=pl.col(c))
                         for c, n in names.items()]).filter(pl.col("value").is_not_null())
    return telemetry.to_rows(samples, telemetry.NVIDIA_SMI)


def _gpu_events(rows: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    """One event per GPU block: its worst finding decides kind, failure mode and severity."""
    p = pl.col("path")
    volatile = p.str.starts_with("ecc errors/volatile/")
    aggregate = p.str.starts_with("ecc errors/aggregate/")
    # Uncorrectable counts: `DRAM/SRAM Uncorrectable*` (Ampere and later), `Double Bit/Total` (older GPUs).
    unc = p.str.contains(r"/(?:dram|sram) uncorrectable[^/]*$") | p.str.ends_with("/double bit/total")
    recovery = _first("gpu recovery action")
    g = rows.group_by("gpu").agg(
        pl.col("line").first(), pl.col("bus").first(), pl.col("ts").first(), pl.col("text").first(),
        pl.col("file_host").first(),
        _first("product name").alias("product"), _first("serial number").alias("serial"),
        _first("gpu uuid").alias("uuid"),
        _num(p == "remapped rows/correctable error").alias("remapped_correctable"),
        _num(p == "remapped rows/uncorrectable error").alias("remapped_uncorrectable"),
        _any(p == _PENDING_REMAP).alias("remap_pending"), _any(p == _REMAP_FAILED).alias("remap_failure"),
        _num(p == "retired pages/single bit ecc").alias("retired_sbe"),
        _num(p == "retired pages/double bit ecc").alias("retired_dbe"),
        _any(p.is_in(_PAGE_PENDING)).alias("page_retirement_pending"),
        _num(volatile & unc).alias("volatile_uncorrectable"), _num(aggregate & unc).alias("aggregate_uncorrectable"),
        _any(p == _SRAM_LIMIT).alias("sram_threshold_exceeded"), _any(p == _RESET).alias("reset_required"),
        _any(p == _DRAIN_RESET).alias("drain_and_reset_recommended"), recovery.alias("recovery_action"),
        # a yes/no key printed with something else (a cut or garbled line): half-recognised
        (p.is_in(_YES_NO) & ~pl.col("val").is_in([_YES, _NO, *_NOT_THERE])).any().alias("unreadable"),
    )
    asks_reset = (pl.col("reset_required") | pl.col("drain_and_reset_recommended")
                  | ~pl.col("recovery_action").fill_null("None").str.to_lowercase().is_in(["none", *_NOT_THERE]))
    history = pl.any_horizontal([pl.col(c).fill_null(0) > 0 for c in (
        "aggregate_uncorrectable", "remapped_uncorrectable", "retired_dbe")])
    # (kind, condition, failure mode, severity, action, what the text says), worst first
    findings = [
        ("row_remap_failure", pl.col("remap_failure"), "gpu_memory_ecc", "critical", "drain node",
         "Remapped Rows: Remapping Failure Occurred: Yes"),
        ("sram_threshold_exceeded", pl.col("sram_threshold_exceeded"), "gpu_memory_ecc", "critical", "drain node",
         "ECC Errors: SRAM Threshold Exceeded: Yes"),
        ("row_remap_pending", pl.col("remap_pending"), "gpu_memory_ecc", "error", "reset GPU",
         "Remapped Rows: Pending: Yes"),
        ("page_retirement_pending", pl.col("page_retirement_pending"), "gpu_memory_ecc", "error", "reset GPU",
         "Retired Pages: pending retirement"),
        ("ecc_uncorrectable", pl.col("volatile_uncorrectable").fill_null(0) > 0, "gpu_memory_ecc", "error",
         "reset GPU", "volatile uncorrectable ECC errors"),
        ("gpu_reset_required", pl.col("drain_and_reset_recommended"), "gpu_hw_other", "error", "drain node",
         "GPU Reset Status: Drain and Reset Recommended: Yes"),
        ("gpu_reset_required", asks_reset, "gpu_hw_other", "error", "reset GPU", "the driver asks for a GPU reset"),
        ("unrecognised", pl.col("unreadable"), "unknown", "warning", None, "unreadable value"),
        ("ecc_history", history, None, "warning", None, "uncorrectable errors in the GPU's history, none pending"),
    ]
    kind, mode, sev, action, what = (pl.lit("gpu_state"), pl.lit(None, pl.String), pl.lit("info"),
                                     pl.lit(None, pl.String), pl.lit("healthy"))
    for k, cond, m, s, a, w in reversed(findings):
        hit = cond.fill_null(False)
        kind = pl.when(hit).then(pl.lit(k)).otherwise(kind)
        mode = pl.when(hit).then(pl.lit(m, pl.String)).otherwise(mode)
        sev = pl.when(hit).then(pl.lit(s)).otherwise(sev)
        action = pl.when(hit).then(pl.lit(a, pl.String)).otherwise(action)
        what = pl.when(hit).then(pl.lit(w)).otherwise(what)
    detail = json_detail({
        "bus_id": pl.col("bus"), "product": pl.col("product"), "serial": pl.col("serial"), "uuid": pl.col("uuid"),
        "action": pl.col("action"), **{c: pl.col(c) for c in (
            "remapped_correctable", "remapped_uncorrectable", "remap_pending", "remap_failure", "retired_sbe",
            "retired_dbe", "page_retirement_pending", "volatile_uncorrectable", "aggregate_uncorrectable",
            "sram_threshold_exceeded", "reset_required", "drain_and_reset_recommended", "recovery_action")},
    })
    # NOTE: a block opened by a snapshot banner or an unreachable GPU's line is no GPU block.
    g = g.filter(pl.col("bus").is_not_null()).sort("line")
    return g.with_columns(kind=kind, failure_mode=mode, severity=sev, action=action, what=what).select(
        pl.col("line").cast(pl.Int64), pl.col("ts").cast(TABLE_COLUMNS["events"]["ts"]),
        pl.col("file_host").alias("host"), "kind", "failure_mode", "severity",
        pl.lit(None, pl.Int32).alias("xid"), _bdf(pl.col("bus")).alias("pci_bus"),
        pl.format("nvidia-smi -q: GPU {}: {}", pl.col("bus"), pl.col("what")).alias("text"),
        detail.fill_null("{}").alias("detail"),
    )

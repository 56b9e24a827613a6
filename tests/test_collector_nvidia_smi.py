"""The nvidia-smi -q collector: section paths, what each GPU state means, snapshots, sniffing, batching."""

from __future__ import annotations

import datetime as dt
import json
import time

import polars as pl
import pytest

from clusterlab.collectors import nvidia_smi
from clusterlab.collectors._base import Context, Parsed

HEAD = """==============NVSMI LOG==============

Timestamp                                 : Tue Nov 24 08:00:01 2026
Driver Version                            : 565.57.01
CUDA Version                              : 12.7

Attached GPUs                             : 8"""


def gpu(bus: str = "00000000:5D:00.0", pending: str = "No", failure: str = "No", vol_unc: int = 0, agg_unc: int = 0,
        unc_rows: int = 0) -> str:
    return f"""GPU {bus}
    MIG Mode
        Current                           : Disabled
        Pending                           : Disabled
    ECC Mode
        Current                           : Enabled
        Pending                           : Enabled
    ECC Errors
        Volatile
            SRAM Uncorrectable SEC-DED    : 0
            DRAM Correctable              : 7
            DRAM Uncorrectable            : {vol_unc}
        Aggregate
            DRAM Uncorrectable            : {agg_unc}
            SRAM Threshold Exceeded       : No
    Remapped Rows
        Correctable Error                 : 0
        Uncorrectable Error               : {unc_rows}
        Pending                           : {pending}
        Remapping Failure Occurred        : {failure}
        Bank Remap Availability Histogram
            None                          : 0 bank(s)"""


def parse(text: str, **ctx) -> Parsed:
    """The lines PATTERN selects, as the engine hands them over, as one batch."""
    lines = text.split("\n")
    frame = pl.DataFrame({"line": pl.Series(range(1, len(lines) + 1), dtype=pl.Int64), "text": lines})
    frame = frame.filter(pl.col("text").str.contains(nvidia_smi.PATTERN))
    return nvidia_smi.parse(frame, Context(path="nvidia-smi-q.txt", host=ctx.pop("host", "gpu-017"), **ctx))


def events(text: str, **ctx) -> list[dict]:
    got = parse(text, **ctx).tables.get("events")
    return [] if got is None else got.to_dicts()


def detail(r: dict) -> dict:
    return json.loads(r["detail"])


def test_healthy_gpu_is_info_and_other_sections_pending_is_not_a_remap() -> None:
    (r,) = events(f"{HEAD}\n{gpu()}")
    assert (r["kind"], r["failure_mode"], r["severity"]) == ("gpu_state", None, "info")
    assert (r["host"], r["pci_bus"], r["ts"]) == ("gpu-017", "0000:5d:00", dt.datetime(2026, 11, 24, 8, 0, 1))
    assert detail(r)["remap_pending"] is False and detail(r)["volatile_uncorrectable"] == 0


@pytest.mark.parametrize(("kw", "kind", "mode", "action"), [
    ({"pending": "Yes", "unc_rows": 1}, "row_remap_pending", "gpu_memory_ecc", "reset GPU"),
    ({"failure": "Yes", "unc_rows": 8}, "row_remap_failure", "gpu_memory_ecc", "drain node"),
    ({"vol_unc": 2, "agg_unc": 2}, "ecc_uncorrectable", "gpu_memory_ecc", "reset GPU"),
    ({"agg_unc": 2, "unc_rows": 2}, "ecc_history", None, None),
    ({"pending": "Yes#"}, "unrecognised", "unknown", None),
])
def test_gpu_state_findings(kw: dict, kind: str, mode: str | None, action: str | None) -> None:
    (r,) = events(f"{HEAD}\n{gpu(**kw)}")
    assert (r["kind"], r["failure_mode"], detail(r).get("action")) == (kind, mode, action)


def test_older_layout_retired_pages_pending_and_double_bit_totals() -> None:
    # NOTE: older drivers pad a section line with spaces ("Double Bit            ")
    text = f"""Timestamp                           : Mon Nov  5 14:50:59 2026
Driver Version                      : 410.48

GPU 00000000:18:00.0
    Ecc Mode
        Current                     : Enabled
        Pending                     : Enabled
    ECC Errors
        Volatile
            Double Bit{' ' * 12}
                Device Memory       : 1
                Total               : 1
    Retired Pages
        Single Bit ECC              : 0
        Double Bit ECC              : 1
        Pending                     : Yes"""
    (r,) = events(text, tz="America/Chicago")
    assert (r["kind"], r["failure_mode"]) == ("page_retirement_pending", "gpu_memory_ecc")
    assert (detail(r)["volatile_uncorrectable"], detail(r)["retired_dbe"]) == (1, 1)
    assert r["ts"] == dt.datetime(2026, 11, 5, 20, 50, 59)


def test_lost_and_unreachable_gpus() -> None:
    lost = "Unable to determine the device handle for GPU 0000:02:00.0: GPU is lost.  Reboot the system to recover"
    (a,) = events(lost)
    (b,) = events("Unable to determine the device handle for GPU0000:07:00.0: Unknown Error")
    assert (a["kind"], a["failure_mode"], a["pci_bus"]) == ("gpu_lost", "gpu_fell_off_bus", "0000:02:00")
    assert (b["kind"], b["failure_mode"], b["pci_bus"]) == ("gpu_unreachable", "gpu_hw_other", "0000:07:00")


def test_a_loop_gives_one_event_per_gpu_per_snapshot_with_its_time() -> None:
    later = HEAD.replace("08:00:01", "08:05:01")
    got = events(f"{HEAD}\n{gpu()}\n{gpu('00000000:9A:00.0')}\n\n{later}\n{gpu(pending='Yes')}")
    assert [(r["pci_bus"], r["kind"], r["ts"].minute) for r in got] == [
        ("0000:5d:00", "gpu_state", 0), ("0000:9a:00", "gpu_state", 0), ("0000:5d:00", "row_remap_pending", 5)]


def test_keys_before_any_gpu_line_in_a_batch_are_counted_not_guessed() -> None:
    parsed = parse("    Remapped Rows\n        Pending                           : Yes")
    assert parsed.unparsed == 1 and "events" not in parsed.tables


def test_a_gpu_block_and_its_snapshot_header_are_held_back_whole() -> None:
    from clusterlab.ingest.parse import BLOCK_LINES, hold_open_block
    text = "\n".join([HEAD, *[gpu(f"00000000:{i:02X}:00.0") for i in range(20)]])
    lines = pl.Series(text.split("\n"))
    batch = pl.DataFrame({"line": pl.Series(range(1, len(lines) + 1), dtype=pl.Int64), "text": lines}).filter(
        pl.col("text").str.contains(nvidia_smi.PATTERN))
    head, held = hold_open_block(batch, nvidia_smi.BLOCK_START)
    assert held is not None and held.height <= BLOCK_LINES
    assert held["text"][0].startswith("GPU ") and head.height + held.height == batch.height


@pytest.mark.parametrize(("head", "want"), [
    (HEAD, True),
    ("Timestamp                                 : Wed Jun  7 19:32:16 2026\nDriver Version     : 510.73.08\n", True),
    ("Unable to determine the device handle for GPU 0000:02:00.0: GPU is lost.\n", True),
    ("[Tue Nov 24 08:00:01 2026] NVRM: Xid (PCI:0000:5d:00): 79, GPU has fallen off the bus.\n", False),
    ("step 10 loss 2.3\nGPU 00000000:5D:00.0\n    Remapped Rows\n", False),
])
def test_sniff(head: str, want: bool) -> None:
    assert nvidia_smi.sniff(head.encode(), "x.txt") is want


def test_many_snapshots_parse_quickly() -> None:
    text = "\n".join([HEAD, *[gpu(f"00000000:{i:02X}:00.0") for i in range(8)]] * 300)
    start = time.perf_counter()
    got = events(text)
    assert len(got) == 2400 and time.perf_counter() - start < 20

"""Pieces of nvidia-smi -q without the report's header: sniffing, GPU groups, indentation, the findings."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from clusterlab import Lab
from clusterlab.collectors import nvidia_smi, nvidia_smi_query
from clusterlab.collectors._base import Context, search


def remapped(unc: int = 0, pending: str = "No", failure: str = "No", indent: str = "    ") -> str:
    keys = [("Correctable Error", 0), ("Uncorrectable Error", unc), ("Pending", pending),
            ("Remapping Failure Occurred", failure)]
    return "\n".join([f"{indent}Remapped Rows", *(f"{indent}    {k:<34}: {v}" for k, v in keys)])


def events(text: str) -> list[dict]:
    lines = pl.DataFrame({"line": range(1, len(text.splitlines()) + 1), "text": text.splitlines()},
                         schema={"line": pl.Int64, "text": pl.String})
    lines = lines.filter(pl.col("text").str.contains(nvidia_smi_query.PATTERN))
    parsed = nvidia_smi_query.parse(lines, Context(path="x", host="gpu-9"))
    return parsed.tables["events"].to_dicts() if "events" in parsed.tables else []


def test_a_pending_remap_pasted_alone_is_a_memory_error_of_a_gpu_not_named() -> None:
    (e,) = events(remapped(unc=2, pending="Yes"))
    assert (e["kind"], e["failure_mode"], e["severity"], e["pci_bus"]) == (
        "row_remap_pending", "gpu_memory_ecc", "error", None)
    assert e["text"] == "nvidia-smi -q: a GPU not named: Remapped Rows: Pending: Yes"
    assert "bus_id" not in json.loads(e["detail"]) and json.loads(e["detail"])["remapped_uncorrectable"] == 2


def test_each_copy_of_a_section_is_the_next_gpu() -> None:
    # `nvidia-smi -q | grep -A4 "Remapped Rows"` over three GPUs
    text = "\n--\n".join([remapped(), remapped(unc=1, pending="Yes"), remapped(unc=9, failure="Yes")])
    got = [(e["line"], e["kind"], e["failure_mode"]) for e in events(text)]
    assert got == [(1, "gpu_state", None), (7, "row_remap_pending", "gpu_memory_ecc"),
                   (13, "row_remap_failure", "gpu_memory_ecc")]


def test_a_gpu_line_names_its_group_and_the_sections_under_it_stay_one_gpu() -> None:
    text = "\n".join(["GPU 00000000:AF:00.0", "    ECC Errors", "        Volatile",
                      "            DRAM Uncorrectable            : 3", remapped()])
    (e,) = events(text)
    assert (e["kind"], e["pci_bus"]) == ("ecc_uncorrectable", "0000:af:00")
    assert json.loads(e["detail"])["bus_id"] == "00000000:AF:00.0"


def test_a_piece_pasted_without_the_reports_indentation_keeps_its_section_paths() -> None:
    (e,) = events(remapped(unc=4, pending="Yes", indent=""))
    assert e["kind"] == "row_remap_pending"
    (e,) = events("\n".join("  " + ln for ln in remapped(failure="Yes", indent="").splitlines()))
    assert e["kind"] == "row_remap_failure"


def test_pending_in_another_section_is_not_a_remap() -> None:
    (e,) = events("    ECC Mode\n        Current                           : Enabled\n"
                  "        Pending                           : Enabled\n" + remapped())
    assert (e["kind"], e["failure_mode"]) == ("gpu_state", None)


def test_sniff_takes_pieces_and_leaves_whole_reports_and_prose() -> None:
    piece = remapped(pending="Yes").encode()
    assert nvidia_smi_query.sniff(piece, "smi.txt")
    assert nvidia_smi_query.sniff(b"GPU 00000000:18:00.0\n" + piece, "smi.txt")
    whole = b"==============NVSMI LOG==============\n\nTimestamp : Tue Nov 24 08:00:01 2026\n" + piece
    assert nvidia_smi.sniff(whole, "smi.txt") and not nvidia_smi_query.sniff(whole, "smi.txt")
    assert not nvidia_smi_query.sniff(b"Known issues\nRemapped Rows\nare reported by nvidia-smi.\n", "README")
    assert search(remapped().splitlines(), nvidia_smi_query.PATTERN)


def test_a_saved_piece_is_ingested_alone(tmp_path: Path) -> None:
    path = tmp_path / "nvidia-smi.txt"
    path.write_text(remapped(unc=2, pending="Yes") + "\n")
    with Lab(":memory:") as lab:
        lab.ingest(path)
        got = lab.sql("SELECT source, failure_mode FROM events").rows()
    assert got == [("nvidia_smi_query", "gpu_memory_ecc")]


def test_a_line_of_prose_before_the_piece_does_not_move_its_sections() -> None:
    (e,) = events("Output of the health check\n" + remapped(unc=1, pending="Yes", indent=""))
    assert e["kind"] == "row_remap_pending"

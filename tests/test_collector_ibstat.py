"""ibstat output: each HCA port's state, and which states mean the fabric lost the link."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from clusterlab import Lab
from clusterlab.collectors import ibstat
from clusterlab.collectors._base import Context


def adapter(ca: str, state: str, phys: str, rate: str = "400", layer: str = "InfiniBand", ind: str = "\t") -> str:
    return "\n".join([f"CA '{ca}'", f"{ind}CA type: MT4129", f"{ind}Number of ports: 1",
                      f"{ind}Firmware version: 28.41.1000", f"{ind}Node GUID: 0xb8cef603004a0001", f"{ind}Port 1:",
                      f"{ind * 2}State: {state}", f"{ind * 2}Physical state: {phys}", f"{ind * 2}Rate: {rate}",
                      f"{ind * 2}Base lid: 17", f"{ind * 2}Link layer: {layer}"])


def events(text: str) -> list[dict]:
    lines = pl.DataFrame({"line": range(1, len(text.splitlines()) + 1), "text": text.splitlines()},
                         schema={"line": pl.Int64, "text": pl.String})
    lines = lines.filter(pl.col("text").str.contains(ibstat.PATTERN))
    parsed = ibstat.parse(lines, Context(path="x", host="h100-a17"))
    return parsed.tables["events"].to_dicts() if "events" in parsed.tables else []


@pytest.mark.parametrize(("state", "phys", "kind", "mode", "severity"), [
    ("Active", "LinkUp", "ib_port_state", None, "info"),
    ("Down", "Polling", "ib_port_down", "network", "error"),
    ("Down", "LinkErrorRecovery", "ib_port_down", "network", "error"),
    ("Initializing", "LinkUp", "ib_port_not_active", "network", "warning"),
    ("Down", "Disabled", "ib_port_disabled", None, "warning"),
])
def test_a_ports_states_decide_whether_the_link_is_lost(state: str, phys: str, kind: str, mode: str | None,
                                                        severity: str) -> None:
    (e,) = events(adapter("mlx5_2", state, phys))
    assert (e["kind"], e["failure_mode"], e["severity"], e["host"], e["ts"]) == (kind, mode, severity, "h100-a17", None)


def test_each_port_is_its_adapters_and_its_keys_its_own() -> None:
    text = "\n".join([adapter("mlx5_0", "Active", "LinkUp"), adapter("mlx5_5", "Down", "Polling", rate="10")])
    up, down = events(text)
    assert (up["line"], down["line"]) == (6, 17)
    d = json.loads(down["detail"])
    assert (d["ca"], d["port"], d["state"], d["physical_state"], d["rate_gbps"], d["ca_type"]) == (
        "mlx5_5", 1, "Down", "Polling", 10, "MT4129")
    assert down["text"] == "ibstat: mlx5_5 port 1: State Down, Physical state Polling, Rate 10"


def test_space_indented_paste_reads_the_same() -> None:
    (e,) = events(adapter("mlx5_10", "Down", "Polling", ind="    "))
    assert (e["kind"], json.loads(e["detail"])["ca"]) == ("ib_port_down", "mlx5_10")


def test_sniff_takes_ibstat_and_not_prose() -> None:
    assert ibstat.sniff(adapter("mlx5_0", "Active", "LinkUp").encode(), "ibstat.txt")
    assert ibstat.sniff(b"$ ibstat\n" + adapter("mlx5_0", "Active", "LinkUp").encode(), "x")
    assert not ibstat.sniff(b"CA 'mlx5_0' is the first adapter\nit has one port\n", "notes.txt")


def test_a_saved_ibstat_with_a_polling_port_is_a_network_fault(tmp_path: Path) -> None:
    path = tmp_path / "ibstat.txt"
    path.write_text(adapter("mlx5_0", "Active", "LinkUp") + "\n" + adapter("mlx5_3", "Down", "Polling") + "\n")
    with Lab(":memory:") as lab:
        lab.ingest(path)
        got = lab.sql("SELECT source, kind, failure_mode FROM events ORDER BY line").rows()
    assert got == [("ibstat", "ib_port_state", None), ("ibstat", "ib_port_down", "network")]


def test_pdsh_output_of_many_nodes_gives_each_port_its_node() -> None:
    a = ["h100-a03: " + ln for ln in adapter("mlx5_0", "Active", "LinkUp").splitlines()]
    b = ["h100-a04: " + ln for ln in adapter("mlx5_0", "Down", "Polling").splitlines()]
    text = "\n".join(x for pair in zip(a, b, strict=True) for x in pair)  # pdsh interleaves the nodes' lines
    got = sorted((e["host"], e["kind"], e["failure_mode"]) for e in events(text))
    assert got == [("h100-a03", "ib_port_state", None), ("h100-a04", "ib_port_down", "network")]
    assert ibstat.sniff(text.encode(), "pdsh.out")


def test_a_grep_of_the_states_alone_is_read() -> None:
    text = "CA 'mlx5_7'\n\t\tState: Down\n\t\tPhysical state: Polling\nCA 'mlx5_8'\n\t\tState: Active\n"
    assert ibstat.sniff(text.encode(), "x")
    got = [(json.loads(e["detail"])["ca"], e["kind"], e["text"]) for e in events(text)]
    assert got == [("mlx5_7", "ib_port_down", "ibstat: mlx5_7 port ?: State Down, Physical state Polling, Rate ?"),
                   ("mlx5_8", "ib_port_state", "ibstat: mlx5_8 port ?: State Active, Physical state ?, Rate ?")]

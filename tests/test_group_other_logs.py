"""Node logs of the other line-oriented collectors (ibstat, nvidia-smi -q reports and pieces, GlusterFS, Prometheus
scrapes, dcgmi dmon loops) parsed together (clusterlab.ingest.groups_text) store exactly what parsing each alone
stores.

Each format's files trap a group parse, as if a file's first lines continued the file before it: ibstat port keys
before the file's first adapter (the previous file ends with an adapter's port opened); nvidia-smi -q keys before the
file's first GPU line (the previous file ends inside a GPU block's `Remapped Rows`), a lost GPU and a block without
a `Timestamp` of their own; query pieces pasted with another indentation, and a piece that names no GPU after one
that ends with a GPU line; Prometheus samples before the file's first scrape time, and counters that a rate would
join across two files; a dmon counter the same. The same GPU (index, bus id) and device in several files, each on
its own node (the host is each file's); unreadable lines; a warned file in a group; CRLF, gzip, no last newline.
`test_each_trap_bites_without_the_partition` parses each format's files together with `file_of_line()` made
constant (GlusterFS: without its `file_host`) and finds other rows."""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl
import pytest
from test_ingest_parallel import _ingest, _ingest_alone, _snapshot

from clusterlab import Lab
from clusterlab.collectors import (
    all_collectors,
    dcgmi_dmon,
    glusterfs,
    ibstat,
    nvidia_smi,
    nvidia_smi_query,
    prometheus_text,
)
from clusterlab.ingest import groups as ingest_group
from clusterlab.ingest import groups_text as ingest_group_text
from clusterlab.ingest.heads import choose

GFS = "[2026-03-02 10:{:02d}:12.345678 +0000] "
GFS_INFO = GFS + "I [MSGID: 114046] [client-handshake.c:857:client_setvolume_cbk] 0-gv0-client-0: Connected"
STALE = GFS + "W [MSGID: 114031] [client-rpc-fops_v2.c:2561:client4_0_lookup_cbk] 0-gv0-client-1: remote operation " \
              "failed [Stale file handle]"
GONE = GFS + "E [MSGID: 114018] [client.c:2244:client_rpc_notify] 0-gv0-client-2: disconnected from gv0-client-2. " \
             "Client process will keep trying to connect to glusterd until brick's port is available"
KEY = "        {:<34}: {}"  # an nvidia-smi -q key two levels in
DISK = 'node_disk_read_bytes_total{{device="nvme0n1"}} {}'
DMON_HEAD = "#Entity   SMCLK  TMPTR  RPCTR"
DMON = "2026-11-24T10:00:{:02d} "

# {format: {path under nodes/: lines}}; files are read in path order
LOGS: dict[str, dict[str, list[str]]] = {
    "ibstat": {
        # ends with an adapter whose port is opened, none of its keys yet
        "gpu-001/ibstat.txt": [
            "CA 'mlx5_0'", "\tCA type: MT4129", "\tNumber of ports: 1", "\tFirmware version: 28.41.1000",
            "\tPort 1:", "\t\tState: Active", "\t\tPhysical state: LinkUp", "\t\tRate: 400",
            "\t\tLink layer: InfiniBand",
            "CA 'mlx5_3'", "\tCA type: MT4129", "\tFirmware version: 28.41.1000", "\tPort 1:"],
        # starts with port keys under no adapter of its own (unread); the same adapter name as the file before
        "gpu-002/ibstat.txt": [
            "\t\tState: Down", "\t\tPhysical state: Polling", "\t\tRate: 400",
            "CA 'mlx5_0'", "\tCA type: MT4129", "\tNumber of ports: 1", "\tPort 1:", "\t\tState: Armed",
            "\t\tPhysical state: LinkUp"],
        # pdsh's node prefix names another host than the file's
        "gpu-003/ibstat.txt.gz": [
            "gpu-077: CA 'mlx5_0'", "gpu-077: \tCA type: MT4129", "gpu-077: \tPort 1:",
            "gpu-077: \t\tState: Down", "gpu-077: \t\tPhysical state: Disabled"],
    },
    "nvidia_smi": {
        # ends inside the second GPU's `Remapped Rows`
        "gpu-001/nvidia-smi-q.txt": [
            "==============NVSMI LOG==============", "",
            "Timestamp                                 : Wed Nov 25 03:00:00 2026",
            "Driver Version                            : 565.57.01", "",
            "Attached GPUs                             : 2",
            "GPU 00000000:18:00.0", "    Remapped Rows", KEY.format("Correctable Error", 0),
            KEY.format("Uncorrectable Error", 0), KEY.format("Pending", "No"),
            KEY.format("Remapping Failure Occurred", "No"), "",
            "GPU 00000000:2A:00.0", "    Remapped Rows"],
        # starts with keys before its first GPU line (unread); the same bus id as the file before
        "gpu-002/nvidia-smi-q.txt": [
            "Timestamp                                 : Wed Nov 25 03:05:00 2026",
            "Driver Version                            : 565.57.01",
            KEY.format("Pending", "Yes"), KEY.format("Remapping Failure Occurred", "Yes"),
            "GPU 00000000:18:00.0", "    Remapped Rows", KEY.format("Pending", "No"),
            KEY.format("Remapping Failure Occurred", "No")],
        # a lost GPU and a block, neither under a `Timestamp` of this file
        "gpu-003/nvidia-smi-q.txt.gz": [
            "Unable to determine the device handle for GPU 0000:5D:00.0: GPU is lost.  Reboot the system to "
            "recover this GPU",
            "GPU 00000000:18:00.0", "    Remapped Rows", KEY.format("Pending", "Yes")],
    },
    "nvidia_smi_query": {
        # two GPUs told apart by their sections' copies (no GPU line), then a GPU line and its section
        "gpu-001/remap.txt": [
            "    Remapped Rows", KEY.format("Uncorrectable Error", 3), KEY.format("Pending", "Yes"), "--",
            "    Remapped Rows", KEY.format("Uncorrectable Error", 0), KEY.format("Pending", "No"), "--",
            "GPU 00000000:5D:00.0", "    Remapped Rows", KEY.format("Uncorrectable Error", 0)],
        # pasted without the report's indentation, no GPU line: a GPU not named
        "gpu-002/remap.txt": [
            "Remapped Rows", "    Uncorrectable Error : 8", "    Pending : No", "    Remapping Failure Occurred : Yes"],
        # the same bus id as the first file's
        "gpu-003/remap.txt.gz": [
            "GPU 00000000:5D:00.0", "    Remapped Rows", KEY.format("Pending", "Yes")],
    },
    "glusterfs": {
        "gpu-001/mnt-gv0.log": [GFS_INFO.format(10), STALE.format(11), GONE.format(12)],
        # an error line cut before its source (unread)
        "gpu-002/mnt-gv0.log": [
            GFS_INFO.format(10), STALE.format(13),
            GFS.format(14) + "E [garbled Transport endpoint is not connected", GFS_INFO.format(15)],
        "gpu-003/mnt-gv0.log.gz": [GFS_INFO.format(10), GONE.format(16), GFS_INFO.format(17)],
    },
    "prometheus_text": {
        "gpu-001/scrapes.prom": [
            "# scrape_time 1795420800", "# TYPE node_disk_read_bytes_total counter", DISK.format("4.5110616064e+10"),
            "node_load1 12.41", "# scrape_time 1795420815", DISK.format("4.5115616064e+10"), "node_load1 12.83"],
        # samples before its first scrape time; a sample cut before its value (unread)
        "gpu-002/scrapes.prom": [
            "# TYPE node_disk_read_bytes_total counter", DISK.format("4.5120616064e+10"), "node_load1 3.1",
            "# scrape_time 1795420845", DISK.format("4.5125616064e+10"), 'node_disk_read_bytes_total{device="nvme0'],
        # the same disk's counter, one sample (no rate of its own)
        "gpu-003/scrapes.prom.gz": ["# scrape_time 1795420860", DISK.format("4.5130616064e+10"), "node_load1 1.0"],
        # values that are not numbers: warned, parsed alone
        "gpu-004/scrapes.prom": [
            "# scrape_time 1795420860", DISK.format("high"), DISK.format("higher")],
    },
    "dcgmi_dmon": {
        "gpu-001/dmon.log": [
            DMON.format(0) + DMON_HEAD, DMON.format(0) + "ID", DMON.format(0) + "GPU 0     1980   62     0",
            DMON.format(15) + "GPU 0     1980   63     4"],
        # the same GPU's replay counter, one sample (no rate of its own)
        "gpu-002/dmon.log": [
            DMON.format(30) + DMON_HEAD, DMON.format(30) + "ID", DMON.format(30) + "GPU 0     1980   64     9"],
        "gpu-003/dmon.log.gz": [
            DMON.format(45) + DMON_HEAD, DMON.format(45) + "ID", DMON.format(45) + "GPU 1     1410   70     2"],
        # lines without `ts`'s time: warned, parsed alone
        "gpu-004/dmon.log": [DMON_HEAD, "ID", "GPU 0     1980   62     0", "GPU 1     1980   62     0"],
    },
}
SENT_BACK = {"prometheus_text": 1, "dcgmi_dmon": 1}  # the files each group sends to be parsed alone (warned)
CRLF = "gpu-002/"  # every format's second file
NO_LAST_NEWLINE = ".gz"


def _write(root: Path, formats: tuple[str, ...] = tuple(LOGS)) -> None:
    for fmt in formats:
        for rel, lines in LOGS[fmt].items():
            p = root / fmt / "nodes" / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            newline = "\r\n" if rel.startswith(CRLF) else "\n"
            text = newline.join(lines) + ("" if rel.endswith(NO_LAST_NEWLINE) else newline)
            p.write_bytes(gzip.compress(text.encode()) if rel.endswith(".gz") else text.encode())


def _grouped(root: Path, db: Path, m: pytest.MonkeyPatch) -> tuple[list, dict[str, tuple[int, int]]]:
    """Ingested as the engine does, and each group's (files, sent back alone) by collector."""
    groups: dict[str, tuple[int, int]] = {}
    real = ingest_group_text.parse_text_group

    def spy(items, chosen, *a):
        rest = real(items, chosen, *a)
        groups[chosen[0].NAME] = (len(items), len(rest))
        return rest

    m.setattr(ingest_group, "parse_text_group", spy)
    return _ingest(db, root), groups


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("other")
    _write(root)
    return root


@pytest.fixture(scope="module")
def alone(logs: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[list, dict, Path]:
    db = tmp_path_factory.mktemp("alone") / "alone.duckdb"
    results = _ingest_alone(db, logs)
    return results, _snapshot(db), db


def test_node_logs_parsed_together_store_the_rows_of_each_parsed_alone(logs, alone, tmp_path) -> None:
    results, snap, _ = alone
    with pytest.MonkeyPatch.context() as m:
        grouped, groups = _grouped(logs, tmp_path / "grouped.duckdb", m)
    # one group per format, all its files; only the warned ones sent back
    assert groups == {fmt: (len(files), SENT_BACK.get(fmt, 0)) for fmt, files in LOGS.items()}
    assert grouped == results
    assert _snapshot(tmp_path / "grouped.duckdb") == snap


def _rows(db: Path, table: str, fmt: str, host_dir: str) -> list[dict]:
    """The rows the file of `fmt` under nodes/`host_dir` stored in `table`, in line order."""
    with Lab(db, read_only=True) as lab:
        got = lab.sql(f"SELECT f.path AS _file, t.* FROM {table} t JOIN ingested_files f USING (file_id) "
                      "ORDER BY t.line, t.metric").to_dicts() if table == "telemetry" else lab.sql(
            f"SELECT f.path AS _file, t.* FROM {table} t JOIN ingested_files f USING (file_id) "
            "ORDER BY t.line").to_dicts()
    return [r for r in got if f"/{fmt}/nodes/{host_dir}/" in r["_file"]]


def test_the_traps_were_there_to_fall_into(alone) -> None:
    """Each file kept what only it says: what a parse of the files as one would have got wrong."""
    results, _, db = alone
    unparsed = {"/".join(Path(r[0]).parts[-4::2]): r[3] for r in results if r[3]}  # (format/host)
    assert unparsed == {"ibstat/gpu-002": 3, "nvidia_smi/gpu-002": 2, "glusterfs/gpu-002": 1,
                        "prometheus_text/gpu-002": 1, "prometheus_text/gpu-004": 2, "dcgmi_dmon/gpu-004": 2}
    # ibstat: the opened port keeps no state; the keys before an adapter are no port; each file's host
    ib = {h: [(r["host"], r["kind"], r["line"]) for r in _rows(db, "events", "ibstat", h)]
          for h in ("gpu-001", "gpu-002", "gpu-003")}
    assert ib == {"gpu-001": [("gpu-001", "ib_port_state", 5), ("gpu-001", "ib_port_state", 13)],
                  "gpu-002": [("gpu-002", "ib_port_not_active", 7)],
                  "gpu-003": [("gpu-077", "ib_port_disabled", 3)]}
    # nvidia-smi: the cut block is healthy; the keys before a GPU line are nobody's; no borrowed snapshot time
    smi = {h: [(r["host"], r["kind"], r["pci_bus"], r["ts"] is None) for r in _rows(db, "events", "nvidia_smi", h)]
           for h in ("gpu-001", "gpu-002", "gpu-003")}
    assert smi == {"gpu-001": [("gpu-001", "gpu_state", "0000:18:00", False), ("gpu-001", "gpu_state", "0000:2a:00",
                                                                                False)],
                   "gpu-002": [("gpu-002", "gpu_state", "0000:18:00", False)],
                   "gpu-003": [("gpu-003", "gpu_lost", "0000:5d:00", True),
                               ("gpu-003", "row_remap_pending", "0000:18:00", True)]}
    # query pieces: two GPUs without a GPU line, then the named one; the unindented piece names none
    q = {h: [(r["kind"], r["pci_bus"]) for r in _rows(db, "events", "nvidia_smi_query", h)]
         for h in ("gpu-001", "gpu-002", "gpu-003")}
    assert q == {"gpu-001": [("row_remap_pending", None), ("gpu_state", None), ("gpu_state", "0000:5d:00")],
                 "gpu-002": [("row_remap_failure", None)], "gpu-003": [("row_remap_pending", "0000:5d:00")]}
    # GlusterFS: each file's host
    assert {r["host"] for h in ("gpu-001", "gpu-002", "gpu-003") for r in _rows(db, "events", "glusterfs", h)} == {
        "gpu-001", "gpu-002", "gpu-003"}
    # Prometheus: no scrape time before a file's first one; a rate only between a file's own timed samples
    prom = {h: [(r["line"], r["metric"], r["ts"] is None) for r in _rows(db, "telemetry", "prometheus_text", h)
                if r["metric"].startswith("disk_read_bytes")] for h in ("gpu-002", "gpu-003")}
    assert prom == {"gpu-002": [(2, "disk_read_bytes_total", True), (5, "disk_read_bytes_total", False)],
                    "gpu-003": [(2, "disk_read_bytes_total", False)]}
    # dcgmi dmon: no replay rate in a file of one sample of the counter
    assert [r["metric"] for r in _rows(db, "telemetry", "dcgmi_dmon", "gpu-002") if "pcie" in r["metric"]] == [
        "pcie_replay_total"]


# what a format's parse must keep to each file: its modules' file_of_line (GlusterFS: its host column)
PARTITIONS = {"ibstat": [ibstat], "nvidia_smi": [nvidia_smi], "nvidia_smi_query": [nvidia_smi_query, nvidia_smi],
              "prometheus_text": [prometheus_text], "dcgmi_dmon": [dcgmi_dmon]}


@pytest.mark.parametrize("fmt", list(LOGS))
def test_each_trap_bites_without_the_partition(fmt, tmp_path) -> None:
    """The same files parsed together as one file (file_of_line() constant) store other rows than alone: the
    group test would fail if a collector forgot the partition."""
    root = tmp_path / "logs"
    _write(root, (fmt,))
    _ingest_alone(tmp_path / "a.duckdb", root)
    with pytest.MonkeyPatch.context() as m:
        for mod in PARTITIONS.get(fmt, []):
            m.setattr(mod, "file_of_line", lambda: pl.lit(0, pl.Int64))
        if fmt == "glusterfs":
            m.setattr(glusterfs, "FILE_HOST_COLUMN", False)
        _, groups = _grouped(root, tmp_path / "g.duckdb", m)
    assert groups[fmt][0] == len(LOGS[fmt])
    assert _snapshot(tmp_path / "g.duckdb") != _snapshot(tmp_path / "a.duckdb")


def test_the_trap_logs_are_read_by_their_collector() -> None:
    """Each file is its format's, read by that collector alone (the group test is about it)."""
    for fmt, files in LOGS.items():
        for rel, lines in files.items():
            chosen = choose(("\n".join(lines) + "\n").encode(), rel, all_collectors())
            assert [c.NAME for c in chosen] == [fmt], rel

"""Scheduler logs parsed together (text groups) store exactly the rows of each parsed alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_ingest_parallel import _ingest, _ingest_alone, _snapshot

from clusterlab import Lab
from clusterlab.ingest import groups as ingest_group
from clusterlab.ingest import groups_text as ingest_group_text

SAMPLES = Path(__file__).parent.parent / "data_samples"
T = "[2026-12-03T08:{m:02d}:{s:02d}.100] "
# Each file is a rotated controller log of one cluster. The traps: a node that stops answering at the end of one
# file and answers at the start of the next (alone: lost, a node failure); a reason set on the last line of one
# file and a drain on the first of the next (alone: no reason); the same host in every file; a file whose first
# lines carry no time of ours; CRLF line ends; no final newline; gzip.
LOGS = {
    "a/slurmctld.log": [
        "slurmctld version 23.11.4 started on cluster west",
        "sched: Allocate JobId=41 NodeList=gpu[01-02] #CPUs=16 Partition=main",
        "error: Nodes gpu01 not responding",
        "update_node: node gpu02 reason set to: xid79 GPU fell off the bus",
    ],
    "b/slurmctld.log": [
        "Node gpu01 now responding",
        "update_node: node gpu02 state set to DRAINED",
        "Killing JobId=41 on failed node gpu02",
        "error: Nodes gpu01 not responding",
    ],
    "c/slurmctld.log": [
        "update_node: node gpu02 state set to DRAINED",
        "Node gpu01 now responding",
        "requeue job JobId=41 due to failure of node gpu02",
        "node gpu02 returned to service",
    ],
}


def _write(root: Path) -> list[Path]:
    import gzip

    for i, (name, lines) in enumerate(LOGS.items()):
        text = "".join(T.format(m=10 + i, s=k) + ln + "\n" for k, ln in enumerate(lines))
        p = root / "scheduler" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if i == 0:
            text = "controller restarted by hand\n" + text.replace("\n", "\r\n")
        if i == 1:
            text = text.rstrip("\n")
        if i == 2:
            p.with_name(p.name + ".gz").write_bytes(gzip.compress(text.encode()))
            continue
        p.write_text(text, newline="")
    return [root]


def test_slurmctld_logs_grouped_store_the_rows_of_each_alone(tmp_path: Path) -> None:
    paths = _write(tmp_path / "logs")
    alone = _ingest_alone(tmp_path / "alone.duckdb", *paths)
    groups = []
    with pytest.MonkeyPatch.context() as m:
        real = ingest_group_text.parse_text_group
        m.setattr(ingest_group, "parse_text_group",
                  lambda items, chosen, *a: groups.append((len(items), len(rest := real(items, chosen, *a)))) or rest)
        grouped = _ingest(tmp_path / "grouped.duckdb", *paths)
    assert groups == [(3, 0)]  # parsed together, none sent back alone
    assert grouped == alone
    snap = _snapshot(tmp_path / "grouped.duckdb")
    assert snap == _snapshot(tmp_path / "alone.duckdb")
    with Lab(tmp_path / "grouped.duckdb", read_only=True) as lab:
        rows = lab.sql("SELECT regexp_extract(f.path, '/([abc])/', 1) AS f, e.line, e.host, e.kind, e.failure_mode, "
                       "json_extract_string(e.detail, '$.reason') AS reason FROM events e "
                       "JOIN ingested_files f USING (file_id) ORDER BY ALL").rows()
    # the traps are live: a's gpu01 was lost (b's answer is another file's), b's drain has no reason (a's last line
    # is another file's), and b's last gpu01 is lost though c's first lines answer
    assert ("a", 4, "gpu01", "slurm_node_not_responding", "node_failure", None) in rows
    assert ("b", 2, "gpu02", "slurm_node_drain", None, None) in [(*r[:4], None, r[5]) for r in rows]
    assert ("b", 4, "gpu01", "slurm_node_not_responding", "node_failure", None) in rows


def test_slurm_cloud_logs_grouped_store_the_rows_of_each_alone(tmp_path: Path) -> None:
    """ParallelCluster's plugin logs (each line read on its own): a resume log and a cut copy of it, CRLF."""
    text = (SAMPLES / "slurm_cloud" / "resume_and_clustermgtd.log").read_text()
    root = tmp_path / "logs" / "scheduler"
    root.mkdir(parents=True)
    (root / "slurm_resume.log").write_text(text)
    lines = text.splitlines(keepends=True)
    (root / "clustermgtd").write_bytes("".join(lines[len(lines) // 3:]).replace("\n", "\r\n").encode())
    alone = _ingest_alone(tmp_path / "alone.duckdb", tmp_path / "logs")
    groups = []
    with pytest.MonkeyPatch.context() as m:
        real = ingest_group_text.parse_text_group
        m.setattr(ingest_group, "parse_text_group",
                  lambda items, chosen, *a: groups.append((len(items), len(rest := real(items, chosen, *a)))) or rest)
        grouped = _ingest(tmp_path / "grouped.duckdb", tmp_path / "logs")
    assert groups == [(2, 0)]
    assert grouped == alone and any(r[2].get("events") for r in alone)
    assert _snapshot(tmp_path / "grouped.duckdb") == _snapshot(tmp_path / "alone.duckdb")


def _grouped_equals_alone(tmp_path: Path, root: Path) -> list[tuple]:
    """Ingest `root` file by file and grouped; asserts one group, none sent back and the same rows; the rows."""
    alone = _ingest_alone(tmp_path / "alone.duckdb", root)
    groups = []
    with pytest.MonkeyPatch.context() as m:
        real = ingest_group_text.parse_text_group
        m.setattr(ingest_group, "parse_text_group",
                  lambda items, chosen, *a: groups.append((len(items), len(rest := real(items, chosen, *a)))) or rest)
        grouped = _ingest(tmp_path / "grouped.duckdb", root)
    assert groups == [(2, 0)]
    assert grouped == alone
    snap = _snapshot(tmp_path / "grouped.duckdb")
    assert snap == _snapshot(tmp_path / "alone.duckdb")
    return snap["events"]


def test_sinfo_listings_grouped_store_the_rows_of_each_alone(tmp_path: Path) -> None:
    """A `sinfo -lN` listing with its date line, then one without a date whose first row comes before its header:
    alone, that row belongs to no header and the rows have no time; grouped, neither may come from the file
    before."""
    root = tmp_path / "logs" / "scheduler"
    root.mkdir(parents=True)
    (root / "a.txt").write_bytes((SAMPLES / "sinfo" / "long_nodes.txt").read_bytes())
    head = (SAMPLES / "sinfo" / "long_nodes.txt").read_text().splitlines()[1]
    row = "gpu-{n}        1      gpu*     drained  224   2:56:2 2000000        0      1   (null) {why}"
    (root / "b.txt").write_text("\n".join([row.format(n="050", why="before any header"), head,
                                           row.format(n="051", why="Kill task failed")]))
    events = _grouped_equals_alone(tmp_path, root)
    hosts = {(r[0].rsplit("/", 1)[1], r[6]): r[5] for r in events}  # (file, host): ts (after source, run, ...)
    assert ("b.txt", "gpu-050") not in hosts and hosts[("b.txt", "gpu-051")] is None


def test_scontrol_records_grouped_store_the_rows_of_each_alone(tmp_path: Path) -> None:
    """`scontrol show node` output, then a file whose first lines continue no record of its own (a paste cut at
    the top): alone, they are nobody's; grouped, they must not become the reason of the file before's last node."""
    root = tmp_path / "logs" / "scheduler"
    root.mkdir(parents=True)
    (root / "a.txt").write_text("NodeName=gpu-012 Arch=x86_64 CoresPerSocket=56\n"
                                "   State=IDLE ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\n")
    (root / "b.txt").write_text("   State=DOWN+NOT_RESPONDING ThreadsPerCore=2 TmpDisk=0 Weight=1\n"
                                "   Reason=rack maintenance [ops@2026-12-03T09:00:00]\n"
                                "NodeName=gpu-020 Arch=x86_64 CoresPerSocket=56\n"
                                "   State=IDLE+DRAIN ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\n"
                                "   Reason=xid79 fell off bus [ops@2026-12-03T08:44:51]\n")
    events = _grouped_equals_alone(tmp_path, root)
    # the cut paste's stamped reason is a node's reason of its own, its node unnamed (a reason pasted without its
    # record: scontrol.py), never gpu-012's
    assert sorted((r[0].rsplit("/", 1)[1], r[6] or "") for r in events) == [("b.txt", ""), ("b.txt", "gpu-020")]

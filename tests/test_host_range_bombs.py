"""Host-range bombs in log text (a node list, a node-failure line) are bounded: ingest ends, stores the line
as printed with a warning naming file and line, and the database stays usable for every later ingest."""

from __future__ import annotations

import resource
import shutil
import subprocess
import sys
from pathlib import Path

from clusterlab import Lab
from conftest import SAMPLES

RUN = "llama8b-pretrain"
MEMORY = 3 << 30  # an expanded bomb grows past this in seconds; a bounded ingest of this bundle stays far below


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def _ingest(db: Path, *paths: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "clusterlab.cli", "--db", str(db), "ingest", "--workers", "1", *map(str, paths)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, preexec_fn=_limited)


def _bundle(root: Path) -> Path:
    """One attempt of the demo run, whose scheduler record and job output name absurd host ranges."""
    src = SAMPLES / "bundle"
    root.mkdir()
    shutil.copy(src / "inventory.toml", root / "inventory.toml")
    att = root / "runs" / RUN / "attempt-1"
    att.mkdir(parents=True)
    shutil.copy(src / "runs" / RUN / "run.toml", root / "runs" / RUN / "run.toml")
    shutil.copy(src / "runs" / RUN / "attempt-1" / "train.log", att / "train.log")
    (att / "slurm-4242.out").write_text("srun: error: Node failure on gpu-[1-999999999]\n")
    (root / "scheduler").mkdir()
    (root / "scheduler" / "sacct.txt").write_text(
        "JobID|JobName|State|ExitCode|Start|End|Elapsed|NNodes|NodeList\n"
        f"4242|{RUN}|NODE_FAIL|0:0|2026-11-01T00:00:00|2026-12-31T00:00:00|60-00:00:00|4|"
        "n[1-99][1-99][1-99][1-99]\n")
    return root


def test_a_bundle_of_bombs_ingests_with_named_warnings_and_leaves_the_database_usable(tmp_path: Path) -> None:
    root = _bundle(tmp_path / "bundle")
    db = tmp_path / "c.duckdb"
    res = _ingest(db, root)
    assert res.returncode in (0, 2), res.stderr[-2000:]
    assert "slurm-4242.out:1: hostlist 'gpu-[1-999999999]' names 999,999,999 hosts, more than 100,000" in res.stderr
    with Lab(str(db), read_only=True) as lab:
        kept = lab.sql("SELECT host, text FROM events WHERE kind = 'slurm_node_fail'")
        assert kept["host"].to_list() == ["gpu-[1-999999999]"]  # one row, the list as printed
        assert lab.sql("SELECT count(*) AS n FROM attempts WHERE run = ?", [RUN])["n"][0] == 1
    # the job row with the bombed NodeList is stored: a later ingest must still end
    kern = tmp_path / "kern.log"
    kern.write_text("2026-11-24T08:20:25+00:00 east-003 kernel: NVRM: Xid (PCI:0000:5d:00): 79, pid=1, "
                    "name=python, GPU has fallen off the bus.\n")
    again = _ingest(db, kern)
    assert again.returncode == 0, again.stderr[-2000:]
    with Lab(str(db), read_only=True) as lab:
        assert lab.sql("SELECT count(*) AS n FROM events WHERE xid = 79")["n"][0] == 1

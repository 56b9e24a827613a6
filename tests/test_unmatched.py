"""`clusterlab unmatched`: trouble-looking lines no rule matched, grouped by template, never dropped."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from clusterlab import Lab
from clusterlab.cli import main

KERNEL = """\
2026-11-24T08:00:01,000000+00:00 NVRM: Xid (PCI:0000:5d:00): 79, pid=79892, name=python, GPU has fallen off the bus.
2026-11-24T08:00:02,000000+00:00 acmefw: controller 3 reported error 0x1f on port 17
2026-11-24T08:00:03,000000+00:00 acmefw: controller 12 reported error 0x2a on port 4
2026-11-24T08:00:04,000000+00:00 systemd[1]: Started Session 12 of user root.
2026-11-24T08:00:05,000000+00:00 acmefw: link partner east-007 unreachable, retry 3
"""


# What a rule exists for: a line like this in `unmatched` is a collector that failed to read its own format.
MUST_CLASSIFY = [r"NVRM: Xid", r"SXid", r"fallen off the bus", r"NCCL WARN", r"CUDA out of memory",
                 r"Watchdog caught collective", r"DUE TO (?:TIME LIMIT|PREEMPTION|NODE FAILURE)", r"ChildFailedError",
                 r"uncorrectable ECC", r"illegal memory access", r"Node failure on", r"not responding",
                 r"blocked for more than \d+ seconds", r"Out of memory: Killed process", r"(?i)grad norm: nan"]


def assert_only_noise(unmatched) -> None:
    """No template of `unmatched` is a line one of the rules above is there to read."""
    import re

    bad = [(t, ex) for t, ex in zip(unmatched["template"], unmatched["example"], strict=True)
           if any(re.search(p, ex) for p in MUST_CLASSIFY)]
    assert not bad, f"lines a rule should have read: {bad[:5]}"


def test_on_the_sample_bundle_the_unmatched_lines_are_noise(bundle_db_copy: Path) -> None:
    with Lab(bundle_db_copy, read_only=True) as lab:
        u = lab.unmatched(limit=None)
    assert u.height  # the samples do hold trouble-looking lines that no rule is for
    assert_only_noise(u)
    # the frames and "raised from" lines of tracebacks whose error line was read are no unknowns (issue 30):
    # tests/test_unmatched_continuations.py
    top = " ".join(u.head(10)["example"].to_list())
    assert "Exception raised from" not in top and "frame #" not in top


def _bundle(tmp_path: Path) -> Path:
    node = tmp_path / "nodes" / "east-003"
    node.mkdir(parents=True)
    (node / "dmesg").write_text(KERNEL)
    return tmp_path


def test_an_unknown_error_is_listed_by_template_with_its_file_and_line(tmp_path: Path) -> None:
    with Lab(":memory:") as lab:
        lab.ingest(_bundle(tmp_path))
        u = lab.unmatched()
    rows = {r["template"]: r for r in u.iter_rows(named=True)}
    # the two controller errors differ in numbers only: one template, two lines, the first as example
    ctrl = next(r for t, r in rows.items() if "reported error" in t)
    assert ctrl["lines"] == 2 and ctrl["line"] == 2 and ctrl["file"].endswith("nodes/east-003/dmesg")
    assert "<NUM>" in ctrl["template"] and "<HEX>" in ctrl["template"] and "0x1f" in ctrl["example"]
    assert any("unreachable" in t for t in rows)
    # what a rule understood (the Xid) and what is no trouble (systemd) are not listed
    assert not any("Xid" in t or "Started Session" in t for t in rows)


def test_reingesting_is_a_no_op_and_a_grown_log_adds_only_its_new_lines(tmp_path: Path) -> None:
    root = _bundle(tmp_path)
    with Lab(":memory:") as lab:
        lab.ingest(root)
        lab.ingest(root)
        assert lab.unmatched()["lines"].sum() == 3
        with open(root / "nodes" / "east-003" / "dmesg", "a") as f:
            f.write("2026-11-24T08:00:09,000000+00:00 acmefw: controller 5 reported error 0x11 on port 2\n")
        lab.ingest(root)
        assert lab.unmatched()["lines"].sum() == 4


def test_the_command_prints_templates_and_json(tmp_path: Path) -> None:
    db = tmp_path / "u.duckdb"
    runner = CliRunner()
    assert runner.invoke(main, ["--db", str(db), "ingest", str(_bundle(tmp_path / "b"))]).exit_code == 0
    res = runner.invoke(main, ["unmatched", "--db", str(db), "--json"])
    assert res.exit_code == 0, res.output
    assert '"template"' in res.output and "reported error" in res.output


def test_ingest_names_every_file_it_skipped_and_why(tmp_path: Path) -> None:
    root = _bundle(tmp_path)
    (root / "README.txt").write_text("notes about this bundle\n")
    (root / "core.bin").write_bytes(b"\x00\x01\x02\x7fELF" * 100)
    with Lab(":memory:") as lab:
        summary = lab.ingest(root)
    assert summary.problems == []  # files that are no evidence are no error in a directory walk
    why = sorted(summary.skipped, key=lambda w: "README" in w)
    assert why[0].endswith("core.bin: no collector recognises this content (binary data)"), why
    assert why[1].endswith("README.txt: no collector recognises this content (first line 'notes about this bundle')")
    res = CliRunner().invoke(main, ["--db", str(tmp_path / "x.duckdb"), "ingest", str(root)])
    assert res.exit_code == 0 and "skipped " in res.output and "README.txt" in res.output


def test_a_half_recognised_line_is_listed_under_the_collector_that_kept_it(tmp_path: Path) -> None:
    # what a collector keeps as kind `unrecognised` (a prefix it knows, fields it cannot read) is evidence
    # with failure mode unknown and also belongs in the list of what to extend
    with Lab(":memory:") as lab:
        lab.ingest(_bundle(tmp_path))
        lab.sql("""INSERT INTO events (file_id, source, run, line, host, kind, failure_mode, severity, text)
                   SELECT file_id, 'kernel', NULL, 9, 'east-003', 'unrecognised', 'unknown', 'warning',
                          'NVRM: Xid (PCI:0000:5d:00): ??, pid=1, name=python, garbled'
                   FROM ingested_files LIMIT 1""")
        u = lab.unmatched()
    half = u.filter(u["seen_by"] == "half-recognised by kernel")
    assert half.height == 1 and half["line"][0] == 9 and "Xid" in half["template"][0]
    assert set(u["seen_by"]) == {"no rule", "half-recognised by kernel"}


def test_lines_the_collectors_half_read_are_evidence_and_listed(tmp_path: Path) -> None:
    # a known prefix with fields that cannot be read: an Xid cut mid-line, a slurmstepd banner cut short
    node = tmp_path / "nodes" / "east-004"
    node.mkdir(parents=True)
    stamp = "2026-11-24T08:00:0{},000000+00:00"
    (node / "dmesg").write_text(f"{stamp.format(1)} NVRM: Xid (PCI:0000:5d:00): 79, pid=1, name=python, GPU has "
                                f"fallen off the bus.\n{stamp.format(2)} NVRM: Xid (PCI:0000:5d:0\n")
    job = tmp_path / "runs" / "r" / "attempt-1"
    job.mkdir(parents=True)
    banner = "slurmstepd: error: *** JOB 77 ON east-004 CANC"
    (job / "slurm-77.out").write_text(f"{banner}ELLED AT 2026-11-24T08:01:00 DUE TO TIME LIMIT ***\n{banner}\n")
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        kept = lab.sql("SELECT source, failure_mode FROM events WHERE kind = 'unrecognised' ORDER BY source").rows()
        u = lab.unmatched()
    assert kept == [("kernel", "unknown"), ("slurm", "unknown")]
    assert {"half-recognised by kernel", "half-recognised by slurm"} <= set(u["seen_by"])

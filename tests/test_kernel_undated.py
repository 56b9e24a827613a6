"""Raw dmesg without a boot time (issue 30): every line classified, kept undated, and dated once its boot is known."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import polars as pl

from clusterlab import Lab
from clusterlab.collectors import kernel
from clusterlab.collectors._base import Context

SAMPLES = Path(__file__).resolve().parents[1] / "data_samples"
BOOT = dt.datetime(2026, 11, 25, 6, 0, 0)
XID79 = "NVRM: Xid (PCI:0000:5d:00): 79, pid=40211, name=python3, GPU has fallen off the bus."
XID48 = "NVRM: Xid (PCI:0000:5d:00): 48, pid=40211, name=python3, An uncorrectable double bit error (DBE) was seen."
RAW = [f"[ 7322.104511] {XID48}", "[ 7400.000001] systemd[1]: Started Session 12 of user ops.",
       f"[ 7523.500200] {XID79}"]
EVENTS = "SELECT line, ts, dated, host, failure_mode FROM events ORDER BY file_id, line"


def _at(up: float) -> dt.datetime:
    return BOOT + dt.timedelta(microseconds=round(up * 1e6))


def test_a_raw_dmesg_alone_yields_its_xids_undated(tmp_path: Path) -> None:
    (tmp_path / "dmesg.txt").write_text("\n".join(RAW) + "\n")
    with Lab(":memory:") as lab:
        summary = lab.ingest(tmp_path / "dmesg.txt")
        ev = lab.sql(EVENTS)
    assert not summary.errors and any("kept undated" in p for p in summary.problems)
    assert ev["failure_mode"].to_list() == ["gpu_memory_ecc", "gpu_fell_off_bus"]
    assert ev["ts"].null_count() == 2 and ev["dated"].to_list() == ["undated", "undated"]


def test_a_journal_of_the_same_boot_beside_it_gives_the_raw_lines_exact_times(tmp_path: Path) -> None:
    node = tmp_path / "bundle" / "nodes" / "gpu-031"
    node.mkdir(parents=True)
    (node / "dmesg").write_text("\n".join(RAW) + "\n")
    # journalctl -k -o short-iso-precise of the same boot: only the Xid 48 is in it (the journal was rotated)
    (node / "kernel.journal.log").write_text(
        f"{_at(7322.104511):%Y-%m-%dT%H:%M:%S.%f}+0000 gpu-031 kernel: {XID48}\n")
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path / "bundle")
        dmesg = lab.sql("SELECT e.line, e.ts, e.dated FROM events e JOIN ingested_files f USING (file_id) "
                        "WHERE f.path LIKE '%/dmesg' ORDER BY line")
    # the Xid 79 is not in the journal: dated all the same, by the boot its twin gave
    assert dmesg["ts"].to_list() == [_at(7322.104511), _at(7523.500200)]
    assert dmesg["dated"].null_count() == 2


def test_a_boot_time_put_beside_later_dates_the_stored_lines_in_place(tmp_path: Path) -> None:
    node = tmp_path / "bundle" / "nodes" / "gpu-021"
    node.mkdir(parents=True)
    shutil.copy(SAMPLES / "kernel" / "dmesg_raw_no_boot.log", node / "dmesg")
    with Lab(tmp_path / "x.duckdb") as lab:
        first = lab.ingest(tmp_path / "bundle")
        before = lab.sql(EVENTS)
        again = lab.ingest(tmp_path / "bundle")  # the same file again: nothing read, nothing changed
        assert again.counts() == {"unchanged": 1} and lab.sql(EVENTS).equals(before)
        (node / "boot_time").write_text("2026-11-25T06:00:00Z\n")
        later = lab.ingest(tmp_path / "bundle")
        after = lab.sql(EVENTS)
        assert lab.ingest(tmp_path / "bundle").counts() == {"unchanged": 1} and lab.sql(EVENTS).equals(after)
    assert first.counts() == {"ingested": 1} and before["ts"].null_count() == before.height > 0
    assert later.counts() == {"unchanged": 1} and after["dated"].null_count() == after.height
    assert after["ts"][0] == _at(811.002211) and after["failure_mode"].to_list() == before["failure_mode"].to_list()


def test_a_file_of_raw_and_ctime_lines_dates_the_raw_ones_by_their_twins() -> None:
    lines = [f"[ 7322.104511] {XID48}", f"[Wed Nov 25 08:02:02 2026] {XID48}", f"[ 7523.500200] {XID79}",
             "[   12.000000] NVRM: Xid (PCI:0000:5d:00): 13, pid=1, name=x, Graphics Exception"]  # a later boot
    frame = pl.DataFrame({"line": [1, 2, 3, 4], "text": lines})
    ev = kernel.parse(frame, Context(path="x")).tables["events"]
    boot = dt.datetime(2026, 11, 25, 8, 2, 2) - dt.timedelta(microseconds=7322104511)
    assert ev["ts"].to_list() == [dt.datetime(2026, 11, 25, 8, 2, 2), dt.datetime(2026, 11, 25, 8, 2, 2),
                                  boot + dt.timedelta(microseconds=7523500200), None]


def test_undated_kernel_events_break_no_analysis(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(SAMPLES / "bundle", bundle)
    (bundle / "nodes" / "east-003" / "boot_time").unlink()  # its raw dmesg's Xid lines stay undated
    with Lab(tmp_path / "b.duckdb") as lab:
        lab.ingest(bundle)
        assert lab.sql("SELECT count(*) AS n FROM events WHERE ts IS NULL")["n"][0] > 0
        incidents = lab.incidents()
        assert incidents.height and incidents["root_ts"].null_count() < incidents.height
        for run in lab.runs()["run"].to_list():
            lab.attribute(run)
        lab.hosts()
        for incident in incidents["incident_id"].to_list()[:3]:
            lab.evidence(incident)
            lab.report(incident)
        from clusterlab.widgets.explorer import Explorer  # (ipywidgets: imported where used)

        ex = Explorer(lab, run=lab.runs()["run"][0])
        for incident in ex.incidents_frame["incident_id"].to_list()[:3]:
            ex.incident.value = incident
        assert ex.error.value == ""


def test_a_proc_stat_copy_beside_the_dmesg_dates_it(tmp_path: Path) -> None:
    node = tmp_path / "bundle" / "nodes" / "gpu-021"
    node.mkdir(parents=True)
    shutil.copy(SAMPLES / "kernel" / "dmesg_raw_no_boot.log", node / "dmesg")
    shutil.copy(SAMPLES / "boot_time" / "proc_stat.txt", node / "proc_stat.txt")  # btime: 2026-11-25 06:00 UTC
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path / "bundle")
        ev = lab.sql(EVENTS)
    assert ev["ts"][0] == _at(811.002211) and ev["dated"].null_count() == ev.height


def test_lines_appended_to_a_dmesg_dated_by_its_journal_take_the_same_boot(tmp_path: Path) -> None:
    node = tmp_path / "bundle" / "nodes" / "gpu-031"
    node.mkdir(parents=True)
    (node / "dmesg").write_text("\n".join(RAW) + "\n")
    (node / "kernel.journal.log").write_text(
        f"{_at(7322.104511):%Y-%m-%dT%H:%M:%S.%f}+0000 gpu-031 kernel: {XID48}\n")
    q = ("SELECT e.line, e.ts, e.dated FROM events e JOIN ingested_files f USING (file_id) "
         "WHERE f.path LIKE '%/dmesg' ORDER BY line")
    with Lab(tmp_path / "x.duckdb") as lab:
        lab.ingest(tmp_path / "bundle")
        with (node / "dmesg").open("a") as f:  # the GPU falls off the bus again, later in the same boot
            f.write(f"[ 9001.250000] {XID79}\n")
        assert lab.ingest(tmp_path / "bundle").counts() == {"appended": 1, "unchanged": 1}
        got = lab.sql(q)
    assert got["ts"].to_list() == [_at(7322.104511), _at(7523.500200), _at(9001.25)]
    assert got["dated"].null_count() == 3


def test_a_message_printed_twice_dates_by_the_twins_that_agree(tmp_path: Path) -> None:
    node = tmp_path / "bundle" / "nodes" / "gpu-031"
    node.mkdir(parents=True)
    xid13 = "NVRM: Xid (PCI:0000:5d:00): 13, pid=77, name=python3, Graphics Exception: ESR 0x51e730=0x0 0x51e734=0x20"
    (node / "dmesg").write_text(f"[  100.250000] {xid13}\n[  400.500000] {xid13}\n[ 7322.104511] {XID48}\n")
    stamp = "{:%Y-%m-%dT%H:%M:%S.%f}+0000 gpu-031 kernel: {}\n"
    (node / "kernel.journal.log").write_text(stamp.format(_at(100.25), xid13) + stamp.format(_at(400.5), xid13)
                                             + stamp.format(_at(7322.104511), XID48))
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path / "bundle")
        got = lab.sql("SELECT e.ts FROM events e JOIN ingested_files f USING (file_id) "
                      "WHERE f.path LIKE '%/dmesg' ORDER BY line")
    assert got["ts"].to_list() == [_at(100.25), _at(400.5), _at(7322.104511)]


def test_many_raw_dmesg_logs_are_parsed_in_their_group_each_with_its_warning(tmp_path: Path, monkeypatch) -> None:
    """Five raw dmesg logs without a boot time beside three journals: one group, none sent back alone, and each raw
    log gets its own warning, as alone (kernel.WARNINGS_PER_FILE; the group used to give up after three rounds of
    sending one back each, and parsed all eight alone)."""
    from clusterlab.ingest import groups as ingest_group
    from clusterlab.ingest import groups_text

    def _write(p: Path, text: str) -> None:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)

    for n in range(5):
        _write(tmp_path / "nodes" / f"raw{n}" / "dmesg.log",
               f"[ 4242.{n:06d}] NVRM: Xid (PCI:0000:1b:00): 79, pid=1, name=python3, GPU has fallen off the bus.\n")
    for n in range(3):
        _write(tmp_path / "nodes" / f"jr{n}" / "kern.log",
               f"2026-11-24T06:01:3{n}+00:00 jr{n} kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=7, name=python3, "
               "GPU has fallen off the bus.\n")
    grouped: list[str] = []
    real = groups_text.parse_text_group

    def spy(items, chosen, *a):
        alone = real(items, chosen, *a)
        grouped.extend(o.plan.task.path.parent.name for o, x, _ in items if all(a[1] is not x for a in alone))
        return alone
    monkeypatch.setattr(ingest_group, "parse_text_group", spy)
    with Lab(tmp_path / "k.duckdb") as lab:
        files = lab.ingest(tmp_path / "nodes", workers=1).files
        got = lab.sql("SELECT host, dated FROM events WHERE kind LIKE 'xid%' ORDER BY host").rows()
    assert sum("raw dmesg timestamps" in m for f in files for m in f.messages) == 5
    assert sorted(grouped) == ["jr0", "jr1", "jr2", "raw0", "raw1", "raw2", "raw3", "raw4"]
    assert len(got) == 8 and {d for h, d in got if h.startswith("raw")} == {"undated"}

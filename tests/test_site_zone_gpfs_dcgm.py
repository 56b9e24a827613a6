"""Defect classes the gpfs_dcgm_utc campaign showed, each on a few hand-written lines.

- a self-written trainer's Python-logging step lines (`<ISO time> INFO [train] step N/T | loss .. | step_time ..s`)
  were read by no collector (no steps: no ledger at all);
- a site in local time with DST whose inventory names no zone: the zone from two offsets an hour apart in the
  nodes' stamps (GPFS's `YYYY-MM-DD_HH:MM:SS.fff-0500:` included) or from `date`'s abbreviation in the job output;
- torchrun's zone-less glog lines in a UTC container were read in the site's zone (an offset off the trainer's own
  `Z` stamps beside them);
- GPFS's mmfs.log and DCGM's `dcgmi diag` / `dcgmi health -c` tables were read by no collector.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from clusterlab.collectors import _zone_sniff, dcgmi_diag, gpfs_mmfs, pylog_steps
from clusterlab.collectors._base import Context


def _lines(mod, text: str) -> pl.DataFrame:
    rows = text.strip("\n").splitlines()
    frame = pl.DataFrame({"line": list(range(1, len(rows) + 1)), "text": rows})
    return frame.filter(pl.col("text").str.contains(mod.PATTERN))


def test_python_logging_step_lines_give_steps_in_their_own_zone() -> None:
    text = """
2026-03-10T14:02:01.611Z INFO [train] step   1201/5000 | loss 2.7312 | lr 2.000e-04 | step_time 3.371s
2026-03-10T14:02:35.402Z INFO [train] step   1210/5000 | loss 2.7208 | lr 2.000e-04 | step_time 3368ms
2026-03-10 09:03:09,120 INFO train: Step 1220: loss=2.7155, grad_norm=0.4
"""
    ctx = Context(path="x", tz="America/Chicago")
    assert pylog_steps.sniff(text.encode(), "x")
    steps = pylog_steps.parse(_lines(pylog_steps, text), ctx).tables["steps"].sort("line")
    assert steps["step"].to_list() == [1201, 1210, 1220]
    assert steps["step_s"].to_list()[:2] == [3.371, 3.368]
    assert [str(t) for t in steps["ts"]] == ["2026-03-10 14:02:01.611000", "2026-03-10 14:02:35.402000",
                                             "2026-03-10 14:03:09.120000"]


def test_a_failed_save_is_no_finished_save() -> None:
    text = """
2026-03-10T14:05:30.000Z INFO [train] step 1250/5000 | loss 2.69 | step_time 3.37s
2026-03-10T14:05:40.000Z INFO [train] saving checkpoint step_00001250 to /ckpt/step_00001250
2026-03-10T14:07:41.000Z ERROR [train] checkpoint save failed: CheckpointException ranks:dict_keys([9])
"""
    cps = pylog_steps.parse(_lines(pylog_steps, text), Context(path="x")).tables["checkpoints"]
    assert cps.height == 1 and cps["step"][0] == 1250
    assert cps["ok"][0] is not True and cps["duration_s"][0] is None


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_zone_with_dst_from_two_offsets_an_hour_apart(tmp_path: Path) -> None:
    files = [_write(tmp_path / f"n{i}" / "mmfs.log.latest",
                    "2026-10-31_16:30:16.045-0500: [N] mmfsd ready\n" + "x\n" * 5000 +
                    f"2026-11-01_03:10:00.000-0600: [I] Command: mount fs{i}\n") for i in range(2)]
    assert _zone_sniff.zone_from_offsets(files) == "America/Chicago"
    # one offset only stays a fixed offset, as before
    one = [_write(tmp_path / f"m{i}" / "j.log", "2026-10-31T16:30:16-05:00 h kernel: x\n") for i in range(2)]
    assert _zone_sniff.zone_from_offsets(one) == "Etc/GMT+5"


def test_zone_from_date_abbreviations_in_the_job_output(tmp_path: Path) -> None:
    jobs = [_write(tmp_path / "a.out", "START TIME: Sat Oct 31 12:20:00 CDT 2026\n"),
            _write(tmp_path / "b.out", "START TIME: Sun Nov  1 03:03:48 CST 2026\n")]
    assert _zone_sniff.zone_from_offsets([], jobs) == "America/Chicago"
    # CST alone is also China's: not guessed
    assert _zone_sniff.zone_from_offsets([], jobs[1:]) is None


def test_glog_lines_of_a_utc_container_are_measured_against_the_zoned_records() -> None:
    utc = (b"START TIME: Sat Oct 31 12:20:00 CDT 2026\n"
           b"W1031 17:20:31.069999 720557 torch/distributed/run.py:793] ****\n"
           b"2026-10-31T17:20:52.000Z INFO [train] world_size=96\n")
    assert _zone_sniff.process_zone(utc, "America/Chicago") == "UTC"
    local = utc.replace(b"W1031 17:20:31", b"W1031 12:20:31")
    assert _zone_sniff.process_zone(local, "America/Chicago") is None


def test_gpfs_losing_the_cluster_is_filesystem_io_and_its_info_lines_are_not_events() -> None:
    text = """
2026-10-31_16:29:00.000-0500: [I] Recovering nodes in cluster c.gpfs: 10.40.1.15
2026-10-31_16:29:03.100-0500: [I] Recovered 1 nodes for file system fs1.
2026-10-31_16:30:57.045-0500: [E] Lost membership in cluster c.gpfs. Unmounting file systems.
2026-10-31_16:42:53.200-0500: [N] mmfsd ready
"""
    assert gpfs_mmfs.sniff(text.encode(), "mmfs.log.latest")
    ev = gpfs_mmfs.parse(_lines(gpfs_mmfs, text), Context(path="x", host="n5")).tables["events"]
    assert ev["failure_mode"].to_list() == ["filesystem_io"] and ev["host"].to_list() == ["n5"]
    assert str(ev["ts"][0]) == "2026-10-31 21:30:57.045000"


def test_dcgmi_diag_failures_name_the_gpu_and_a_warning_is_no_event() -> None:
    text = """
=== prolog: Sat Oct 31 20:39:53 CDT 2026 ===
Successfully ran diagnostic for group.
+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
| Page Retirement/Row Remap | Pass                                           |
| Diagnostic                | Pass - GPUs: 0, 1, 2, 3, 4, 5, 7               |
|                           | Fail - GPU: 6                                  |
| Warning                   | GPU 1 Thermal violations totaling 4.2 seconds  |
| Targeted Power            | Pass - All                                     |
+---------------------------+------------------------------------------------+
"""
    assert dcgmi_diag.sniff(text.encode(), "x")
    ev = dcgmi_diag.parse(_lines(dcgmi_diag, text), Context(path="x", host="g11")).tables["events"]
    assert ev.select("failure_mode", "host").rows() == [("gpu_hw_other", "g11")]
    assert '"gpus":"6"' in ev["detail"][0] and str(ev["ts"][0]) == "2026-11-01 01:39:53"


def test_a_failed_launch_in_a_restart_gap_takes_the_restart_from_its_start(monkeypatch) -> None:
    import datetime as dt

    from clusterlab.account import failed_launches

    t = dt.datetime(2026, 11, 1, 0, 0)
    launch = pl.DataFrame({"incident_id": ["r:2:launch:7@x"], "run": ["r"], "attempt": [2], "kind": ["launch_failed"],
                           "root_ts": [t + dt.timedelta(minutes=20)], "exit_ts": [t + dt.timedelta(minutes=23)],
                           "failure_mode": ["gpu_hw_other"], "host": ["g11"]}).with_columns(pl.col("attempt")
                                                                                             .cast(pl.Int32))
    monkeypatch.setattr(failed_launches, "failed_launches", lambda *a: (launch, pl.DataFrame()))
    rows = pl.DataFrame({"category": ["hang", "restart"], "attempt": [2, 2], "incident_id": ["r:2:end", "r:2:end"],
                         "own_host": [None, None], "seconds": [60.0, 1800.0],
                         "start_ts": [t - dt.timedelta(minutes=1), t], "end_ts": [t, t + dt.timedelta(minutes=30)]})
    inc = pl.DataFrame({"incident_id": ["r:2:end"], "root_ts": [t]})
    inc2, _, rows2 = failed_launches.with_failed_launches(None, "r", pl.DataFrame(), inc, pl.DataFrame(), rows,
                                                          lambda con, i, e: i)
    restart = dict(rows2.filter(pl.col("category") == "restart").select("incident_id", "seconds").rows())
    assert restart == {"r:2:end": 1200.0, "r:2:launch:7@x": 600.0}
    assert rows2["seconds"].sum() == rows["seconds"].sum() and inc2.height == 2

"""A log kept at run level (in `runs/<run>/` but in no `attempt-<k>/`) that trains nothing: a wrapper's or a
managed-job controller's log, a node's syslog the team saved beside the run. It spans every attempt, so its lines
belong to the attempt running at their time, not all to the first (which stretched attempt 1 over the whole
campaign and gave its faults to the wrong attempt)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from clusterlab import Lab

T0 = dt.datetime(2026, 11, 20, 10, 0, 0)


def _titan(start: dt.datetime, steps: range, every_s: float = 10.0) -> str:
    lines = [f"{start:%Y-%m-%d %H:%M:%S},000 - root - INFO - Starting job: llama3 8B training"]
    for i, step in enumerate(steps, 1):
        t = start + dt.timedelta(seconds=30 + i * every_s)
        lines.append(f"{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d} - root - INFO - step: {step:2d}  "
                     f"loss:  3.1000  memory: 60.10GiB(75.00%)  wps: 4,100  mfu: 38.00%")
    return "\n".join(lines) + "\n"


def _syslog(t: dt.datetime, msg: str) -> str:
    return f"{t:%Y-%m-%dT%H:%M:%S}.000000+00:00 gpu-07 kernel: {msg}"


def _bundle(root: Path, with_run_level: bool) -> None:
    run = root / "runs" / "r8b"
    for k, (start, steps) in enumerate([(T0, range(1, 41)), (T0 + dt.timedelta(hours=2), range(31, 71))], 1):
        (run / f"attempt-{k}").mkdir(parents=True)
        (run / f"attempt-{k}" / "train.log").write_text(_titan(start, steps))
    if with_run_level:
        (run / "saved-syslog").mkdir()
        second = T0 + dt.timedelta(hours=2, minutes=7, seconds=15)  # just after attempt 2's last step
        (run / "saved-syslog" / "gpu-07.log").write_text("\n".join([
            _syslog(T0 - dt.timedelta(minutes=3), "Linux version 6.8.0-49-generic (buildd@lcy02-amd64-103)"),
            _syslog(T0 + dt.timedelta(minutes=2), "mlx5_core 0000:0c:00.0: mlx5_cmd_out_err:838: ACCESS_REG(0x805) "
                    "op_mod(0x1) failed, status bad parameter(0x3), syndrome (0x15c356), err(-22)"),
            _syslog(second, "NVRM: Xid (PCI:0000:1b:00): 79, pid='<unknown>', name=<unknown>, "
                    "GPU has fallen off the bus."),
            _syslog(second + dt.timedelta(seconds=1), "NVRM: GPU 0000:1b:00.0: GPU has fallen off the bus."),
        ]) + "\n")
    (run / "run.toml").write_text("gpus = 8\ntokens_per_step = 65536\nflops_per_token = 1e9\n")


def _attempts(root: Path, with_run_level: bool) -> dict[int, tuple[dt.datetime, dt.datetime]]:
    _bundle(root / "b", with_run_level)
    with Lab(root / "db.duckdb") as lab:
        lab.ingest(root / "b")
        return {a: (s, e) for a, s, e in lab.sql(
            "SELECT attempt, start_ts, end_ts FROM attempts WHERE run = 'r8b' ORDER BY attempt").iter_rows()}


def test_a_run_level_log_that_trains_nothing_leaves_the_attempts_spans_as_the_training_logs_draw_them(
        tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "with").mkdir()
    plain = _attempts(tmp_path / "plain", with_run_level=False)
    withlog = _attempts(tmp_path / "with", with_run_level=True)
    assert set(withlog) == {1, 2}
    # attempt 1 ends where its training does, not at the Xid two hours later; attempt 2 holds the Xid
    assert withlog[1][1] == plain[1][1]
    assert withlog[2][1] >= T0 + dt.timedelta(hours=2, minutes=7, seconds=15)


def test_each_line_of_a_run_level_log_falls_in_the_attempt_running_at_its_time(tmp_path: Path) -> None:
    _bundle(tmp_path / "b", with_run_level=True)
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(tmp_path / "b")
        got = dict(lab.sql("""SELECT e.kind, e.attempt FROM events e JOIN ingested_files f USING (file_id)
                              WHERE f.path LIKE '%saved-syslog%' AND e.failure_mode IS NOT NULL""").iter_rows())
        assert got, "the Xid was not read"
        assert set(got.values()) == {2}, got
        # the Xid ends attempt 2, the attempt it fell in; attempt 1 keeps none of it
        ends = {i["attempt"]: i["failure_mode"] for i in lab.attribute("r8b").incidents.iter_rows(named=True)}
        assert ends.get(2) == "gpu_fell_off_bus", ends
        assert ends.get(1) != "gpu_fell_off_bus", ends


def test_a_run_level_log_that_trains_nothing_does_not_merge_the_per_job_logs_beside_it(tmp_path: Path) -> None:
    # one log per job in the run's folder (no attempt directories), and a saved syslog that begins before the first
    run = tmp_path / "b" / "runs" / "r8b"
    run.mkdir(parents=True)
    starts = [T0, T0 + dt.timedelta(hours=2)]
    for job, (start, steps) in zip((101, 102), zip(starts, (range(1, 41), range(31, 71)), strict=True), strict=True):
        (run / f"slurm-{job}.out").write_text(_titan(start, steps))
    (run / "gpu-07.syslog").write_text("\n".join([
        _syslog(T0 - dt.timedelta(minutes=3), "Linux version 6.8.0-49-generic (buildd@lcy02-amd64-103)"),
        _syslog(T0 + dt.timedelta(hours=2, minutes=7, seconds=15), "NVRM: Xid (PCI:0000:1b:00): 79, pid='<unknown>', "
                "name=<unknown>, GPU has fallen off the bus."),
    ]) + "\n")
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(tmp_path / "b")
        spans = lab.sql("SELECT attempt, start_ts, end_ts FROM attempts WHERE run = 'r8b' ORDER BY attempt").rows()
        assert [a for a, _, _ in spans] == [1, 2], spans
        assert spans[0][2] < starts[1] <= spans[1][1] + dt.timedelta(minutes=1), spans

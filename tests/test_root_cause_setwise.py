"""Root cause decided set-wise for all attempts at once gives what deciding each attempt on its own gives.

`root_cause.attempt_end_incidents` decides the attempts without a live scheduler verdict in one pass
(`_decide_all`) and the others one at a time (`_decide`, the reference, which `reference=True` uses for
every attempt). The fleet below has one attempt per kind of ending: the cause on a host, a peer named
by the network errors, evidence the job stepped past, a hang with symptoms only, no evidence, a fault
that came after the loss of progress, a filesystem server several hosts report, two competing faults,
and a last attempt that simply finished; the per-rank timings run on host clocks apart.
"""

from __future__ import annotations

import datetime as dt
import json

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from timelines import T0

from clusterlab import Lab
from clusterlab.diagnose import root_cause, timeline
from clusterlab.ingest import attempts

RANKS, PER_HOST, STEPS, STEP_S, PAUSE_S = 32, 8, 60, 2.0, 900
HOSTS = [f"n-{i:04d}" for i in range(RANKS // PER_HOST)]


def _end(a: int) -> float:
    """Seconds after T0 at which attempt `a` (from 0) ends its last step."""
    return a * (STEPS * STEP_S + PAUSE_S) + 60 + STEPS * STEP_S


def _write_fleet(lab: Lab) -> None:
    con = lab.con
    con.execute("INSERT INTO runs (run, cluster, gpus) VALUES ('r', 'c', ?)", [RANKS])
    con.execute("INSERT INTO ingested_files (file_id, path, run, attempt) VALUES (1, '/steps', 'r', 1)")
    # host h's clock runs 0.7 s x h ahead; the ranks of a host end a step a millisecond apart
    con.execute(f"""
        INSERT INTO rank_steps (file_id, source, run, attempt, line, ts, host, rank, step, step_s, compute_s,
                                comm_s, data_s)
        SELECT 1, 'steps', 'r', a + 1, s * {RANKS} + r,
               TIMESTAMP '{T0:%Y-%m-%d %H:%M:%S}' + to_microseconds(CAST(1e6 * (
                   a * ({STEPS} * {STEP_S} + {PAUSE_S}) + 60 + (s - a * {STEPS} + 1) * {STEP_S}
                   + 0.7 * (r // {PER_HOST}) + 0.001 * (r % {PER_HOST})) AS BIGINT)),
               'n-' || lpad(CAST(r // {PER_HOST} AS VARCHAR), 4, '0'), r, s, {STEP_S}, 1.6, 0.35, 0.05
        FROM (SELECT range AS s, range // {STEPS} AS a FROM range({STEPS * 8})) st, range({RANKS}) rk(r)
    """)
    con.execute("INSERT INTO facts (file_id, run, attempt, line, host, key, value) VALUES "
                "(1, 'r', 2, 1, 'n-0000', 'nccl_bootstrap_if', 'ib0:10.0.0.1'),"
                "(1, 'r', 2, 2, 'n-0003', 'nccl_bootstrap_if', 'ib0:10.0.0.4')")
    events: list[dict] = []

    def write_events(rows: list[dict], run: str | None = None, attempt: int | None = None, name: str = "") -> None:
        fid = 2 + len({e["file_id"] for e in events})
        con.execute("INSERT INTO ingested_files (file_id, path, run, attempt) VALUES (?, ?, ?, ?)",
                    [fid, f"/{name}", run, attempt])
        events.extend({"file_id": fid, "source": "kernel", "run": run, "attempt": attempt, "line": i,
                       "severity": "error", "text": "synthetic line", **r,
                       "ts": T0 + dt.timedelta(seconds=r["t"])} for i, r in enumerate(rows, start=1))

    def hang(a: int) -> None:  # every rank's watchdog fires five minutes after the job stopped
        write_events([{"t": _end(a) + 300 + r / 1000, "source": "torch", "kind": "watchdog_timeout", "rank": r,
                       "host": HOSTS[r // PER_HOST], "failure_mode": "nccl_timeout"} for r in range(RANKS)],
                     run="r", attempt=a + 1, name=f"torch-{a}.log")

    xid = {"kind": "xid", "xid": 79, "failure_mode": "gpu_fell_off_bus", "severity": "critical"}
    write_events([{"t": _end(0) + 1, "host": "n-0001", **xid}], name="dmesg-0")
    hang(0)
    write_events([{"t": _end(1) + 1, "source": "nccl", "host": "n-0000", "kind": "ib_completion_error",
                        "peer": "10.0.0.4", "failure_mode": "network"}], run="r", attempt=2, name="nccl-1.log")
    hang(1)
    write_events([{"t": _end(2) - 100, "source": "nccl", "host": "n-0002", "kind": "ib_completion_error",
                        "failure_mode": "network"}], run="r", attempt=3, name="nccl-2.log")
    hang(2)
    # attempt 4: nothing at all
    write_events([{"t": _end(4) + 2, "source": "torch", "host": "n-0002", "rank": 17, "kind": "cuda_oom",
                        "failure_mode": "cuda_oom"}], run="r", attempt=5, name="torch-oom.log")
    write_events([{"t": _end(4) + 400, "host": "n-0003", **xid}], name="dmesg-4")
    write_events([{"t": _end(5) + 1 + h, "host": HOSTS[h], "kind": "nfs_not_responding",
                        "failure_mode": "filesystem_io", "detail": json.dumps({"server": "nas-1"})}
                       for h in range(3)], name="dmesg-5")
    hang(5)
    write_events([{"t": _end(6) + 1, "host": "n-0000", **xid},
                       {"t": _end(6) + 3, "host": "n-0002", **xid}], name="dmesg-6")
    hang(6)
    # attempt 8, the last: finished
    frame = pl.DataFrame(events, infer_schema_length=None).drop("t")  # noqa: F841 (read by the SQL below)
    con.execute("INSERT INTO events BY NAME SELECT * FROM frame")
    attempts.refresh(con)


@pytest.fixture(scope="module")
def fleet() -> Lab:
    with Lab(":memory:") as lab:
        _write_fleet(lab)
        yield lab


def test_setwise_equals_the_per_attempt_reference(fleet: Lab) -> None:
    got, got_ev = root_cause.attempt_end_incidents(fleet.con, "r")
    want, want_ev = root_cause.attempt_end_incidents(fleet.con, "r", reference=True)
    assert_frame_equal(got, want)
    assert_frame_equal(got_ev, want_ev)
    # the fleet does hold every kind of ending it means to
    by = {r["attempt"]: r for r in got.iter_rows(named=True)}
    assert sorted(by) == [1, 2, 3, 4, 5, 6, 7]
    assert (by[1]["failure_mode"], by[1]["host"]) == ("gpu_fell_off_bus", "n-0001")
    assert (by[2]["failure_mode"], by[2]["host"]) == ("network", "n-0003")
    assert by[3]["failure_mode"] == "nccl_timeout"
    assert "kept stepping" in by[3]["rejected"][0]["reason"]
    assert by[4]["failure_mode"] == "unknown"
    assert by[5]["failure_mode"] == "cuda_oom"
    assert (by[6]["failure_mode"], by[6]["host"]) == ("filesystem_io", "nas-1")
    assert by[7]["host"] == "n-0000" and by[7]["confidence"] < by[1]["confidence"]
    assert got_ev.filter(pl.col("incident_id") == "r:1:end").height == RANKS + 1


def test_progress_from_the_profile_equals_progress_from_the_table(fleet: Lab) -> None:
    assert timeline.host_offsets(fleet.con, "r")["off_us"].abs().min() > 0  # the hosts' clocks are apart
    profile = timeline.rank_profile(fleet.con, "r")
    got, got_ev = root_cause.attempt_end_incidents(fleet.con, "r", profile=profile)
    want, want_ev = root_cause.attempt_end_incidents(fleet.con, "r")
    assert_frame_equal(got, want)
    assert_frame_equal(got_ev, want_ev)


def test_a_run_of_many_short_attempts_shares_the_offset_samples_and_keeps_each_hosts_offset() -> None:
    attempts_n, steps, ranks = 40, 300, 16
    with Lab(":memory:") as lab:
        lab.con.execute(f"""
            INSERT INTO rank_steps (file_id, source, run, attempt, line, ts, host, rank, step, step_s)
            SELECT 1, 'steps', 'm', s // {steps} + 1, s * {ranks} + r,
                   TIMESTAMP '{T0:%Y-%m-%d %H:%M:%S}' + to_microseconds(CAST(1e6 * (s * 2.0
                       + 100 * (s // {steps}) + 0.5 * (r // {PER_HOST})) AS BIGINT)),
                   'n-' || CAST(r // {PER_HOST} AS VARCHAR), r, s, 2.0
            FROM range({attempts_n * steps}) st(s), range({ranks}) rk(r)""")
        strides = timeline._strides(lab.con, "m")
        assert strides.height == attempts_n and strides["stride"].min() > 1  # not every step of the run
        off = timeline.host_offsets(lab.con, "m").sort("attempt", "host")
        assert off.height == attempts_n * 2
        assert off["off_us"].to_list() == [-250_000, 250_000] * attempts_n

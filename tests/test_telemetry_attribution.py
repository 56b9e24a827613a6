"""Telemetry as evidence: a throttling GPU is blamed on its host and GPU, a hot one is not; a bulk transfer's slowdown
is put on the filesystem, with its figures and the hosts outside the job it came from. Hand-made timelines."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
from timelines import T0, Attempt, _file, _insert, write_run

from clusterlab import Lab, telemetry
from clusterlab.diagnose import telemetry_incidents
from clusterlab.ingest import attempts

BASE_STEP_S = 5.0


def _steps(slow: range, slow_s: float) -> list[float]:
    return [slow_s if i in slow else BASE_STEP_S for i in range(1, 101)]


def _step_start_s(step_s: list[float], step: int, startup_s: float = 30.0) -> float:
    return startup_s + sum(step_s[: step - 1])


def run_on(con, run: str, hosts: list[str], step_s: list[float]) -> None:
    """The run's one attempt, with a log line from each of `hosts` (that is how an attempt knows its hosts)."""
    write_run(con, run, 16, [Attempt(0, 30, step_s, tail_s=5, hosts=hosts)])
    fid = _file(con, run, 1, "ranks.log")
    _insert(con, "facts", [{"file_id": fid, "source": "synthetic", "run": run, "attempt": 1, "line": i + 1,
                            "ts": T0 + dt.timedelta(seconds=1), "host": h, "key": "rank_host", "value": h}
                           for i, h in enumerate(hosts)])
    attempts.refresh(con)


def write_gpu_telemetry(con, host: str, until_s: float, odd: dict[int, tuple[float, float, dict]]) -> None:
    """8 GPUs scraped every 15 s: 1980 MHz, 65 C, no throttle reason; `odd[gpu] = (from_s, to_s, values)` overrides
    that GPU's values in that window (`sm_clock_mhz`, `throttle_reasons`, `gpu_temp_c`)."""
    fid = _file(con, "nodes", 0, f"{host}/dcgm.prom")
    rows, line = [], 0
    for k in range(int(until_s // 15) + 1):
        t = 15.0 * k
        for gpu in range(8):
            values = {"sm_clock_mhz": 1980.0, "throttle_reasons": 0.0, "gpu_temp_c": 65.0, "power_w": 650.0}
            if gpu in odd and odd[gpu][0] <= t < odd[gpu][1]:
                values.update(odd[gpu][2])
            for metric, value in values.items():
                line += 1
                rows.append({"file_id": fid, "source": "prometheus_text", "line": line, "ts": T0 + dt.timedelta(
                    seconds=t), "host": host, "gpu": gpu, "bus_id": f"0000:{0x18 + 16 * gpu:02x}:00",
                    "metric": metric, "value": value})
    _insert(con, "telemetry", rows)


def write_throughput(con, host: str, until_s: float, busy: tuple[float, float], busy_bytes_s: float,
                     usual_bytes_s: float = 0.1e9) -> None:
    """NFS read rate of `host` every 15 s: `usual_bytes_s`, and `busy_bytes_s` in the `busy` window."""
    fid = _file(con, "nodes", 0, f"{host}/node.prom")
    rows = []
    for k in range(int(until_s // 15) + 1):
        t = 15.0 * k
        v = busy_bytes_s if busy[0] <= t < busy[1] else usual_bytes_s
        rows.append({"file_id": fid, "source": "prometheus_text", "line": k + 1, "ts": T0 + dt.timedelta(seconds=t),
                     "host": host, "device": "fs01:/datasets", "metric": "nfs_read_bytes_per_s", "value": v})
    _insert(con, "telemetry", rows)


def test_a_throttling_gpu_is_the_slowdowns_cause_on_its_host_and_gpu(tmp_path: Path) -> None:
    """Steps 21-30 take 7 s: GPU 3 of h-002 has HW thermal slowdown active and 1200 MHz then. GPU 5 of h-001 runs
    at 92 C all along at full clock: hot, not throttling, never named."""
    step_s = _steps(range(21, 31), 7.0)
    lo, hi = _step_start_s(step_s, 21), _step_start_s(step_s, 31)
    with Lab(tmp_path / "db.duckdb") as lab:
        run_on(lab.con, "r", ["h-001", "h-002"], step_s)
        end = _step_start_s(step_s, 101)
        write_gpu_telemetry(lab.con, "h-001", end, {5: (0, end, {"gpu_temp_c": 92.0})})
        write_gpu_telemetry(lab.con, "h-002", end, {3: (lo, hi, {"sm_clock_mhz": 1200.0, "gpu_temp_c": 91.0,
                                                                  "throttle_reasons": 0x40})})
        a = lab.attribute("r")
        evidence = lab.evidence("r:1:slowdown:21")
    inc = a.incidents.filter(pl.col("kind") == "slowdown")
    assert inc.height == 1
    row = inc.row(0, named=True)
    assert (row["host"], row["failure_mode"], row["first_step"], row["last_step"]) == ("h-002", "gpu_throttle", 21, 30)
    assert row["blame"] == "provider"
    first = evidence.row(0, named=True)
    assert first["source"] == "telemetry" and first["host"] == "h-002"
    assert "GPU 3 (0000:48:00)" in first["text"] and "hw_thermal_slowdown" in first["text"]
    assert "1200 MHz" in first["text"] and "1980 MHz" in first["text"]
    assert not evidence["text"].str.contains("GPU 5").any()


def test_a_throttling_gpus_slowed_stretch_is_booked_as_its_hosts_straggling(tmp_path: Path) -> None:
    """Every rank waited for the one throttled GPU: the stretch's excess is straggler time on h-002 (as a straggler
    seen in per-rank records would be), not a slowdown of the whole job; the ledger's sum is unchanged."""
    step_s = _steps(range(21, 31), 7.0)
    lo, hi = _step_start_s(step_s, 21), _step_start_s(step_s, 31)
    with Lab(tmp_path / "db.duckdb") as lab:
        run_on(lab.con, "r", ["h-001", "h-002"], step_s)
        end = _step_start_s(step_s, 101)
        write_gpu_telemetry(lab.con, "h-001", end, {})
        write_gpu_telemetry(lab.con, "h-002", end, {3: (lo, hi, {"sm_clock_mhz": 1200.0, "gpu_temp_c": 91.0,
                                                                  "throttle_reasons": 0x40})})
        a = lab.attribute("r")
    strag = a.rows.filter(pl.col("category") == "straggler")
    assert strag["seconds"].sum() == 10 * (7.0 - BASE_STEP_S)
    assert set(strag["incident_id"]) == {"r:1:slowdown:21"} and set(strag["host"]) == {"h-002"}
    assert a.rows.filter(pl.col("category") == "slowdown")["seconds"].sum() == 0


def test_a_hot_gpu_that_keeps_its_clock_is_not_blamed(tmp_path: Path) -> None:
    step_s = _steps(range(21, 31), 7.0)
    with Lab(tmp_path / "db.duckdb") as lab:
        run_on(lab.con, "r", ["h-001", "h-002"], step_s)
        end = _step_start_s(step_s, 101)
        write_gpu_telemetry(lab.con, "h-001", end, {5: (0, end, {"gpu_temp_c": 93.0, "power_w": 700.0})})
        write_gpu_telemetry(lab.con, "h-002", end, {})
        a = lab.attribute("r")
        episodes = telemetry_incidents.throttle_episodes(lab.con)
    assert not episodes.height
    assert "gpu_throttle" not in a.incidents["failure_mode"].to_list()
    assert a.rows.filter(pl.col("category") == "slowdown")["incident_id"].unique().to_list() == ["none"]


def test_a_power_cap_alone_is_no_throttle_fault_but_a_dropped_clock_is(tmp_path: Path) -> None:
    with Lab(tmp_path / "db.duckdb") as lab:
        write_gpu_telemetry(lab.con, "h-001", 600, {
            1: (0, 600, {"throttle_reasons": float(telemetry.THROTTLE_BITS["sw_power_cap"])}),
            6: (300, 400, {"sm_clock_mhz": 1305.0})})
        ep = telemetry_incidents.throttle_episodes(lab.con)
    assert ep.select("host", "gpu").rows() == [("h-001", 6)]
    assert ep["ts"][0] == T0 + dt.timedelta(seconds=300) and ep["end_ts"][0] == T0 + dt.timedelta(seconds=390)
    assert "clock dropped" in ep["text"][0] and "1305 MHz" in ep["text"][0]


def test_a_straggler_on_a_throttling_gpus_host_becomes_gpu_throttle(tmp_path: Path) -> None:
    """The straggler incident keeps its stretch and ledger tie; its mode, GPU and bus id come from the telemetry."""
    strag = pl.DataFrame({
        "incident_id": ["r:1:straggler:h-002:40", "r:1:straggler:h-001:40"], "run": ["r", "r"], "attempt": [1, 1],
        "kind": ["straggler"] * 2, "root_ts": [T0 + dt.timedelta(seconds=300)] * 2,
        "exit_ts": [T0 + dt.timedelta(seconds=500)] * 2, "failure_mode": ["straggler"] * 2,
        "host": ["h-002", "h-001"], "first_step": [40, 40], "last_step": [60, 60]})
    with Lab(tmp_path / "db.duckdb") as lab:
        write_gpu_telemetry(lab.con, "h-002", 900, {7: (280, 520, {"throttle_reasons": 0x88, "sm_clock_mhz": 990.0})})
        write_gpu_telemetry(lab.con, "h-001", 900, {2: (0, 900, {"gpu_temp_c": 90.0})})
        out, ev = telemetry_incidents.throttled_stragglers(lab.con, strag)
    by_host = {r["host"]: r for r in out.to_dicts()}
    assert (by_host["h-002"]["failure_mode"], by_host["h-002"]["gpu"], by_host["h-002"]["bus_id"]) == (
        "gpu_throttle", 7, "0000:88:00")
    assert (by_host["h-001"]["failure_mode"], by_host["h-001"]["gpu"]) == ("straggler", None)
    assert set(ev["incident_id"]) == {"r:1:straggler:h-002:40"}
    assert "hw_slowdown, hw_power_brake_slowdown" in ev["text"][0] and "990 MHz" in ev["text"][0]


def test_a_bulk_transfer_slowdown_is_put_on_the_filesystem_with_its_figures(tmp_path: Path) -> None:
    """Steps 41-60 take 9 s while NFS reads on both job hosts jump from 0.1 to 2.4 GB/s, and x-009, outside the
    job, reads 3.1 GB/s from the same filesystem at the same time."""
    step_s = _steps(range(41, 61), 9.0)
    lo, hi = _step_start_s(step_s, 41), _step_start_s(step_s, 61)
    end = _step_start_s(step_s, 101)
    with Lab(tmp_path / "db.duckdb") as lab:
        run_on(lab.con, "r", ["h-001", "h-002"], step_s)
        for host in ("h-001", "h-002"):
            write_throughput(lab.con, host, end, (lo, hi), 2.4e9)
        write_throughput(lab.con, "x-009", end, (lo - 30, hi), 3.1e9)
        a = lab.attribute("r")
        evidence = lab.evidence("r:1:slowdown:41")
    row = a.incidents.filter(pl.col("kind") == "slowdown").row(0, named=True)
    assert (row["failure_mode"], row["first_step"], row["last_step"]) == ("filesystem_io", 41, 60)
    assert row["host"] in {"h-001", "h-002"}
    text = evidence["text"][0]
    assert "NFS throughput 2.4 GB/s" in text and "24.0x its usual 0.1 GB/s" in text
    assert "2 of 2 job hosts saturated" in text and "outside the job: x-009 (3.1 GB/s)" in text
    assert a.rows.filter(pl.col("incident_id") == "r:1:slowdown:41")["seconds"].sum() == 20 * 4.0


def test_steady_heavy_io_is_not_saturation(tmp_path: Path) -> None:
    """A host that always reads 2 GB/s is busy, not saturated by someone: no episode."""
    with Lab(tmp_path / "db.duckdb") as lab:
        write_run(lab.con, "r", 16, [Attempt(0, 30, [5.0] * 50, hosts=["h-001"])])
        write_throughput(lab.con, "h-001", 300, (0, 0), 0.0, usual_bytes_s=2e9)
        assert not telemetry_incidents.saturation_episodes(lab.con, ["h-001"]).height


def test_rising_error_counters_are_evidence_where_the_logs_say_nothing(tmp_path: Path) -> None:
    """Steps 21-30 slow while GPU 2 of h-001 replays PCIe packets at 40/s; no log line says so. A DCGM Xid 79 on
    GPU 6 of h-002 later is its own evidence (gpu_fell_off_bus), with its code."""
    step_s = _steps(range(21, 31), 7.0)
    lo, hi = _step_start_s(step_s, 21), _step_start_s(step_s, 31)
    end = _step_start_s(step_s, 101)
    with Lab(tmp_path / "db.duckdb") as lab:
        run_on(lab.con, "r", ["h-001", "h-002"], step_s)
        write_gpu_telemetry(lab.con, "h-001", end, {2: (lo, hi, {"pcie_replay_per_s": 40.0})})
        write_gpu_telemetry(lab.con, "h-002", end, {6: (end - 60, end + 1, {"xid_last": 79.0})})
        a = lab.attribute("r")
        evidence = lab.evidence("r:1:slowdown:21")
        errors = telemetry_incidents.error_episodes(lab.con)
    row = a.incidents.filter(pl.col("kind") == "slowdown").row(0, named=True)
    assert (row["host"], row["failure_mode"]) == ("h-001", "pcie_error")
    assert evidence["text"][0] == "GPU 2 (0000:38:00): PCIe replays rising, up to 40.0/s"
    xid = errors.filter(pl.col("kind") == "xid").row(0, named=True)
    assert (xid["host"], xid["gpu"], xid["xid"], xid["failure_mode"]) == ("h-002", 6, 79, "gpu_fell_off_bus")

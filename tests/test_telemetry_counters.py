"""Error counters at an attempt's end (issue 20): rising Xid, ECC, PCIe replay and NVLink counters back up the log
evidence, and where the logs are missing they are the evidence. Hand-made bundles in real formats, end to end
through ingest: a Megatron training log, the node's dmesg, sacct's record and dcgm-exporter scrapes."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

from clusterlab import Lab
from clusterlab.diagnose import counter_evidence, root_cause, telemetry_incidents

START = dt.datetime(2026, 11, 24, 10, 0, 30)  # the first step; one every 8 s
STEPS = 300
LAST_STEP = START + dt.timedelta(seconds=8 * STEPS)  # 10:40:30
HOSTS = ["n-001", "n-002", "n-003", "n-004"]
KILL = "slurmstepd: error: *** JOB 7001 ON n-001 CANCELLED AT 2026-11-24T10:41:30 DUE TO TIME LIMIT ***"
Series = Callable[[dt.datetime], float]

# dcgm-exporter's metric names, HELP texts and types: github.com/NVIDIA/dcgm-exporter, etc/default-counters.csv
# (DCGM_FI_DEV_XID_ERRORS: "Value of the last XID error encountered", a gauge). The labels as in
# data_samples/prometheus_text/dcgm_exporter_scrapes.txt; one scrape every 15 s after a `date -u +"# %FT%TZ"` line.
METRICS = [
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", 1980.0),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", 66.0),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", 652.5),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", 0.0),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", 12.0),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors.", 0.0),
    ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter",
     "Total number of NVLink flow-control CRC errors.", 0.0),
]


def bus(gpu: int) -> str:
    return f"00000000:{0x18 + 16 * gpu:02X}:00.0"


def at(clock: str) -> dt.datetime:
    return dt.datetime.combine(START.date(), dt.time.fromisoformat(clock))


def rising(since: str, per_s: float, until: str | None = None, base: float = 0.0) -> Series:
    """A counter that counts `per_s` a second from `since` (to `until`)."""
    lo, hi = at(since), at(until) if until else dt.datetime.max

    def value(t: dt.datetime) -> float:
        return base + per_s * max(0.0, (min(t, hi) - lo).total_seconds())
    return value


def from_(clock: str, value: float, before: float = 0.0) -> Series:
    return lambda t: value if t >= at(clock) else before


def dcgm_scrapes(host: str, lo: str, hi: str, odd: dict[tuple[int, str], Series]) -> str:
    """Scrapes of 8 GPUs every 15 s from `lo` to `hi`; `odd[(gpu, metric)]` gives that series' value at a time."""
    out, t, first = [], at(lo), True
    while t <= at(hi):
        out.append(f"# {t:%Y-%m-%dT%H:%M:%S}Z")
        for name, kind, help_text, usual in METRICS:
            if first:
                out += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
            for gpu in range(8):
                labels = (f'gpu="{gpu}",UUID="GPU-5e1f0c2a-{host}-{gpu}",pci_bus_id="{bus(gpu)}",device="nvidia{gpu}",'
                          f'modelName="NVIDIA H100 80GB HBM3",Hostname="{host}",DCGM_FI_DRIVER_VERSION="550.90.07"')
                v = odd[(gpu, name)](t) if (gpu, name) in odd else usual
                out.append(f"{name}{{{labels}}} {v:g}")
        first, t = False, t + dt.timedelta(seconds=15)
    return "\n".join(out) + "\n"


def _megatron(t: dt.datetime, step: int) -> str:
    return (f"[{t:%Y-%m-%d %H:%M:%S}] iteration {step:8d}/ 5000000 | consumed samples: {step * 64:12d} | "
            "elapsed time per iteration (ms): 8000.0 | throughput per GPU (TFLOP/s/GPU): 451.7 | "
            "learning rate: 3.000000E-04 | global batch size:    64 | lm loss: 4.934242E+00 | loss scale: 1.0 | "
            "grad norm: 0.918 | number of skipped iterations:   0 | number of nan iterations:   0 |")


def bundle(root: Path, state: str, *, dmesg: dict[str, list[str]] | None = None, tail: list[str] | None = None,
           dcgm: dict[str, str] | None = None) -> Path:
    """One 4-node run: Megatron steps every 8 s from 10:00:30 to 10:40:30, then `tail`; sacct's `state`;
    each host's `dmesg` lines and `dcgm` scrapes under nodes/<host>/."""
    (root / "runs/r/attempt-1").mkdir(parents=True)
    (root / "inventory.toml").write_text('[providers.acme]\nusd_per_gpu_hour = 2.0\n\n[clusters.c1]\n'
                                         'provider = "acme"\ngpus_per_node = 8\nnodes = "n-[001-004]"\n')
    (root / "runs/r/run.toml").write_text('cluster = "c1"\ngpus = 32\n')
    lines = [f"job 7001 on n-[001-004] starting at {START:%a %b %d %H:%M:%S} UTC {START:%Y}"]
    lines += [_megatron(START + dt.timedelta(seconds=8 * i), i) for i in range(1, STEPS + 1)]
    (root / "runs/r/attempt-1/train.log").write_text("\n".join(lines + (tail or [])) + "\n")
    for host in HOSTS:
        (root / f"nodes/{host}").mkdir(parents=True)
    for host, rows in (dmesg or {}).items():
        (root / f"nodes/{host}/dmesg").write_text("\n".join(rows) + "\n")
    for host, text in (dcgm or {}).items():
        (root / f"nodes/{host}/dcgm-exporter.prom").write_text(text)
    (root / "scheduler").mkdir()
    end = LAST_STEP + dt.timedelta(seconds=60)
    (root / "scheduler/sacct.txt").write_text(
        "JobID|JobName|State|ExitCode|Start|End|NNodes|NodeList\n"
        f"7001|r|{state}|0:0|2026-11-24T10:00:25|{end:%Y-%m-%dT%H:%M:%S}|4|n-[001-004]\n")
    return root


@dataclass
class Judged:
    """What attribution made of a bundle's attempt end, and what the logs alone said (root_cause, before the
    counters were weighed), with the telemetry the bundle gave."""

    inc: dict
    ev: pl.DataFrame
    logs_only: dict
    episodes: pl.DataFrame  # telemetry_incidents.error_episodes
    rates: pl.DataFrame  # metric, gpu, least and most rate of every *_per_s series


def attempt_end(root: Path) -> Judged:
    with Lab(":memory:") as lab:
        assert lab.ingest(root).problems == []
        a = lab.attribute("r")
        inc = a.incidents.filter(pl.col("kind") == "attempt_end").row(0, named=True)
        return Judged(inc, a.evidence.filter(pl.col("incident_id") == inc["incident_id"]).sort("rank_in_incident"),
                      root_cause.attempt_end_incidents(lab.con, "r")[0].row(0, named=True),
                      telemetry_incidents.error_episodes(lab.con),
                      lab.sql("SELECT metric, host, gpu, min(value) AS lo, max(value) AS hi FROM telemetry "
                              "WHERE metric LIKE '%_per_s' GROUP BY ALL"))


def _xid79(clock: str, gpu: int) -> str:
    pci = bus(gpu)[4:-2].lower()
    return (f"2026-11-24T{clock},000000+00:00 NVRM: Xid (PCI:{pci}): 79, pid=72468, name=python, "
            "GPU has fallen off the bus.")


def test_rising_counters_on_the_logs_host_and_gpu_back_up_the_log_cause(tmp_path: Path) -> None:
    """dmesg of n-003: Xid 79 on GPU 1 at 10:40:33, 3 s after the last step. DCGM saw GPU 1's PCIe replays climb
    for a minute and a half before it, and then the Xid; NVLink CRC errors on GPU 6 of n-003 and GPU 5 of n-001
    disagree."""
    dmesg = {"n-003": [_xid79("10:40:33", 1)]}
    dcgm = {"n-003": dcgm_scrapes("n-003", "10:30:00", "10:41:00", {
                (1, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"): rising("10:39:00", 45.0, "10:40:30", base=12.0),
                (1, "DCGM_FI_DEV_XID_ERRORS"): from_("10:40:45", 79.0),
                (6, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"): rising("10:40:00", 2.0)}),
            "n-001": dcgm_scrapes("n-001", "10:30:00", "10:41:00", {
                (5, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"): rising("10:39:30", 3.0)})}
    got = attempt_end(bundle(tmp_path, "FAILED", dmesg=dmesg, dcgm=dcgm))
    inc, ev, logs_only = got.inc, got.ev, got.logs_only
    assert (logs_only["failure_mode"], logs_only["host"]) == (inc["failure_mode"], inc["host"]) == (
        "gpu_fell_off_bus", "n-003")
    assert (inc["gpu"], inc["bus_id"]) == (1, "0000:28:00")
    want = round(1 - (1 - logs_only["confidence"]) * counter_evidence.BACKED_DOUBT_KEPT, 2)
    assert inc["confidence"] == want > logs_only["confidence"]
    assert ev["source"][0] == "kernel" and "Xid" in ev["text"][0]  # the log line stays the root cause
    counters = ev.filter(pl.col("source") == "telemetry")
    assert set(counters["kind"]) == {"pcie_replay_per_s_rising", "xid"}
    assert set(counters["host"]) == {"n-003"} and all(t.startswith("GPU 1 (0000:28:00)") for t in counters["text"])
    for r in counters.iter_rows(named=True):  # file:line is the telemetry sample itself
        assert r["file"].endswith("nodes/n-003/dcgm-exporter.prom")
        sample = Path(r["file"]).read_text().splitlines()[r["line"] - 1]
        assert 'gpu="1"' in sample and ("PCIE_REPLAY" in sample or sample.endswith(" 79")), sample
    other = [x for x in inc["rejected"] if x["candidate"]["host"] == "n-001"]
    assert other and other[0]["candidate"]["failure_mode"] == "nvlink_error"
    assert "another host" in other[0]["reason"] and "n-003" in other[0]["reason"]
    beside = [x for x in inc["rejected"] if x["candidate"]["kind"] == "nvlink_crc_errors_per_s_rising"
              and x["candidate"]["host"] == "n-003"]
    assert beside and "on GPU 6 (0000:78:00), not the GPU the logs name (0000:28:00)" in beside[0]["reason"]


@pytest.mark.parametrize("rival", [False, True])
def test_where_only_the_scheduler_says_node_fail_a_new_xid_on_a_job_gpu_is_the_cause(tmp_path: Path,
                                                                                     rival: bool) -> None:
    """No kernel line, no traceback: the training log stops and sacct says NODE_FAIL. DCGM on n-002 counted two
    uncorrectable ECC errors on GPU 4 and reported Xid 48 right after the last step. A rival: NVLink CRC errors
    on GPU 0 of n-003 in the same minute make the cause less sure, and are rejected."""
    dcgm = {"n-002": dcgm_scrapes("n-002", "10:30:00", "10:41:00", {
        (4, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"): from_("10:40:30", 2.0),
        (4, "DCGM_FI_DEV_XID_ERRORS"): from_("10:40:45", 48.0)})}
    if rival:
        dcgm["n-003"] = dcgm_scrapes("n-003", "10:30:00", "10:41:00", {
            (0, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"): rising("10:40:00", 4.0)})
    got = attempt_end(bundle(tmp_path, "NODE_FAIL", dcgm=dcgm))
    inc, ev = got.inc, got.ev
    assert (got.logs_only["failure_mode"], got.logs_only["host"]) == ("node_failure", None)
    assert (inc["failure_mode"], inc["host"], inc["gpu"], inc["bus_id"]) == ("gpu_memory_ecc", "n-002", 4,
                                                                             "0000:58:00")
    assert inc["blame"] == "provider" and inc["action"] == "reset GPU"
    conf = counter_evidence.CAUSE_CONFIDENCE["xid"] - (counter_evidence.RIVAL_PENALTY if rival else 0.0)
    assert inc["confidence"] == round(conf, 2) < 0.9  # below a log line's
    first = ev.row(0, named=True)
    assert (first["source"], first["kind"], first["xid"]) == ("telemetry", "xid", 48)
    assert first["text"] == "GPU 4 (0000:58:00): DCGM reports Xid 48" and first["line"] > 0
    assert "uncorrectable (double-bit) ECC errors rising" in ev["text"][1]
    assert "sacct" in ev["source"].to_list()  # the scheduler's word stays beside it
    assert set(ev.filter(pl.col("source") == "telemetry")["host"]) == {"n-002"}
    rejected = [x for x in inc["rejected"] if x["candidate"]["host"] == "n-003"]
    assert [x["reason"] for x in rejected] == (["outranked by xid on GPU 4 of n-002 at 10:40:45"] if rival else [])


@pytest.mark.parametrize(("state", "tail", "mode"), [("TIMEOUT", [KILL], "time_limit"),
                                                     ("NODE_FAIL", [], "node_failure")])
def test_errors_the_job_stepped_past_for_25_minutes_are_not_the_cause(tmp_path: Path, state: str, tail: list[str],
                                                                       mode: str) -> None:
    """GPU 2 of n-002 had ECC errors and an Xid 48 at 10:15, then the job stepped on to 10:40:30 and the scheduler
    ended it: a red herring, rejected with the steps that followed it."""
    dcgm = {"n-002": dcgm_scrapes("n-002", "10:10:00", "10:41:00", {
        (2, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"): rising("10:15:00", 0.1, "10:15:30"),
        (2, "DCGM_FI_DEV_XID_ERRORS"): from_("10:15:15", 48.0)})}
    got = attempt_end(bundle(tmp_path, state, tail=tail, dcgm=dcgm))
    inc, ev = got.inc, got.ev
    assert got.episodes.height >= 2  # the errors were seen, and judged below
    assert (inc["failure_mode"], inc["host"]) == (mode, None)
    assert "telemetry" not in ev["source"].to_list()
    herring = [x for x in inc["rejected"] if x["candidate"]["host"] == "n-002"]
    assert {x["candidate"]["kind"] for x in herring} == {"xid", "ecc_dbe_per_s_rising"}
    assert all("kept stepping for 25 min" in x["reason"] for x in herring), herring


def test_pcie_replays_under_the_threshold_are_not_blamed(tmp_path: Path) -> None:
    """n-003's GPU 2 replays a PCIe packet every 5 s before the node failure: normal, no episode, no blame."""
    dcgm = {"n-003": dcgm_scrapes("n-003", "10:30:00", "10:41:00", {
        (2, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"): rising("10:35:00", 0.2, base=12.0)})}
    got = attempt_end(bundle(tmp_path, "NODE_FAIL", dcgm=dcgm))
    assert (got.inc["failure_mode"], got.inc["host"]) == ("node_failure", None)
    assert "telemetry" not in got.ev["source"].to_list() and not got.inc["rejected"]
    replays = got.rates.filter(pl.col("metric") == "pcie_replay_per_s", pl.col("gpu") == 2)
    assert 0.1 < replays["hi"][0] < telemetry_incidents.ERROR_RATES[2][2]  # read, and under the threshold


def test_a_counter_reset_gives_no_negative_rate_and_no_false_episode(tmp_path: Path) -> None:
    """A driver reload at 10:38 on n-002 resets GPU 3's counters: PCIe replays from 5000 to 0 (then one a minute),
    ECC DBE from 3 to 0. Nothing rose: no episode, and the node failure is not put on the counters."""
    dcgm = {"n-002": dcgm_scrapes("n-002", "10:30:00", "10:41:00", {
        (3, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"): lambda t: 5000.0 if t < at("10:38:00") else
        rising("10:38:00", 1 / 60)(t),
        (3, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"): from_("10:38:00", 0.0, before=3.0)})}
    got = attempt_end(bundle(tmp_path, "NODE_FAIL", dcgm=dcgm))
    assert (got.inc["failure_mode"], got.inc["host"]) == ("node_failure", None)
    rates = got.rates.filter(pl.col("gpu") == 3)
    assert rates.height == 3 and rates["lo"].min() >= 0.0
    assert rates.filter(pl.col("metric") == "ecc_dbe_per_s")["hi"][0] == 0.0
    assert not got.episodes.height

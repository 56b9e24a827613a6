"""Telemetry for a simulated bundle: each straggler's slow GPU shows throttling, and a hot GPU that does not throttle
sits on another host of the same job as a decoy; truth.json says so.

    from clusterlab.simulator import simulate
    from clusterlab.simulator.telemetry import add_telemetry
    simulate(out, seed=1, ...)
    add_telemetry(out, seed=1)

The simulator's stragglers are GPUs running 20-50 % slow: here the straggler host gets dcgm-exporter scrapes (every
15 s, from 10 minutes before the stretch to 10 minutes after) in which one of its GPUs has HW thermal slowdown
active and its SM clock divided by the slowdown factor for the stretch, and truth.json's straggler incident becomes a
`gpu_throttle` one naming that GPU and bus id. Another host of the attempt gets a GPU at 90 C at full clock over
the same window, listed as a `hot_gpu` decoy: blaming it is a mistake the round trip counts. Each noticeable job-wide
slowdown becomes a bulk transfer on the shared filesystem, in node exporter scrapes (clusterlab.simulator.transfer).
An attempt that ended of a GPU fault (ECC, fell off the bus, NVLink, PCIe) gets the error counter DCGM would have
seen climb on the culprit GPU in the minute before it (`counters` in its truth: the GPU, its bus id, the metric).
Written apart from `simulate` (a bundle is amended after the fact), so the simulator's own output stays as it was.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from pathlib import Path

from clusterlab import telemetry
from clusterlab.simulator import fleet, transfer

SCRAPE_S = 15
MARGIN = dt.timedelta(minutes=10)
FULL_CLOCK_MHZ = 1980
THERMAL = telemetry.THROTTLE_BITS["hw_thermal_slowdown"]
_METRICS = ("DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE",
            "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")


def _ts(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).replace(tzinfo=None)


def bus_of(gpu: int) -> str:
    """The bus id dcgm-exporter prints for GPU `gpu` of a simulated node (the layout its kernel lines name)."""
    return f"00000000:{fleet.H100_BUS[gpu].upper()}:00.0"


# The counter a GPU fault makes climb first, and how fast (per second) in the minute before it.
FAULT_COUNTERS = {"gpu_memory_ecc": ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", 0.05),
                  "gpu_fell_off_bus": ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", 40.0),
                  "pcie_error": ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", 40.0),
                  "nvlink_error": ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", 5.0)}
COUNTER_LEAD = dt.timedelta(minutes=1)


def _counter_scrapes(host: str, gpus: int, fault: dt.datetime, gpu: int, metric: str, per_s: float) -> str:
    """Scrapes of `metric` on every GPU from 5 minutes before `fault` to a minute after; GPU `gpu`'s climbs
    `per_s` in the COUNTER_LEAD before the fault."""
    out, lo = [], fault - dt.timedelta(minutes=5)
    for k in range(int(6 * 60 // SCRAPE_S) + 1):
        t = lo + dt.timedelta(seconds=SCRAPE_S * k)
        out.append(f"# {t.isoformat(timespec='seconds')}Z")
        climbed = per_s * min(max((t - (fault - COUNTER_LEAD)).total_seconds(), 0.0), COUNTER_LEAD.total_seconds())
        for g in range(gpus):
            labels = (f'gpu="{g}",UUID="GPU-sim-{host}-{g}",pci_bus_id="{bus_of(g)}",device="nvidia{g}",'
                      f'modelName="NVIDIA H100 80GB HBM3",Hostname="{host}"')
            out.append(f"{metric}{{{labels}}} {round(climbed) if g == gpu else 0}")
    return "\n".join(out) + "\n"


def _scrapes(host: str, gpus: int, lo: dt.datetime, hi: dt.datetime, odd: int, odd_lo: dt.datetime,
             odd_hi: dt.datetime, values: dict[str, float]) -> str:
    """Scrapes of every GPU from `lo` to `hi`; GPU `odd` takes `values` from `odd_lo` to `odd_hi`."""
    out = []
    n = int((hi - lo).total_seconds() // SCRAPE_S) + 1
    for k in range(n):  # a few hundred scrapes a host: text written once, no analysis
        t = lo + dt.timedelta(seconds=SCRAPE_S * k)
        out.append(f"# {t.isoformat(timespec='seconds')}Z")
        for gpu in range(gpus):
            v = {"DCGM_FI_DEV_SM_CLOCK": FULL_CLOCK_MHZ, "DCGM_FI_DEV_GPU_TEMP": 66, "DCGM_FI_DEV_POWER_USAGE": 652.5,
                 "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": 0}
            if gpu == odd and odd_lo <= t <= odd_hi:
                v.update(values)
            labels = (f'gpu="{gpu}",UUID="GPU-sim-{host}-{gpu}",pci_bus_id="{bus_of(gpu)}",device="nvidia{gpu}",'
                      f'modelName="NVIDIA H100 80GB HBM3",Hostname="{host}"')
            out += [f"{m}{{{labels}}} {v[m]:g}" for m in _METRICS]
    return "\n".join(out) + "\n"


def add_telemetry(bundle: Path | str, seed: int = 0) -> list[dict]:
    """Write the stragglers', decoys' and bulk transfers' telemetry into the bundle and amend its truth.json;
    returns the amended incidents (gpu_throttle with `gpu` and `bus_id`) and the transfers' filesystem_io ones."""
    root = Path(bundle)
    truth = json.loads((root / "truth.json").read_text())
    n = int(truth["config"].get("gpus_per_node", 8))
    hosts = {(a["run"], a["attempt"]): a["hosts"] for a in truth["attempts"]}
    rng = random.Random(f"{seed}:telemetry")
    files: dict[str, list[str]] = {}
    amended = []
    for inc in truth["incidents"]:
        if inc["failure_mode"] != "straggler" or not inc.get("host") or not inc.get("end_ts"):
            continue
        start, end = _ts(inc["root_ts"]), _ts(inc["end_ts"])
        lo, hi = start - MARGIN, end + MARGIN
        gpu = rng.randrange(n)
        clock = round(FULL_CLOCK_MHZ / max(float(inc.get("slowdown_factor") or 1.3), 1.05))
        files.setdefault(inc["host"], []).append(_scrapes(
            inc["host"], n, lo, hi, gpu, start, end,
            {"DCGM_FI_DEV_SM_CLOCK": clock, "DCGM_FI_DEV_GPU_TEMP": 91, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": THERMAL}))
        inc.update(failure_mode="gpu_throttle", blame="provider", gpu=gpu, bus_id=bus_of(gpu))
        inc["evidence"] = [*inc.get("evidence", []), f"nodes/{inc['host']}/dcgm-exporter.prom"]
        amended.append(inc)
        others = [h for h in hosts.get((inc["run"], inc["attempt"]), []) if h != inc["host"]]
        if others:
            hot = rng.choice(others)
            files.setdefault(hot, []).append(_scrapes(hot, n, lo, hi, rng.randrange(n), lo, hi,
                                                      {"DCGM_FI_DEV_GPU_TEMP": 90, "DCGM_FI_DEV_POWER_USAGE": 699}))
            truth.setdefault("decoys", []).append({"run": inc["run"], "attempt": inc["attempt"], "host": hot,
                                                   "kind": "hot_gpu", "ts": lo.isoformat() + "Z"})
    for inc in truth["incidents"]:  # attempts that ended of a GPU fault: the culprit GPU's counter
        if inc.get("kind") == "interruption" and inc["failure_mode"] in FAULT_COUNTERS and inc.get("host") \
                and inc.get("rank") is not None:
            metric, per_s = FAULT_COUNTERS[inc["failure_mode"]]
            gpu = inc["rank"] % n
            files.setdefault(inc["host"], []).append(
                _counter_scrapes(inc["host"], n, _ts(inc["root_ts"]), gpu, metric, per_s))
            inc["counters"] = {"gpu": gpu, "bus_id": bus_of(gpu), "metric": metric}
    for host, parts in files.items():
        path = root / "nodes" / host / "dcgm-exporter.prom"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(parts))
    amended += transfer.add_transfers(root, truth, seed)  # after the decoys: a transfer's lead host is none
    truth["telemetry"] = ("stragglers throttle one GPU (gpu_throttle, with its gpu and bus_id); the hot_gpu decoys "
                          "run hot at full clock; a noticeable slowdown is a bulk transfer on the shared filesystem "
                          "(filesystem_io on the host it reached first, with the outside_host that moved it)")
    (root / "truth.json").write_text(json.dumps(truth, indent=1))
    return amended

"""Detection latency of `clusterlab watch`: hang -> alert and failure evidence -> alert, in real time.

    python benchmarks/watch_latency.py [--ranks 8] [--hang-after 10] [--interval 1]

A writer thread appends per-rank step records (clusterlab's JSONL, 0.25 s a step) while a Watcher ticks on a
database file. Failure: an NVRM Xid 79 line is appended to a kernel log and the time to its alert is taken.
Hang: the writer stops and the time from the last record to the hang alert is taken, less the configured
no-progress time. The baseline, measured in the same run, is one tick of the same watch with nothing new
to read (the floor of any detection). The script prints both latencies and their ratio to that tick.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path

from clusterlab.watch import Alerter, Watcher, WatchSettings

STEP_S = 0.25


def writer(root: Path, ranks: int, stop: threading.Event, last: list[float]) -> None:
    """Step records of `ranks` ranks (8 a host) every STEP_S until `stop`; `last[0]`: time of the newest."""
    step = 0
    while not stop.is_set():
        step += 1
        now = time.time()
        for r in range(ranks):
            with open(root / "steps" / f"rank-{r}.jsonl", "a") as f:
                f.write(json.dumps({"ts": now, "rank": r, "host": f"node{r // 8}", "step": step, "step_s": STEP_S,
                                    "compute_s": STEP_S * 0.8, "comm_s": STEP_S * 0.2}) + "\n")
        last[0] = now
        time.sleep(STEP_S)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--hang-after", type=float, default=10.0)
    ap.add_argument("--interval", type=float, default=1.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "steps").mkdir()
        kern = root / "kern.log"
        alerts: dict[str, float] = {}
        w = Watcher(str(root / "w.duckdb"), "bench", [root / "steps", kern],
                    settings=WatchSettings(hang_min_s=args.hang_after, hang_steps=1.0),
                    alerter=Alerter(echo=lambda line: alerts.setdefault(line.split()[1], time.time())),
                    say=lambda _: None)
        stop, last = threading.Event(), [0.0]
        t = threading.Thread(target=writer, args=(root, args.ranks, stop, last))
        t.start()
        ticking = threading.Event()
        loop = threading.Thread(target=w.run, kwargs={"interval": args.interval, "stop": ticking})
        loop.start()
        time.sleep(max(5.0, 20 * STEP_S))
        xid_at = time.time()
        stamp = dt.datetime.fromtimestamp(xid_at, dt.UTC)
        kern.write_text(f"{stamp:%Y-%m-%dT%H:%M:%S}+0000 node0 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1, "
                        "name=python, GPU has fallen off the bus.\n")
        while "FAILURE" not in alerts and time.time() - xid_at < 120:
            time.sleep(0.05)
        stop.set()
        t.join()
        while "HANG" not in alerts and time.time() - last[0] < 10 * args.hang_after + 120:
            time.sleep(0.05)
        ticking.set()
        loop.join()
        ticks = []
        for _ in range(5):  # the floor: a tick with nothing new to read
            t0 = time.monotonic()
            w.tick()
            ticks.append(time.monotonic() - t0)
    tick = statistics.median(ticks)
    fail = alerts.get("FAILURE", float("nan")) - xid_at
    hang = alerts.get("HANG", float("nan")) - last[0] - args.hang_after
    print(f"ranks {args.ranks}, interval {args.interval:g} s, no-progress time {args.hang_after:g} s")
    print(f"idle tick (baseline):           {tick:6.2f} s")
    print(f"failure evidence -> alert:      {fail:6.2f} s  ({fail / tick:.1f}x a tick)")
    print(f"hang -> alert (beyond the limit): {hang:5.2f} s  ({hang / tick:.1f}x a tick)")


if __name__ == "__main__":
    main()

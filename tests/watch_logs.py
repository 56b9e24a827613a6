"""Evidence that grows between a watch's ticks, written in the real formats the collectors read.

- Per-rank step records: clusterlab's own JSONL (DESIGN.md, "Per-rank step record"; golden sample
  data_samples/step_jsonl/rank_steps.jsonl): `ts` in epoch seconds, rank, host, step, step_s, compute_s, ...
- Kernel lines: `journalctl -k -o short-iso` (data_samples/kernel/journal_short_iso.log), NVRM Xid lines as
  NVIDIA documents them (https://docs.nvidia.com/deploy/xid-errors/index.html: `NVRM: Xid (PCI:...): 79, ...`).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

T0 = dt.datetime(2026, 12, 1, 10, 0, 0)  # the job's clock (UTC)
STEP_S = 2.0


def step_ts(step: int) -> dt.datetime:
    return T0 + dt.timedelta(seconds=step * STEP_S)


def write_steps(root: Path, rank: int, host: str, first: int, last: int, compute_s: float = 1.5) -> Path:
    """Append steps first..last of one rank to root/steps/rank-R.jsonl (the file a rank grows)."""
    path = root / "steps" / f"rank-{rank}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        for s in range(first, last + 1):
            f.write(json.dumps({"ts": step_ts(s).replace(tzinfo=dt.UTC).timestamp(), "rank": rank, "host": host,
                                "step": s, "step_s": STEP_S, "compute_s": compute_s, "comm_s": 0.4, "data_s": 0.1,
                                "tokens": 1024, "loss": 3.0}) + "\n")
    return path


def kernel_line(ts: dt.datetime, host: str, message: str) -> str:
    return f"{ts:%Y-%m-%dT%H:%M:%S}+0000 {host} kernel: {message}\n"


def xid79(ts: dt.datetime, host: str) -> str:
    return kernel_line(ts, host, "NVRM: Xid (PCI:0000:18:00): 79, pid=4242, name=python, GPU has fallen off the bus.")


def link_down(ts: dt.datetime, host: str) -> str:
    return kernel_line(ts, host, "mlx5_core 0000:3b:00.0 ib0: Link down")

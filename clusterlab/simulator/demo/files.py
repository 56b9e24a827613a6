"""Where the demo scenario's text goes: the simulator's Sink, and its per-rank step records.

Names ending in `.gz` are compressed by the Sink (mtime 0 in the header); every file gets the
moment the bundle was collected as its mtime, which the formats without a year need at ingest.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from pathlib import Path

import polars as pl

from clusterlab.simulator import rank_steps
from clusterlab.simulator.demo.story import COLLECTED_AT, Attempt, rng
from clusterlab.simulator.sink import Sink
from clusterlab.simulator.stamps import UTC, after

EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)


class Files:
    """The demo bundle being written: small text files at once, through a Sink."""

    def __init__(self, root: Path) -> None:
        self.sink = Sink(root, gzip_big=False)

    def text(self, rel: str, text: str | list[str]) -> None:
        """A text file; a list is its lines."""
        self.sink.text(rel, "\n".join(text) + "\n" if isinstance(text, list) else text)

    def raw(self, rel: str, data: bytes) -> None:
        """A file of bytes (a log with junk in it)."""
        self.sink.text(rel, data)

    def finish(self) -> int:
        """Stamp every file with the collection time; total bytes on disk."""
        return self.sink.finish(COLLECTED_AT.timestamp())


def _ms(t: dt.datetime, epoch_ts: bool) -> int:
    """Epoch milliseconds as the record prints them: rounded as seconds, truncated as ISO text."""
    if epoch_ts:  # NOTE: as `round(ts, 3)` of the float does, which is not always the integer rounding
        return round(round(t.timestamp(), 3) * 1000)
    return (t - EPOCH) // dt.timedelta(milliseconds=1)


def write_rank_steps(files: Files, att: Attempt, per_node: int, tokens: int, loss: Callable[[int], float], *,
                     epoch_ts: bool) -> int:
    """steps/rank-<R>.jsonl.gz: the per-rank record `torchtools.instrument` writes, one object a step; returns how many.

    Every rank measures the step a little differently (its own clock and timer) around the all-reduce's end.
    """
    r: random.Random = rng(f"rank-steps:{att.run}:{att.k}")
    nranks = len(att.hosts) * per_node
    cols: list[dict[str, list[int]]] = [{k: [] for k in ("end", "step", "step_ms", "data_ms", "compute_ms",
                                                         "comm_ms", "loss")} for _ in range(nranks)]
    for s in att.steps:
        for rank in range(nranks):
            step_s = s.step_s + r.gauss(0, 0.0015)
            end = after(s.end, r.gauss(0, 0.002))
            comm = step_s - s.compute[rank] - s.data[rank]
            c = cols[rank]
            c["end"].append(_ms(end, epoch_ts))
            c["step"].append(s.step)
            c["step_ms"].append(round(step_s * 1000))
            c["data_ms"].append(round(s.data[rank] * 1000))
            c["compute_ms"].append(round(s.compute[rank] * 1000))
            c["comm_ms"].append(round(comm * 1000))
            c["loss"].append(round((loss(s.step) + r.gauss(0, 0.02)) * 10_000))
    base = f"runs/{att.run}/attempt-{att.k}/steps"
    for rank, c in enumerate(cols):
        per_step = pl.DataFrame({k: c[k] for k in ("end", "step", "step_ms", "data_ms")}, schema_overrides={
            "end": pl.Int64, "step": pl.Int64, "step_ms": pl.Int64, "data_ms": pl.Int64})
        per_rank = pl.DataFrame({"i": range(len(c["step"])), "rank": [rank] * len(c["step"]),
                                 "compute_ms": c["compute_ms"], "comm_ms": c["comm_ms"], "loss": c["loss"]},
                                schema_overrides={"i": pl.Int64, "rank": pl.Int64, "compute_ms": pl.Int64,
                                                  "comm_ms": pl.Int64, "loss": pl.Int64})
        with files.sink.open(f"{base}/rank-{rank}.jsonl.gz") as out:
            rank_steps.write_records(out, per_step, per_rank, att.host_of(rank, per_node), tokens, epoch_ts)
    return nranks * len(att.steps)

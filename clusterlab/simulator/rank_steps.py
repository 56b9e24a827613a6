"""Per-rank step records (clusterlab's instrumentation JSONL), one file per node, formatted by polars.

This is the bulk of a bundle (ranks x steps lines), so nothing here loops over records in Python:
each block of steps is built as arrays and turned into lines in one vectorised pass. All ranks of
a step end together (the all-reduce) and report the same step time; they differ in compute time
(a slow host's ranks compute longer, the others wait longer in communication).
"""

from __future__ import annotations

import datetime as dt
import io
import json

import numpy as np
import polars as pl

from clusterlab.simulator.adversarial import SDC_STEPS
from clusterlab.simulator.sink import Out
from clusterlab.simulator.timeline import Attempt, Run

CHUNK = 4096  # steps per block: bounds memory whatever the run's length
# instrument.StepRecorder's defaults: a step open this many times the usual step, and at least this long, is stalled
STALL_STEPS, STALL_MIN_S = 10.0, 10.0


def _ms(col: str) -> pl.Expr:
    """Integer milliseconds as seconds with three decimals, exactly (no float formatting)."""
    x = pl.col(col)
    return pl.concat_str([(x // 1000).cast(pl.String), pl.lit("."), (x % 1000).cast(pl.String).str.zfill(3)])


def _loss(steps: np.ndarray) -> np.ndarray:
    """A pre-training loss curve (no noise)."""
    return 2.1 + 8.6 * np.exp(-steps / 160.0) + 0.9 * np.exp(-steps / 2500.0)


def _block(run: Run, att: Attempt, node: int, lo: int, hi: int, rng: np.random.Generator, skew_ms: int = 0
           ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Steps [lo, hi) of one node: a frame per step, and one per record (step-major, rank-minor)."""
    s = att.steps
    gpn = run.cluster.gpus_per_node
    m = hi - lo
    factor = np.where(s.slow[lo:hi] == node, s.factor[lo:hi], 1.0)
    noise = np.abs(rng.normal(0.0, 0.003, (m, gpn)))
    compute = np.rint(s.compute_ms[lo:hi, None] * factor[:, None] * (1.0 - noise)).astype(np.int64)
    comm = s.step_ms[lo:hi, None] - compute - s.data_ms[lo:hi, None]
    loss = np.rint((_loss(s.step[lo:hi])[:, None] + rng.normal(0.0, 0.01, (m, gpn))) * 10_000).astype(np.int64)
    # NOTE: `ts` is read off the host's own clock: a skewed host stamps its records off by its skew
    per_step = pl.DataFrame({"end": s.end[lo:hi] + skew_ms, "step": s.step[lo:hi], "step_ms": s.step_ms[lo:hi],
                             "data_ms": s.data_ms[lo:hi]})
    ranks = np.tile(np.arange(node * gpn, (node + 1) * gpn), m)
    per_rank = pl.DataFrame({"i": np.repeat(np.arange(m), gpn), "rank": ranks, "compute_ms": compute.ravel(),
                             "comm_ms": comm.ravel(), "loss": loss.ravel()})
    return per_step, _case(per_rank, att, lo)


def _case(per_rank: pl.DataFrame, att: Attempt, lo: int) -> pl.DataFrame:
    """The ending's rank as the issue-29 cases leave it: one rank's loss non-finite on the last steps while its
    peers' stay finite (`sdc`), or one rank stopped inside the last step the others finished (`hung_rank`; a
    `gloo_hang` rank stops after it: every rank's records end together, and `_stalls` tells them apart)."""
    e, n = att.ending, len(att.steps)
    if e.case == "sdc":
        bad = (pl.col("rank") == e.rank) & (pl.col("i") + lo >= n - SDC_STEPS)
        return per_rank.with_columns(nonfinite=bad)
    if e.case == "hung_rank":
        return per_rank.filter(~((pl.col("rank") == e.rank) & (pl.col("i") + lo == n - 1)))
    return per_rank


def _lines(per_step: pl.DataFrame, per_rank: pl.DataFrame, host: str, tokens: int, epoch: bool) -> pl.DataFrame:
    """One JSON object per record, as `clusterlab.torchtools.instrument` writes it."""
    # NOTE: what all ranks of a step share is formatted once per step, then gathered per record
    ts = (pl.concat_str([pl.lit('"'), pl.from_epoch(pl.col("end"), time_unit="ms")
                         .dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ"), pl.lit('"')]) if not epoch else _ms("end"))
    head = per_step.select(a=pl.concat_str([pl.lit('{"ts":'), ts, pl.lit(',"rank":')]),
                           b=pl.concat_str([pl.lit(f',"host":"{host}","step":'), pl.col("step").cast(pl.String),
                                            pl.lit(',"step_s":'), _ms("step_ms"), pl.lit(',"compute_s":')]),
                           c=pl.concat_str([pl.lit(',"data_s":'), _ms("data_ms"),
                                            pl.lit(f',"tokens":{tokens},')]))
    shared = head[per_rank["i"]]
    loss = pl.concat_str([pl.lit('"loss":'), (pl.col("loss") // 10_000).cast(pl.String), pl.lit("."),
                          (pl.col("loss") % 10_000).cast(pl.String).str.zfill(4)])
    if "nonfinite" in per_rank.columns:  # JSON holds no NaN: the recorder says so instead (instrument.StepRecorder)
        loss = pl.when(pl.col("nonfinite")).then(pl.lit('"loss_nonfinite":true')).otherwise(loss)
    return pl.concat([shared, per_rank], how="horizontal").select(pl.concat_str([
        pl.col("a"), pl.col("rank").cast(pl.String), pl.col("b"), _ms("compute_ms"), pl.lit(',"comm_s":'),
        _ms("comm_ms"), pl.col("c"), loss, pl.lit("}")]).alias("line"))


def write_node(out: Out, run: Run, att: Attempt, node: int, seed: int, first: int = 0, stop: int | None = None,
               skew_ms: int = 0) -> int:
    """The step records of one node's ranks, steps [first, stop) of the attempt; returns how many."""
    rng = np.random.default_rng([seed, run.cluster.index, att.k, node, 7])
    tokens = run.tokens_per_step // run.gpus
    epoch = run.cluster.index % 2 == 1  # both spellings of `ts` occur in the wild
    n = len(att.steps) if stop is None else stop
    for lo in range(first, n, CHUNK):
        write_records(out, *_block(run, att, node, lo, min(n, lo + CHUNK), rng, skew_ms), att.hosts[node], tokens,
                      epoch)
    if att.ending.case == "gloo_hang" and n == len(att.steps):
        out.write(_stalls(run, att, node, skew_ms))
    return max(0, n - first) * run.cluster.gpus_per_node


def _stalls(run: Run, att: Attempt, node: int, skew_ms: int) -> bytes:
    """`gloo_hang`: the stall record `instrument.StepRecorder` writes for each rank of the node that began the step
    after the last and waits in its all-reduce (the hung rank never began it: it writes none)."""
    gpn, s = run.cluster.gpus_per_node, att.steps
    step_s = int(s.step_ms[-1]) / 1000
    stalled = max(STALL_MIN_S, STALL_STEPS * step_s)
    at = dt.datetime.fromtimestamp((int(s.end[-1]) + skew_ms) / 1000 + stalled, dt.UTC)
    return "".join(json.dumps({"ts": at.isoformat(timespec="microseconds"), "rank": rank, "host": att.hosts[node],
                               "step": int(s.step[-1]) + 1, "stalled_s": round(stalled + 0.05 * (rank % gpn), 3),
                               "region": "comm"}) + "\n"
                   for rank in range(node * gpn, (node + 1) * gpn) if rank != att.ending.rank).encode()


def write_records(out: Out, per_step: pl.DataFrame, per_rank: pl.DataFrame, host: str, tokens: int, epoch: bool
                  ) -> None:
    """Records of one host's ranks from integer frames (the demo scenario builds its own).

    per_step: end (epoch ms), step, step_ms, data_ms; per_rank: i (row of per_step), rank, compute_ms,
    comm_ms, loss (x 10,000). `epoch`: `ts` as epoch seconds, else ISO 8601 with `Z`.
    """
    buf = io.BytesIO()
    _lines(per_step, per_rank, host, tokens, epoch).write_csv(buf, include_header=False, quote_style="never")
    out.write(buf.getvalue())

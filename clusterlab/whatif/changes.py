"""Did the hot-fix work? A cluster's changes (an NCCL setting, a driver upgrade, a re-seated cable) and
the cluster's record before against after each: failures per 1,000 GPU-days by mode, MTBF, ETTR and
steady-state MFU, each with a 95 % interval, and plain words when the sample is too small to tell.

Exposure is the GPU-hours the cluster's runs held their GPUs (attempt spans, as the checkpoint advice
counts them), split at the change. A failure counts on the side its root cause falls on. ETTR and MFU
come from each run's ledger and step timeline, split at the change. Rates get exact Poisson intervals
(`clusterlab.account.rates`); ETTR and MFU get a t-interval over batches (attempt segments for ETTR, blocks of
consecutive steps for MFU: steps next to each other are not independent).
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field

import duckdb
import polars as pl

from clusterlab import store
from clusterlab.account import advice, attribution, goodput, rates
from clusterlab.account.ledger import LedgerError
from clusterlab.diagnose import timeline

GPU_DAYS = 1000 * 24  # failures per GPU-hour -> per 1,000 GPU-days
MFU_BLOCKS = 10  # batches of consecutive steps per side for the MFU interval
MIN_STEPS = 30  # fewer steady steps on a side than this: too small to tell
MIN_BATCHES = 3  # fewer batches than this (attempt segments, blocks): too small to tell
STEADY_RATIO = 1.10  # a step this much slower than its side's median is not steady
# t quantile (0.975) by degrees of freedom; above the table the normal's 1.96
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
TOO_SMALL = "too small to tell"


def add_change(con: duckdb.DuckDBPyConnection, cluster: str, at: dt.datetime | str, what: str,
               author: str | None = None) -> int:
    """Record a change made to a cluster at a time (UTC); returns its id."""
    if not what or not what.strip():
        raise ValueError("say what changed")
    when = dt.datetime.fromisoformat(at) if isinstance(at, str) else at
    if when.tzinfo is not None:  # stored as naive UTC, as every ts in the store
        when = when.astimezone(dt.UTC).replace(tzinfo=None)
    return con.execute("INSERT INTO changes (cluster, ts, what, author) VALUES (?, ?, ?, ?) RETURNING change_id",
                       [cluster, when, what.strip(), author]).fetchone()[0]


def changes(con: duckdb.DuckDBPyConnection, cluster: str | None = None, since: dt.datetime | None = None,
            until: dt.datetime | None = None) -> pl.DataFrame:
    """Recorded changes, oldest first: change_id, cluster, ts (when it took effect), what, author, recorded_at."""
    return store.frame(con, """SELECT change_id, cluster, ts, what, author, recorded_at FROM changes
                               WHERE ($cluster IS NULL OR cluster = $cluster) AND ($since IS NULL OR ts >= $since)
                                 AND ($until IS NULL OR ts < $until) ORDER BY ts, change_id""",
                       {"cluster": cluster, "since": since, "until": until})


@dataclass
class Comparison:
    """A cluster before against after one change: one row per metric (and per failure mode)."""

    change: dict
    metrics: pl.DataFrame  # metric, mode, before, before_lo, before_hi, after, after_lo, after_hi, verdict
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"change": {k: (v.isoformat() if isinstance(v, dt.datetime) else v) for k, v in self.change.items()},
                "metrics": self.metrics.to_dicts(), "notes": self.notes}


def _t(df: int) -> float:
    return _T975[df - 1] if 1 <= df <= len(_T975) else 1.96


def _mean_interval(values: list[float]) -> tuple[float | None, float | None]:
    n = len(values)
    if n < 2:
        return None, None
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = _t(n - 1) * sd / math.sqrt(n)
    return mean - half, mean + half


def _verdict(before: tuple, after: tuple, lower_is_better: bool, small: bool) -> str:
    """Better, worse or no clear change from two 95 % intervals; too small to tell when a side is thin."""
    (b, b_lo, b_hi), (a, a_lo, a_hi) = before, after
    if small or None in (b, a, b_lo, b_hi, a_lo, a_hi):
        return TOO_SMALL
    if a_hi < b_lo:
        return "better" if lower_is_better else "worse"
    if a_lo > b_hi:
        return "worse" if lower_is_better else "better"
    return "no clear change (the intervals overlap)"


def _split_hours(spans: pl.DataFrame, at: dt.datetime) -> tuple[float, float]:
    """Hours of the spans (start_ts, end_ts, weight) before and after `at`, weighted."""
    if not spans.height:
        return 0.0, 0.0
    cut = pl.lit(at)
    before = ((pl.min_horizontal("end_ts", cut) - pl.col("start_ts")).dt.total_microseconds().clip(lower_bound=0)
              / 3.6e9 * pl.col("weight"))
    after = ((pl.col("end_ts") - pl.max_horizontal("start_ts", cut)).dt.total_microseconds().clip(lower_bound=0)
             / 3.6e9 * pl.col("weight"))
    out = spans.select(b=before.sum(), a=after.sum())
    return float(out["b"][0] or 0.0), float(out["a"][0] or 0.0)


@dataclass
class _Side:
    gpu_hours: float = 0.0
    failures: list[str] = field(default_factory=list)  # failure modes
    ettr_hours: list[tuple[float, float]] = field(default_factory=list)  # (productive, total) per attempt segment
    mfu: list[float] = field(default_factory=list)  # per steady step, in time order


def compare(con: duckdb.DuckDBPyConnection, cluster: str, change: int | str) -> Comparison:
    """The cluster before against after the change (its id, or the text of `what`)."""
    row = store.frame(con, "SELECT * FROM changes WHERE cluster = ? AND (CAST(change_id AS VARCHAR) = ? OR what = ?)"
                      " ORDER BY ts DESC LIMIT 1", [cluster, str(change), str(change)])
    if not row.height:
        raise KeyError(f"no change {change!r} on cluster {cluster!r} (clusterlab change list)")
    info = row.row(0, named=True)
    at = info["ts"]
    sides = {"before": _Side(), "after": _Side()}
    notes: list[str] = []
    runs = store.frame(con, "SELECT run, gpus FROM runs WHERE cluster = ? AND gpus IS NOT NULL ORDER BY run",
                       [cluster])
    for run, gpus in runs.iter_rows():  # NOTE: one attribution per run of the cluster: a handful
        try:
            a = attribution.attribute(con, run)
        except (LedgerError, KeyError) as e:
            notes.append(f"{run}: left out ({e.args[0] if e.args else e})")
            continue
        _add_run(con, a, gpus, at, sides)
    return Comparison(info, _metrics(sides), notes)


def _add_run(con: duckdb.DuckDBPyConnection, a: attribution.Attribution, gpus: int, at: dt.datetime,
             sides: dict[str, _Side]) -> None:
    spans = timeline.attempt_spans(con, a.run).with_columns(weight=pl.lit(float(gpus)))
    held_b, held_a = _split_hours(spans, at)
    sides["before"].gpu_hours += held_b
    sides["after"].gpu_hours += held_a
    for mode, ts in a.incidents.filter(advice.is_failure()).select("failure_mode", "root_ts").iter_rows():
        sides["before" if ts is not None and ts < at else "after"].failures.append(mode)
    rows = a.rows.filter(pl.col("start_ts").is_not_null(), pl.col("end_ts").is_not_null())
    for _, part in rows.group_by("attempt"):
        good = part.filter(pl.col("category").is_in(goodput.ETTR_PRODUCTIVE))
        # each row's GPU-hours split in proportion to its span's overlap with each side
        for name, lo, hi in (("before", None, at), ("after", at, None)):
            tot, prod = _share(part, lo, hi), _share(good, lo, hi)
            if tot > 0:
                sides[name].ettr_hours.append((prod, tot))
    if a.steady_mfu is None:
        return
    steps = timeline.merge(timeline.logged_steps(con, a.run), timeline.rank_profile(con, a.run))
    steps = steps.filter(pl.col("step_s") > 0, pl.col("ts").is_not_null()).sort("ts")
    ideal = a.steady_mfu * a.baseline_step_s
    for name, keep in (("before", pl.col("ts") < at), ("after", pl.col("ts") >= at)):
        side = steps.filter(keep)
        if side.height:
            med = side["step_s"].median()
            sides[name].mfu += (side.filter(pl.col("step_s") <= med * STEADY_RATIO)
                                .select(ideal / pl.col("step_s"))).to_series().to_list()


def _share(rows: pl.DataFrame, lo: dt.datetime | None, hi: dt.datetime | None) -> float:
    """GPU-hours of the rows inside [lo, hi), each row pro rata of its span."""
    if not rows.height:
        return 0.0
    start = pl.col("start_ts") if lo is None else pl.max_horizontal("start_ts", pl.lit(lo))
    end = pl.col("end_ts") if hi is None else pl.min_horizontal("end_ts", pl.lit(hi))
    length = (pl.col("end_ts") - pl.col("start_ts")).dt.total_microseconds()
    inside = (end - start).dt.total_microseconds().clip(lower_bound=0)
    # a row with no length (an instant) sits wholly on the side of its start
    frac = pl.when(length > 0).then(inside / length).otherwise(
        ((pl.col("start_ts") >= (lo or dt.datetime.min)) & (pl.col("start_ts") < (hi or dt.datetime.max)))
        .cast(pl.Float64))
    return float(rows.select((pl.col("gpu_hours") * frac).sum()).item() or 0.0)


def _metrics(sides: dict[str, _Side]) -> pl.DataFrame:
    b, a = sides["before"], sides["after"]
    rows = []
    small = not (rates.enough_exposure(b.gpu_hours) and rates.enough_exposure(a.gpu_hours))
    for mode in [None, *sorted(set(b.failures) | set(a.failures))]:
        kb = len(b.failures) if mode is None else b.failures.count(mode)
        ka = len(a.failures) if mode is None else a.failures.count(mode)
        rb, ra = rates.rate_interval(kb, b.gpu_hours, GPU_DAYS), rates.rate_interval(ka, a.gpu_hours, GPU_DAYS)
        rows.append(_row("failures_per_1000_gpu_days", mode or "all", rb, ra,
                         _verdict(rb, ra, True, small or kb + ka < MIN_BATCHES)))
    mb, ma = rates.mtbf_interval(len(b.failures), b.gpu_hours), rates.mtbf_interval(len(a.failures), a.gpu_hours)
    rows.append(_row("mtbf_gpu_hours", "all", mb, ma, _verdict(
        _finite(mb), _finite(ma), False, small or len(b.failures) + len(a.failures) < MIN_BATCHES)))
    eb, ea = _ettr(b), _ettr(a)
    rows.append(_row("ettr", "all", eb, ea, _verdict(eb, ea, False, min(len(b.ettr_hours), len(a.ettr_hours))
                                                      < MIN_BATCHES)))
    fb, fa = _mfu(b), _mfu(a)
    rows.append(_row("steady_mfu", "all", fb, fa, _verdict(fb, fa, False, min(len(b.mfu), len(a.mfu)) < MIN_STEPS)))
    rows.append(_row("gpu_hours", "all", (b.gpu_hours, None, None), (a.gpu_hours, None, None), "exposure"))
    return pl.DataFrame(rows, schema={"metric": pl.String, "mode": pl.String, "before": pl.Float64,
                                      "before_lo": pl.Float64, "before_hi": pl.Float64, "after": pl.Float64,
                                      "after_lo": pl.Float64, "after_hi": pl.Float64, "verdict": pl.String})


def _finite(t: tuple) -> tuple:
    return tuple(None if v is not None and math.isinf(v) else v for v in t)


def _row(metric: str, mode: str, before: tuple, after: tuple, verdict: str) -> dict:
    return {"metric": metric, "mode": mode, "before": before[0], "before_lo": before[1], "before_hi": before[2],
            "after": after[0], "after_lo": after[1], "after_hi": after[2], "verdict": verdict}


def _ettr(side: _Side) -> tuple[float | None, float | None, float | None]:
    """The pooled ETTR of the side's attempt segments, with a t-interval over the segments."""
    total = sum(t for _, t in side.ettr_hours)
    if not total:
        return None, None, None
    lo, hi = _mean_interval([p / t for p, t in side.ettr_hours])
    if lo is not None and len(side.ettr_hours) >= MIN_BATCHES:  # a share's interval ends at 0 and 1
        lo, hi = max(0.0, lo), min(1.0, hi)
    elif lo is not None:
        lo = hi = None  # two segments give no interval worth printing
    return sum(p for p, _ in side.ettr_hours) / total, lo, hi


def _mfu(side: _Side) -> tuple[float | None, float | None, float | None]:
    """The mean steady-step MFU, with a t-interval over MFU_BLOCKS blocks of consecutive steps."""
    if not side.mfu:
        return None, None, None
    n = len(side.mfu)
    size = max(1, n // MFU_BLOCKS)
    blocks = [side.mfu[i:i + size] for i in range(0, size * (n // size), size)]  # the remainder left out
    lo, hi = _mean_interval([sum(b) / len(b) for b in blocks])
    return sum(side.mfu) / n, lo, hi

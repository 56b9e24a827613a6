"""How well "k faults within W days" predicts a host's next fault: the repeat-offender rule scored on a fault history.

The history (`Lab.episodes()`, or any frame with `host` and `ts`) is replayed in time order. Episodes of one host
that start within `merge_h` hours of each other are one fault (a cable and its NIC reported together). At each
fault a host with `k` or more faults in the `window_days` before it (this one included) is flagged; the flag is
right when the host faults again within `horizon_days`. Against that:

- precision: flags followed by a fault within the horizon (flags with a whole horizon left in the history only);
- recall: faults that a flag on their host in the `horizon_days` before them foresaw (faults with a whole
  horizon of history before them only);
- base rate: the chance that a host of the fleet (`fleet_size` hosts, those that never faulted too) faults
  within the horizon from a given day, averaged over the days with a whole horizon after them;
- lift: precision / base rate; capacity: the share of the fleet's host-days under a flag (a flagged host is
  kept out for the horizon).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

DAY_US = 86_400e6
# The repeat-offender rule `clusterlab relaunch` excludes hosts by (relaunch.plan.PlanSettings' defaults) and the
# scorecard flags them by: k faults in W days, chosen by benchmarks/repeat_offenders.py on InfiniteHBD-Trace (the
# most precise rule with recall >= 0.20: precision 0.50 against a base rate of 0.089, README "Fleet view").
REPEAT_AFTER = 2
HISTORY_DAYS = 30.0
RULE_SCHEMA = {"host": pl.String, "rule_incidents": pl.UInt32, "rule_episodes": pl.UInt32, "rule_faults": pl.UInt32,
               "repeat_offender": pl.Boolean}
SCORE_SCHEMA = {"k": pl.Int64, "window_days": pl.Float64, "flags": pl.Int64, "precision": pl.Float64,
                "precision_lo": pl.Float64, "precision_hi": pl.Float64, "recall": pl.Float64,
                "base_rate": pl.Float64, "lift": pl.Float64, "flagged_hosts": pl.Int64, "capacity_flagged": pl.Float64}


def faults(episodes: pl.DataFrame, merge_h: float = 1.0) -> pl.DataFrame:
    """One row per fault (`host`, `day`: days since the history's first fault): starts within `merge_h` merged."""
    eps = episodes.select("host", "ts").drop_nulls().sort("host", "ts")
    if not eps.height:
        return pl.DataFrame(schema={"host": pl.String, "day": pl.Float64})
    t0 = eps["ts"].min()
    gap = (pl.col("ts") - pl.col("ts").shift(1).over("host")).dt.total_microseconds() / 3.6e9
    eps = eps.filter(gap.is_null() | (gap > merge_h))
    return eps.select("host", day=(pl.col("ts") - pl.lit(t0)).dt.total_microseconds() / DAY_US)


def _wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95 %)."""
    if n == 0:
        return math.nan, math.nan
    p = hits / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)


def base_rate(f: pl.DataFrame, fleet_size: int, horizon_days: float = 30.0, span_days: float | None = None) -> float:
    """The fleet's chance that a host faults within the horizon from a given (whole) day."""
    span = span_days if span_days is not None else float(f["day"].max())
    days = np.arange(0.0, span - horizon_days + 1e-9, 1.0)
    if not len(days):
        return math.nan
    hit = np.zeros(len(days))
    for _, g in f.group_by("host"):
        t = np.sort(g["day"].to_numpy())
        # the host's first fault after day d: within (d, d + horizon]?
        nxt = np.searchsorted(t, days, side="right")
        ok = nxt < len(t)
        hit[ok] += t[nxt[ok]] <= days[ok] + horizon_days
    return float(hit.mean() / fleet_size)


def score(f: pl.DataFrame, k: int, window_days: float, fleet_size: int, horizon_days: float = 30.0,
          span_days: float | None = None, base: float | None = None) -> dict:
    """Precision (with its Wilson interval), recall, lift and capacity of the rule `k` faults in `window_days`."""
    span = span_days if span_days is not None else float(f["day"].max())
    base = base_rate(f, fleet_size, horizon_days, span) if base is None else base
    flags = hits = eligible = foreseen = 0
    flagged_hosts, flagged_days = 0, 0.0
    for _, g in f.group_by("host"):
        t = np.sort(g["day"].to_numpy())
        before = np.arange(len(t)) - np.searchsorted(t, t - window_days, side="right") + 1  # faults in (t-W, t]
        alarm = t[before >= k]
        flagged_hosts += bool(len(alarm))
        # flagged days: the union of [alarm, alarm + horizon), cut at the end of the history
        if len(alarm):
            ends = np.minimum(alarm + horizon_days, span)
            flagged_days += float(np.sum(np.minimum(ends, np.append(alarm[1:], np.inf)) - alarm).clip(min=0))
        judged = alarm[alarm + horizon_days <= span]
        nxt = np.searchsorted(t, judged, side="right")
        flags += len(judged)
        hits += int(np.sum((nxt < len(t)) & (t[np.minimum(nxt, len(t) - 1)] <= judged + horizon_days)))
        late = t[t >= horizon_days]
        eligible += len(late)
        if len(alarm):
            last = np.searchsorted(alarm, late, side="left") - 1  # the last flag strictly before each fault
            foreseen += int(np.sum((last >= 0) & (late - alarm[np.maximum(last, 0)] <= horizon_days)))
    precision = hits / flags if flags else math.nan
    lo, hi = _wilson(hits, flags)
    return {"k": k, "window_days": float(window_days), "flags": flags, "precision": precision,
            "precision_lo": lo, "precision_hi": hi, "recall": foreseen / eligible if eligible else math.nan,
            "base_rate": base, "lift": precision / base if base else math.nan, "flagged_hosts": flagged_hosts,
            "capacity_flagged": flagged_days / (fleet_size * span)}


def score_grid(episodes: pl.DataFrame, ks: list[int], windows: list[float], fleet_size: int,
               horizon_days: float = 30.0, merge_h: float = 1.0) -> pl.DataFrame:
    """`score` for every k and window on one fault history, as a frame (one base rate for all)."""
    f = faults(episodes, merge_h)
    span = float(f["day"].max()) if f.height else 0.0
    base = base_rate(f, fleet_size, horizon_days, span)
    rows = [score(f, k, w, fleet_size, horizon_days, span, base) for w in windows for k in ks]
    return pl.DataFrame(rows, schema=SCORE_SCHEMA)


def rule_faults(incidents: pl.DataFrame, episode_faults: pl.DataFrame,
                repeat_after: int = REPEAT_AFTER) -> pl.DataFrame:
    """Per host, the faults the relaunch plan's repeat-offender rule counts, both frames cut to its window by the
    caller: incidents that call for an action on their host (`action` not none: a host-attributable fault) and
    fault episodes that are not an incident's own repair (`account.fleet.episode_faults`). `repeat_offender`:
    they reach `repeat_after`."""
    own = incidents.filter(pl.col("host").is_not_null(), pl.col("action").fill_null("none") != "none")
    n_inc = own.group_by("host").agg(rule_incidents=pl.len())
    n_ep = episode_faults.filter(pl.col("host").is_not_null()).group_by("host").agg(rule_episodes=pl.len())
    out = n_inc.join(n_ep, on="host", how="full", coalesce=True).with_columns(
        pl.col("rule_incidents", "rule_episodes").fill_null(0))
    out = out.with_columns(rule_faults=pl.col("rule_incidents") + pl.col("rule_episodes"))
    return out.with_columns(repeat_offender=pl.col("rule_faults") >= repeat_after).cast(
        RULE_SCHEMA).select(list(RULE_SCHEMA)).sort("host")  # type: ignore[arg-type]

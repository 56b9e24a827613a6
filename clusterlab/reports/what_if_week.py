"""The scorecard's what-if and changes tables: what the week would have cost under other policies, and the
week's recorded changes with their effect so far."""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from clusterlab import store
from clusterlab.account import attribution
from clusterlab.whatif import changes, what_if

# run-level policies summed over the week's runs (a move to another provider is a question per run)
WEEK_POLICIES = ("checkpoint_interval", "hang_timeout", "save_on_signal", "exclude_repeat_hosts", "in_job_restart")
WHAT_IF_SCHEMA = {"provider": pl.String, "policy": pl.String, "runs": pl.Int64, "runs_priced": pl.Int64,
                  "gpu_hours_saved": pl.Float64, "usd_saved": pl.Float64, "gpu_hours_extra": pl.Float64,
                  "usd_extra": pl.Float64, "categories": pl.String, "verdict": pl.String}
CHANGES_SCHEMA = {"change_id": pl.Int64, "provider": pl.String, "cluster": pl.String, "ts": pl.Datetime("us"),
                  "what": pl.String, "failures_before": pl.Float64, "failures_after": pl.Float64,
                  "mfu_before": pl.Float64, "mfu_after": pl.Float64, "effect": pl.String}


def week_what_if(con: duckdb.DuckDBPyConnection, atts: dict[str, attribution.Attribution]) -> pl.DataFrame:
    """Per provider and policy, over the week's runs: GPU-hours and $ each run would have saved (or spent on
    top), summed run by run as net figures and split again into saved and extra, so neither is ever negative."""
    providers = dict(store.frame(con, """SELECT r.run, coalesce(c.provider, 'none') AS provider FROM runs r
                                         LEFT JOIN clusters c USING (cluster)""").iter_rows())
    totals: dict[tuple[str, str], dict] = {}
    for run, a in atts.items():  # NOTE: one pricing per run of the week, from the attribution already made
        provider = providers.get(run, "none")
        for p in what_if.price(con, a, list(WEEK_POLICIES)).pricings:
            t = totals.setdefault((provider, p.policy), {"runs": 0, "priced": 0, "net_h": 0.0, "net_usd": 0.0,
                                                          "cats": set()})
            t["runs"] += 1
            if p.priced:
                d = p.to_dict()
                t["priced"] += 1
                t["net_h"] += p.gpu_hours_saved - p.gpu_hours_extra
                t["net_usd"] += d["usd_saved"] - d["usd_extra"]
                t["cats"] |= set(p.categories)
    rows = []
    for (provider, name), t in totals.items():
        saved, extra = max(0.0, t["net_h"]), max(0.0, -t["net_h"])
        verdict = ("not priced on any run" if not t["priced"] else f"would have saved {saved:.3g} GPU-hours"
                   if saved > 0 else f"would have cost {extra:.3g} GPU-hours more" if extra > 0 else "no change")
        rows.append({"provider": provider, "policy": name, "runs": t["runs"], "runs_priced": t["priced"],
                     "gpu_hours_saved": saved, "usd_saved": max(0.0, t["net_usd"]), "gpu_hours_extra": extra,
                     "usd_extra": max(0.0, -t["net_usd"]), "categories": ", ".join(sorted(t["cats"])),
                     "verdict": verdict})
    order = {p: i for i, p in enumerate(WEEK_POLICIES)}
    return pl.DataFrame(rows, schema=WHAT_IF_SCHEMA).sort(
        "provider", pl.col("policy").replace_strict(order, return_dtype=pl.Int32))


def week_changes(con: duckdb.DuckDBPyConnection, start: dt.datetime, end: dt.datetime) -> pl.DataFrame:
    """The changes recorded in [start, end), each with the cluster's record before against after it so far."""
    providers = dict(store.frame(con, "SELECT cluster, provider FROM clusters").iter_rows())
    rows = []
    for c in changes.changes(con, since=start, until=end).iter_rows(named=True):
        cmp = changes.compare(con, c["cluster"], c["change_id"]).metrics
        get = {(r["metric"], r["mode"]): r for r in cmp.iter_rows(named=True)}
        fails, mfu = get[("failures_per_1000_gpu_days", "all")], get[("steady_mfu", "all")]
        effect = "; ".join(f"{m.replace('_', ' ')}: {get[(m, 'all')]['verdict']}"
                           for m in ("failures_per_1000_gpu_days", "mtbf_gpu_hours", "ettr", "steady_mfu"))
        rows.append({"change_id": c["change_id"], "provider": providers.get(c["cluster"]) or "none",
                     "cluster": c["cluster"], "ts": c["ts"], "what": c["what"],
                     "failures_before": fails["before"], "failures_after": fails["after"],
                     "mfu_before": mfu["before"], "mfu_after": mfu["after"], "effect": effect})
    return pl.DataFrame(rows, schema=CHANGES_SCHEMA)

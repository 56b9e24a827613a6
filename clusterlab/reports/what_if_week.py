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


def price_runs(con: duckdb.DuckDBPyConnection, atts: dict[str, attribution.Attribution]
               ) -> dict[str, what_if.WhatIf]:
    """Each run's what-if under the week's policies: one pricing per run, read by the what-if table and the
    checkpoint-interval table alike, so that both print the same saving."""
    return {run: what_if.price(con, a, list(WEEK_POLICIES)) for run, a in atts.items()}


def week_what_if(con: duckdb.DuckDBPyConnection, atts: dict[str, attribution.Attribution],
                 priced: dict[str, what_if.WhatIf] | None = None) -> pl.DataFrame:
    """Per provider and policy, over the week's runs: the GPU-hours and $ the runs it would have saved would
    save, and apart from them what the runs it would have cost more would cost (each never negative; one run's
    extra is never netted into another's saving).

    A row whose saving rests on a run whose pricing does not stand (`Pricing.stands`: too little exposure for
    its interval) has no figures: its verdict says "too little exposure to tell" and why."""
    providers = dict(store.frame(con, """SELECT r.run, coalesce(c.provider, 'none') AS provider FROM runs r
                                         LEFT JOIN clusters c USING (cluster)""").iter_rows())
    priced = priced if priced is not None else price_runs(con, atts)
    totals: dict[tuple[str, str], dict] = {}
    for run, w in priced.items():
        provider = providers.get(run, "none")
        for p in w.pricings:
            t = totals.setdefault((provider, p.policy), {"runs": 0, "priced": 0, "saved": 0.0, "usd_saved": 0.0,
                                                          "extra": 0.0, "usd_extra": 0.0, "cats": set(),
                                                          "thin": []})
            t["runs"] += 1
            if not p.priced:
                continue
            d = p.to_dict()
            t["priced"] += 1
            t["saved"] += p.gpu_hours_saved
            t["extra"] += p.gpu_hours_extra
            t["usd_saved"] += d["usd_saved"]
            t["usd_extra"] += d["usd_extra"]
            t["cats"] |= set(p.categories)
            if p.exposure_note is not None:
                t["thin"].append(f"{run}: {p.exposure_note}")
    rows = []
    for (provider, name), t in totals.items():
        figures = {"gpu_hours_saved": t["saved"], "usd_saved": t["usd_saved"], "gpu_hours_extra": t["extra"],
                   "usd_extra": t["usd_extra"]}
        if t["thin"]:
            figures = dict.fromkeys(figures)
        rows.append({"provider": provider, "policy": name, "runs": t["runs"], "runs_priced": t["priced"], **figures,
                     "categories": ", ".join(sorted(t["cats"])), "verdict": _verdict(t)})
    order = {p: i for i, p in enumerate(WEEK_POLICIES)}
    return pl.DataFrame(rows, schema=WHAT_IF_SCHEMA).sort(
        "provider", pl.col("policy").replace_strict(order, return_dtype=pl.Int32))


def _verdict(t: dict) -> str:
    if not t["priced"]:
        return "not priced on any run"
    if t["thin"]:
        return f"too little exposure to tell on {len(t['thin'])} of {t['priced']} run(s) — " + "; ".join(t["thin"])
    saved, extra = t["saved"], t["extra"]
    if saved > 0 and extra > 0:
        return f"would have saved {saved:.3g} GPU-hours on some runs and cost {extra:.3g} more on others"
    if saved > 0:
        return f"would have saved {saved:.3g} GPU-hours"
    return f"would have cost {extra:.3g} GPU-hours more" if extra > 0 else "no change"


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

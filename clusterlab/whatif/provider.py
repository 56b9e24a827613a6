"""The what-if of moving a run to another provider: that provider's measured failure rate, MFU and price."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import polars as pl

from clusterlab import store
from clusterlab.account import advice, attribution, rates
from clusterlab.account.ledger import LedgerError
from clusterlab.diagnose import incidents
from clusterlab.whatif.errors import PolicyError, Thin

# the ledger's rows that a failure causes: they scale with the failure rate
FAILURE_COST = ("hang", "restart", "startup", "recompute")
# What a provider's exposure counts here (the scorecard's reliability table counts the week's runs only)
EXPOSURE = "GPU-hours its runs' attempts held their GPUs, every run in the store"


@dataclass(frozen=True)
class ProviderRecord:
    """A provider's measured record across its runs in the store."""

    provider: str
    runs: int
    gpu_hours: float  # the GPU-hours its runs held their GPUs (attempts)
    failures: int  # the cluster's failures (advice.is_failure)
    median_steady_mfu: float | None
    usd_per_gpu_hour: float | None

    @property
    def failures_per_gpu_hour(self) -> float | None:
        return self.failures / self.gpu_hours if self.gpu_hours else None


def provider_record(con: duckdb.DuckDBPyConnection, provider: str,
                    settings: incidents.Settings | None = None) -> ProviderRecord:
    """Failures per GPU-hour and the median steady-state MFU of the provider's runs."""
    s = settings or incidents.Settings()
    info = store.frame(con, """SELECT r.run, r.cluster, p.usd_per_gpu_hour FROM runs r JOIN clusters c USING (cluster)
                               LEFT JOIN providers p USING (provider) WHERE c.provider = ? ORDER BY r.run""",
                       [provider])
    hours, failures, mfus = 0.0, 0, []
    for cluster in info["cluster"].unique().to_list():  # NOTE: one pass per run of the provider: a handful
        held = advice._exposure(con, cluster)
        hours += float(held["gpu_hours"].sum() or 0.0)
        for run in held["run"].to_list():
            ends = attribution.incidents_of(con, run, s)[0]
            failures += ends.filter(advice.is_failure()).height if ends.height else 0
            try:
                mfu = attribution.attribute(con, run, s).steady_mfu
            except (LedgerError, KeyError):
                mfu = None
            if mfu is not None:
                mfus.append(mfu)
    price = info["usd_per_gpu_hour"].drop_nulls()
    return ProviderRecord(provider, info.height, hours, failures, float(pl.Series(mfus).median()) if mfus else None,
                          float(price[0]) if price.len() else None)


def other_provider(con: duckdb.DuckDBPyConnection, a: attribution.Attribution, rows: pl.DataFrame,
                   provider: str | float | None) -> tuple[pl.DataFrame, str, list[str]]:
    """The run's rows re-priced at another provider: productive time by the MFU ratio, the failures' cost by
    the failure-rate ratio, dollars at its price."""
    here = store.frame(con, "SELECT c.provider FROM runs r JOIN clusters c USING (cluster) WHERE r.run = ?", [a.run])
    own = here.item() if here.height else None
    if provider is None:
        others = store.frame(con, "SELECT DISTINCT provider FROM clusters WHERE provider IS DISTINCT FROM ? "
                                  "ORDER BY provider", [own])["provider"].to_list()
        if len(others) != 1:
            raise PolicyError(f"name the provider to move to (provider=NAME): the store has {len(others)} others")
        provider = others[0]
    provider = str(provider)
    if own is None:
        raise PolicyError("the run's cluster names no provider: nothing to compare with")
    mine, theirs = provider_record(con, own), provider_record(con, provider)
    if not theirs.runs:
        raise PolicyError(f"no runs of provider {provider!r} in the store")
    if a.steady_mfu is None or theirs.median_steady_mfu is None:
        raise PolicyError("steady-state MFU unknown here or there: no speed to compare")
    rate_here, rate_there = mine.failures_per_gpu_hour, theirs.failures_per_gpu_hour
    failed = rows.filter(pl.col("failure").fill_null(False), pl.col("category").is_in(FAILURE_COST))
    if rate_there and not (rate_here and failed.height):
        raise PolicyError(f"{provider} has failures but this run had none to scale: no cost per failure here")
    speed = a.steady_mfu / theirs.median_steady_mfu
    fail_scale = (rate_there or 0.0) / rate_here if rate_here else 1.0
    what = (pl.when(pl.col("category") == "productive").then(pl.col("seconds") * speed)
            .when(pl.col("failure").fill_null(False) & pl.col("category").is_in(FAILURE_COST))
            .then(pl.col("seconds") * fail_scale).otherwise(pl.col("seconds")))
    price = theirs.usd_per_gpu_hour if theirs.usd_per_gpu_hour is not None else 0.0
    setting = (f"move to {provider}: steady MFU {theirs.median_steady_mfu:.1%} (here {a.steady_mfu:.1%}), "
               f"{(rate_there or 0) * 24_000:.1f} vs {(rate_here or 0) * 24_000:.1f} failures per 1,000 GPU-days")
    # NOTE: a move rests on both failure rates; with too little exposure on either, the saving does not stand
    thin = [Thin(f"{r.provider}: {r.gpu_hours:,.1f} GPU-hours ({EXPOSURE}), {r.failures} "
                 f"failure{'' if r.failures == 1 else 's'}")
            for r in (mine, theirs) if not rates.enough_exposure(r.gpu_hours)]
    return rows.with_columns(what_if_s=what, usd_per_gpu_hour=pl.lit(price)), setting, [
        *thin,
        f"the same work runs at {provider}'s median steady-state MFU ({theirs.runs} run(s)); models differ",
        "failures come at its measured rate, each costing what this run's failures cost on average",
        f"GPU-hours at its price (${price:.2f}); other categories (saves, stragglers, data) as here",
    ]

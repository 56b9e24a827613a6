"""What-if re-pricing: a run's own ledger priced again under another operating policy.

Each policy re-prices the rows of the actual ledger (`Attribution.rows`: category, attempt, incident,
host, seconds) one by one, from the run's own evidence: its incidents, step times, save costs, restart
gaps and the cluster's MTBF. A policy leaves every row it does not change as it was, so the policy the
run actually had (`actual`) gives back the actual ledger exactly. The difference is reported as two
numbers that are never negative, `gpu_hours_saved` and `gpu_hours_extra`: a policy that would have cost
more says so rather than showing a negative saving. The models and their assumptions: docs/attribution.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import duckdb
import polars as pl

from clusterlab import store
from clusterlab.account import advice, attribution
from clusterlab.diagnose import incidents
from clusterlab.whatif.errors import PolicyError, Thin
from clusterlab.whatif.provider import other_provider

# Ends a scheduler announces before it kills (Slurm's --signal, a provider's preemption notice): a save on
# the signal keeps the work since the last save.
SIGNALLED_ENDS = ("time_limit", "preemption", "manual_stop")
# Ends a job restart cannot help: the job was meant to stop, or its own code fails again on restart.
# Ends that take the allocation away: no restart inside the job survives them.
ALLOCATION_LOST = ("preemption",)
HANG_DETECT_STEPS = 10.0  # a default hang detector fires after this many steady steps without progress ...
HANG_DETECT_MIN_S = 60.0  # ... and never sooner than this
POLICIES = ("actual", "checkpoint_interval", "hang_timeout", "save_on_signal", "exclude_repeat_hosts",
            "in_job_restart", "provider")


@dataclass(frozen=True)
class Policy:
    """One operating policy: its name (POLICIES) and its setting (None: the default from the evidence)."""

    name: str
    value: float | str | None = None

    @classmethod
    def parse(cls, spec: str) -> Policy:
        """`hang_timeout=120`, `checkpoint_interval`, `provider=bor` ..."""
        name, _, raw = spec.partition("=")
        name = name.strip().replace("-", "_")
        if name not in POLICIES:
            raise PolicyError(f"unknown policy {name!r}; policies: {', '.join(POLICIES)}")
        if not raw.strip():
            return cls(name)
        if name == "provider":
            return cls(name, raw.strip())
        try:
            value = float(raw)
        except ValueError:
            raise PolicyError(f"policy {name}: {raw!r} is not a number of seconds") from None
        if not math.isfinite(value) or value <= 0:
            raise PolicyError(f"policy {name}: {raw!r} must be a positive number of seconds")
        return cls(name, value)


@dataclass
class Pricing:
    """One policy's re-priced ledger: per category the actual and the what-if GPU-hours."""

    policy: str
    setting: str  # the policy in words, against what the run had
    ledger: pl.DataFrame  # category, gpu_hours_actual, gpu_hours_what_if
    usd_per_gpu_hour: float
    assumptions: list[str] = field(default_factory=list)
    priced: bool = True  # False: the evidence cannot price it (`setting` says why); the ledger is the actual one
    usd_per_gpu_hour_what_if: float | None = None  # another provider's price; None: the run's own
    rows: pl.DataFrame | None = field(default=None, repr=False)  # category, incident_id, seconds, what_if_s
    # why the saving does not stand: the data it rests on is too thin for its interval to tell (None: it stands)
    exposure_note: str | None = None

    @property
    def stands(self) -> bool:
        """Whether the saving (or extra cost) is a figure to act on: priced, and its interval supports it."""
        return self.priced and self.exposure_note is None

    @property
    def usd_actual(self) -> float:
        return self.gpu_hours_actual * self.usd_per_gpu_hour

    @property
    def usd_what_if(self) -> float:
        price = self.usd_per_gpu_hour if self.usd_per_gpu_hour_what_if is None else self.usd_per_gpu_hour_what_if
        return self.gpu_hours_what_if * price

    @property
    def gpu_hours_actual(self) -> float:
        return float(self.ledger["gpu_hours_actual"].sum())

    @property
    def gpu_hours_what_if(self) -> float:
        return float(self.ledger["gpu_hours_what_if"].sum())

    @property
    def gpu_hours_saved(self) -> float:
        """GPU-hours the policy would have saved; 0 when it would have cost more (see gpu_hours_extra)."""
        return max(0.0, self.gpu_hours_actual - self.gpu_hours_what_if)

    @property
    def gpu_hours_extra(self) -> float:
        """GPU-hours the policy would have cost on top of the actual run; 0 when it saves."""
        return max(0.0, self.gpu_hours_what_if - self.gpu_hours_actual)

    @property
    def categories(self) -> list[str]:
        """The ledger categories the policy changes."""
        changed = self.ledger.filter((pl.col("gpu_hours_what_if") - pl.col("gpu_hours_actual")).abs() > 1e-9)
        return changed["category"].to_list()

    @property
    def verdict(self) -> str:
        if not self.priced:
            return f"not priced: {self.setting}"
        if self.exposure_note is not None:
            return f"too little exposure to tell: {self.exposure_note}"
        if self.gpu_hours_extra > 0:
            return f"would cost {self.gpu_hours_extra:.3g} GPU-hours more: keep the actual policy"
        if self.gpu_hours_saved > 0:
            return f"would save {self.gpu_hours_saved:.3g} GPU-hours"
        return "no change on this run"

    def to_dict(self) -> dict:
        return {"policy": self.policy, "setting": self.setting, "priced": self.priced,
                "gpu_hours_actual": self.gpu_hours_actual, "gpu_hours_what_if": self.gpu_hours_what_if,
                "gpu_hours_saved": self.gpu_hours_saved, "gpu_hours_extra": self.gpu_hours_extra,
                "usd_saved": max(0.0, self.usd_actual - self.usd_what_if),
                "usd_extra": max(0.0, self.usd_what_if - self.usd_actual),
                "categories": self.categories, "verdict": self.verdict, "stands": self.stands,
                "exposure_note": self.exposure_note, "assumptions": self.assumptions,
                "ledger": self.ledger.to_dicts()}


@dataclass
class WhatIf:
    """A run's ledger re-priced under each policy asked for."""

    run: str
    pricings: list[Pricing]

    @property
    def summary(self) -> pl.DataFrame:
        """One row per policy: setting, GPU-hours and $ saved (or extra), categories changed, verdict.

        A saving that does not stand (`Pricing.stands`) is left blank here, as in the scorecard's table: its
        verdict says "too little exposure to tell"; `to_dict` keeps the model's point estimate."""
        rows = [{k: v for k, v in p.to_dict().items() if k not in ("ledger", "assumptions")} for p in self.pricings]
        figures = ("gpu_hours_saved", "usd_saved", "gpu_hours_extra", "usd_extra")
        return pl.DataFrame(rows).with_columns(pl.col("categories").list.join(", "), *[
            pl.when(pl.col("exposure_note").is_null()).then(pl.col(c)).alias(c) for c in figures])

    def to_dict(self) -> dict:
        return {"run": self.run, "policies": [p.to_dict() for p in self.pricings]}


@dataclass
class _Evidence:
    """What the policies read: the actual ledger and the run's measured costs."""

    a: attribution.Attribution
    rows: pl.DataFrame  # the ledger's rows with the incident's kind and failure mode
    advice: advice.CheckpointAdvice
    price: float
    con: duckdb.DuckDBPyConnection


def what_if(con: duckdb.DuckDBPyConnection, run: str, policies: list[Policy | str] | Policy | str | None = None,
            settings: incidents.Settings | None = None) -> WhatIf:
    """The run's ledger re-priced under each policy (every policy of POLICIES when none is given)."""
    return price(con, attribution.attribute(con, run, settings), policies)


def price(con: duckdb.DuckDBPyConnection, a: attribution.Attribution,
          policies: list[Policy | str] | Policy | str | None = None) -> WhatIf:
    """An attribution's ledger re-priced under each policy (for callers that hold the attribution already)."""
    run = a.run
    usd = store.frame(con, """SELECT p.usd_per_gpu_hour FROM runs r JOIN clusters c USING (cluster)
                              JOIN providers p USING (provider) WHERE r.run = ?""", [run])
    kinds = a.incidents.select("incident_id", "kind", inc_mode="failure_mode",
                               failure=advice.is_failure())
    rows = a.rows.join(kinds, on="incident_id", how="left")
    adv = a.checkpoint_advice or advice.advise(con, run, a.gpus, a.gpu_hours, a.incidents, a.rows)
    ev = _Evidence(a, rows, adv, float(usd.item() or 0.0) if usd.height else 0.0, con)
    if isinstance(policies, str | Policy):  # one policy given bare: `lab.what_if(run, "hang_timeout=60")`
        policies = [policies]
    asked = [Policy.parse(p) if isinstance(p, str) else p for p in (policies or [Policy(n) for n in POLICIES])]
    return WhatIf(run, [_price(ev, p) for p in asked])


def _price(ev: _Evidence, policy: Policy) -> Pricing:
    try:
        what_s, setting, assumptions = PRICERS[policy.name](ev, policy.value)
    except PolicyError as e:
        return Pricing(policy.name, str(e), _ledger(ev, ev.rows.with_columns(what_if_s=pl.col("seconds"))),
                       ev.price, [], priced=False)
    other_price = None
    thin = [a for a in assumptions if isinstance(a, Thin)]
    if "usd_per_gpu_hour" in what_s.columns:  # the run moved to another provider pays its price
        other_price = float(what_s["usd_per_gpu_hour"][0])
    return Pricing(policy.name, setting, _ledger(ev, what_s), ev.price, assumptions,
                   usd_per_gpu_hour_what_if=other_price,
                   rows=what_s.select("category", "incident_id", "seconds", "what_if_s"),
                   exposure_note="; ".join(thin) if thin else None)


def _ledger(ev: _Evidence, priced: pl.DataFrame) -> pl.DataFrame:
    """Per category the actual and what-if GPU-hours, every category in the ledger's order.

    The what-if is the actual ledger plus each row's change: a row a policy leaves alone adds exactly 0,
    so the policy the run had gives back the actual ledger to the last bit."""
    h = ev.a.gpus / 3600
    delta = priced.group_by("category").agg(delta=((pl.col("what_if_s") - pl.col("seconds")) * h).sum())
    actual = ev.a.ledger.select("category", gpu_hours_actual="gpu_hours")
    return actual.join(delta, on="category", how="left", maintain_order="left").select(
        "category", "gpu_hours_actual",
        gpu_hours_what_if=pl.col("gpu_hours_actual") + pl.col("delta").fill_null(0.0))


Priced = tuple[pl.DataFrame, str, list[str]]


def _actual(ev: _Evidence, value: float | str | None) -> Priced:
    return ev.rows.with_columns(what_if_s=pl.col("seconds")), "the policy the run had", []


def _checkpoint_interval(ev: _Evidence, value: float | str | None) -> Priced:
    """Saves after every τ s of training instead of every τ0: the save time scales with the number of saves
    (τ0/τ), the work a failure throws away with the interval (τ/τ0). τ counts training time between saves, as
    Young and Daly's interval does: the measured gap between saves less one save."""
    adv = ev.advice
    if not adv.interval_s or not adv.save_s or adv.interval_s <= adv.save_s:
        raise PolicyError("the run logged fewer than two timed saves: no interval or save cost to re-price")
    tau0 = training_interval_s(adv)
    support: list[str] = []
    if value is None:
        if not adv.optimal_interval_s:
            raise PolicyError("no failures on the cluster yet: no MTBF for Young/Daly (pass an interval)")
        tau = adv.optimal_interval_s
        setting = (f"save after every {tau:.0f} s of training (Young/Daly from MTBF {adv.mtbf_job_hours:.2f} h and "
                   f"save {adv.save_s:.1f} s) instead of every {tau0:.0f} s")
        support = [_interval_support(ev, tau0)]
    else:
        tau = float(value)
        setting = f"save after every {tau:.0f} s of training instead of every {tau0:.0f} s"
    ratio = tau / tau0
    return ev.rows.with_columns(what_if_s=_resaved(ratio)), setting, [*support,
        f"every save costs what the run's saves cost ({adv.save_s:.1f} s): the checkpoint time scales by "
        f"{1 / ratio:.3g}",
        f"the same failures at the same points of the work; the work each throws away scales by {ratio:.3g} "
        "(a failure falls anywhere in an interval)",
        "MTBF is the cluster's, from every run of it in the store" + ("" if adv.enough_exposure else
                                                                     " (little exposure yet: a wide interval)"),
    ]


# NOTE: one definition of τ and of the re-pricing, advice's: the advice's saving is this policy's at the optimum
training_interval_s = advice.training_interval_s
_resaved = advice.resaved


def _interval_support(ev: _Evidence, tau0: float) -> str:
    """Whether the Young/Daly saving holds across the MTBF's 95% interval: priced again at the optimum of each
    end (advice's `gpu_hours_saved_lo` / `_hi`), it must save at both; otherwise a Thin assumption that says how
    far the saving could swing."""
    adv = ev.advice
    ends = [t for t in (adv.optimal_interval_lo_s, adv.optimal_interval_hi_s) if t]
    exposure = (f"{adv.cluster_gpu_hours:,.1f} GPU-hours of the cluster's attempts, {adv.failures} "
                f"failure{'' if adv.failures == 1 else 's'}")
    if len(ends) < 2 or adv.gpu_hours_saved_lo is None or adv.gpu_hours_saved_hi is None:
        return Thin(f"{exposure}: the MTBF's 95% interval has no upper end, so the optimum could be any longer "
                    "interval")
    span = (f"across the MTBF's 95% interval the optimum lies in {ends[0]:.0f}-{ends[1]:.0f} s, where the net "
            f"saving runs from {adv.gpu_hours_saved_lo:.3g} to {adv.gpu_hours_saved_hi:.3g} GPU-hours ({exposure})")
    return span if adv.saving_stands else Thin(span)


def default_hang_s(baseline_step_s: float) -> float:
    """The hang detector's default timeout: HANG_DETECT_STEPS steady steps, never under HANG_DETECT_MIN_S."""
    return max(HANG_DETECT_MIN_S, HANG_DETECT_STEPS * baseline_step_s)


def _hang_timeout(ev: _Evidence, value: float | str | None) -> Priced:
    """A hang detector (heartbeat) that fires S s after the last step instead of the job's collective timeout."""
    s = float(value) if value is not None else default_hang_s(ev.a.baseline_step_s)
    hung = (pl.col("category") == "hang") & (pl.col("kind") == "attempt_end")
    longest = ev.rows.filter(hung)["seconds"].max()
    had = f" (the longest hang here: {longest:.0f} s)" if longest else " (no failed attempt hung here)"
    what = pl.when(hung).then(pl.min_horizontal("seconds", pl.lit(s))).otherwise(pl.col("seconds"))
    return ev.rows.with_columns(what_if_s=what), f"detect a hang {s:.0f} s after the last step{had}", [
        "a detector on step progress fires S s after the last step ends and the job exits at once",
        "the requeue and the restarted attempt's startup take what they took",
        "only attempts with an end incident; a run that finished keeps its own tail",
    ]


def _save_on_signal(ev: _Evidence, value: float | str | None) -> Priced:
    """A save when the scheduler signals the end (time limit, preemption, cancel): the work since the last
    save is kept, for one more save."""
    save = float(value) if value is not None else ev.advice.save_s
    if not save:
        raise PolicyError("the run logged no timed save: no save cost to price a save on the signal")
    ends = (ev.rows.filter(pl.col("kind") == "attempt_end", pl.col("inc_mode").is_in(SIGNALLED_ENDS),
                           pl.col("category") == "recompute", pl.col("seconds") > 0)
            .select("attempt", "incident_id").unique())
    lost = (pl.col("category") == "recompute") & pl.col("incident_id").is_in(ends["incident_id"].implode())
    kept = ev.rows.with_columns(what_if_s=pl.when(lost).then(0.0).otherwise(pl.col("seconds")))
    # NOTE: with_columns, not select: literals alone would make one row of an empty frame
    extra = ends.with_columns(category=pl.lit("checkpoint"), seconds=pl.lit(0.0), what_if_s=pl.lit(save)).select(
        "category", "incident_id", "seconds", "what_if_s")
    priced = pl.concat([kept.select("category", "incident_id", "seconds", "what_if_s"), extra],
                       how="vertical_relaxed")
    return priced, f"save on the scheduler's signal ({ends.height} signalled end(s) lost work here)", [
        f"one save of {save:.1f} s (the run's median) fits in the notice (Slurm --signal=B:USR1@N, "
        "a preemption grace period)",
        "the next attempt resumes from that save: nothing is recomputed",
    ]


def _exclude_repeat_hosts(ev: _Evidence, value: float | str | None) -> Priced:
    """Exclude a host from the next attempt after its first incident: its later incidents do not happen."""
    inc = ev.a.incidents.filter(pl.col("host").is_not_null(), pl.col("host") != attribution.NONE)
    first = inc.group_by("host").agg(first_attempt=pl.col("attempt").cast(pl.Int32).min())
    repeat = inc.join(first, on="host").filter(pl.col("attempt").cast(pl.Int32) > pl.col("first_attempt"))
    gone = (pl.col("category") != "productive") & pl.col("incident_id").is_in(repeat["incident_id"].implode())
    hosts = sorted(set(repeat["host"].to_list()))
    setting = (f"exclude {', '.join(hosts)} after its first incident" if hosts
               else "no host had an incident in two attempts of this run")
    return ev.rows.with_columns(what_if_s=pl.when(gone).then(0.0).otherwise(pl.col("seconds"))), setting, [
        "a spare host of the same speed replaces it at the next launch, and does not fail",
        "the repeat incidents' lost time (hang, restart, startup, recompute, straggling) does not happen",
        "repeats within this run only; the cluster's other runs are not read",
    ]


def _in_job_restart(ev: _Evidence, value: float | str | None) -> Priced:
    """Restart the workers inside the allocation (nvidia-resiliency-ext style) instead of a requeue: the
    requeue gap goes; the restarted workers still pay the measured startup."""
    requeue = ((pl.col("category") == "restart") & pl.col("failure").fill_null(False)
               & ~pl.col("inc_mode").is_in(ALLOCATION_LOST))
    gaps = ev.rows.filter(requeue)["seconds"]
    r = float(value) if value is not None else 0.0
    what = pl.when(requeue).then(pl.min_horizontal("seconds", pl.lit(r))).otherwise(pl.col("seconds"))
    setting = (f"restart in the job ({len(gaps)} requeue(s) here, median {gaps.median() or 0:.0f} s)"
               if len(gaps) else "no failed attempt was requeued here")
    return ev.rows.with_columns(what_if_s=what), setting, [
        "the allocation keeps a spare node for a failed host (a host fault needs one)",
        f"the gap between attempts becomes {r:.0f} s; the startup (init, checkpoint load) stays as measured",
        f"only the cluster's failures; {', '.join((*advice.NOT_FAILURES, *ALLOCATION_LOST))} and the job's own "
        "errors (an OOM would repeat) still end the job",
    ]


def _provider(ev: _Evidence, value: float | str | None) -> Priced:
    return other_provider(ev.con, ev.a, ev.rows, value)


PRICERS: dict[str, Callable[[_Evidence, float | str | None], Priced]] = {
    "actual": _actual, "checkpoint_interval": _checkpoint_interval, "hang_timeout": _hang_timeout,
    "save_on_signal": _save_on_signal, "exclude_repeat_hosts": _exclude_repeat_hosts,
    "in_job_restart": _in_job_restart, "provider": _provider,
}

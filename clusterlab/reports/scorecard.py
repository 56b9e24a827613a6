"""The weekly provider scorecard: per provider and cluster, every figure read off the attribution API.

A run's ledger rows (`Attribution.rows`) count in the ISO week in which each row starts, and an
incident in the week of its root cause. Within a week, every figure is a sum, count or GPU-hour
weighted mean of those rows and incidents: nothing here re-derives what the ledger already says.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass, field

import duckdb
import polars as pl

from clusterlab import store, taxonomy
from clusterlab.account import attribution, offenders, rates
from clusterlab.account import fleet as memory
from clusterlab.account.advice import is_failure  # NOTE: one definition of "failure" for MTBF and advice
from clusterlab.account.ledger import LedgerError
from clusterlab.diagnose import incidents
from clusterlab.reports import fleet, what_if_week
from clusterlab.triage import tickets
from clusterlab.whatif import what_if

_WEEK = re.compile(r"^(\d{4})-W(\d{2})$")
# Change against last week, for these provider figures.
# What a provider's score is a share of (see `_ranking`).
CONTRACT_BASIS = "of contracted GPU-hours"
USED_BASIS = "of GPU-hours used (no contract known)"
# What the reliability figures' exposure counts (the ledger less its requeue gaps: the attempts' own spans)
EXPOSURE = "GPU-hours the attempts held their GPUs, requeue gaps left out"
CHANGE_METRICS = ["gpu_hours", "ettr", "effective_mfu", "failures", "failures_per_1k_gpu_days", "lost_gpu_hours",
                  "usd_lost", "provider_usd_lost"]


def week_bounds(week: str) -> tuple[dt.datetime, dt.datetime]:
    """Monday 00:00 UTC of an ISO week (`2026-W48`) and the Monday after, naive UTC like the store."""
    m = _WEEK.match(week.strip())
    if not m:
        raise ValueError(f"week must look like 2026-W48, not {week!r}")
    try:
        monday = dt.date.fromisocalendar(int(m[1]), int(m[2]), 1)
    except ValueError as e:
        raise ValueError(f"no such ISO week {week!r}: {e}") from None
    start = dt.datetime.combine(monday, dt.time())
    return start, start + dt.timedelta(days=7)


def week_of(ts: dt.datetime | dt.date) -> str:
    """The ISO week a time falls in, as `2026-W48`."""
    y, w, _ = ts.isocalendar()
    return f"{y}-W{w:02d}"


def latest_week(con: duckdb.DuckDBPyConnection) -> str | None:
    """The ISO week of the newest attempt end in the store (what a demo calls `this week`)."""
    last = store.frame(con, "SELECT max(end_ts) AS t FROM attempts").item()
    return week_of(last) if last is not None else None


@dataclass
class Scorecard:
    """One week's scorecard: polars frames per provider and cluster, ready to render or serialise."""

    week: str
    start: dt.datetime
    end: dt.datetime
    providers: pl.DataFrame  # one row per provider: use, ETTR, MFU, failures, MTBF, restart, hang, $, delivery
    clusters: pl.DataFrame  # the same per cluster
    runs: pl.DataFrame  # the same per run, with its MTBF
    ledger: pl.DataFrame  # provider, cluster, category, gpu_hours, usd
    failure_modes: pl.DataFrame  # provider, failure_mode, blame, incidents, gpu_hours_lost, usd_lost
    blame: pl.DataFrame  # provider, blame, gpu_hours_lost, usd_lost, share
    worst_hosts: pl.DataFrame  # hosts with incidents, repeat offenders across weeks flagged
    # the week's fleet memory per host (`clusterlab hosts --week`) with the relaunch rule's repeat offenders
    fleet_hosts: pl.DataFrame
    stragglers: pl.DataFrame  # hosts the straggler category is pinned on
    delivery: pl.DataFrame  # per cluster: contracted, inventory, missing, late, drained, available GPU-hours
    drained: pl.DataFrame  # per host taken out of service: since, until, state, reason, file:line
    responsiveness: pl.DataFrame  # per provider: tickets sent, resolved, hours to resolve
    checkpoint_advice: pl.DataFrame  # per run: Young/Daly interval against the measured one
    ranking: pl.DataFrame  # rank, provider, score, verdict
    change: pl.DataFrame  # provider, metric, this_week, last_week, change
    incidents: pl.DataFrame  # the week's incidents, root cause first
    notes: list[str] = field(default_factory=list)
    attributions: dict[str, attribution.Attribution] = field(default_factory=dict, repr=False)
    # per provider, from the tickets' timelines (clusterlab.triage.tickets): answer times, denials, repeats after a fix
    support: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=tickets.SUPPORT_SCHEMA))
    # what the week would have cost under other policies, and the week's changes with their effect so far
    what_if: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=what_if_week.WHAT_IF_SCHEMA))
    changes: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=what_if_week.CHANGES_SCHEMA))

    FRAMES = ("ranking", "providers", "clusters", "runs", "delivery", "drained", "ledger", "failure_modes", "blame",
              "worst_hosts", "fleet_hosts", "stragglers", "responsiveness", "support", "checkpoint_advice", "what_if",
              "changes", "change", "incidents")

    def to_dict(self) -> dict:
        """The JSON document of `clusterlab scorecard --json`."""
        doc: dict = {"week": self.week, "start": self.start.isoformat(), "end": self.end.isoformat()}
        for name in self.FRAMES:
            doc[name] = records(getattr(self, name))
        doc["notes"] = list(self.notes)
        return doc


def records(frame: pl.DataFrame) -> list[dict]:
    """Frame rows as JSON-ready dicts (times ISO 8601, lists kept)."""
    def iso(v):
        return v.isoformat() if isinstance(v, dt.datetime | dt.date) else v
    return [{k: iso(v) for k, v in row.items()} for row in frame.to_dicts()]


@dataclass
class _Evidence:
    """What the attribution API says about every run touching a window."""

    attributions: dict[str, attribution.Attribution]
    rows: pl.DataFrame  # Attribution.rows of every run, with `run`
    incidents: pl.DataFrame  # incidents of every run, placed on a cluster and provider
    run_mfu: pl.DataFrame  # run, steady_mfu
    notes: list[str]


def _collect(con: duckdb.DuckDBPyConnection, start: dt.datetime, end: dt.datetime,
             s: incidents.Settings) -> _Evidence:
    """Attribute every run with an attempt in [start, end); a run without a ledger keeps its incidents."""
    runs = store.frame(con, """SELECT run FROM attempts GROUP BY run
                               HAVING min(start_ts) < ? AND max(end_ts) >= ? ORDER BY run""", [end, start])
    atts, rows, incs, notes = {}, [], [], []
    for run in runs["run"].to_list():
        try:
            a = attribution.attribute(con, run, s)
        except (LedgerError, KeyError) as e:  # same fallback as Lab.incidents
            notes.append(f"{run}: no GPU-time ledger ({e.args[0] if e.args else e}); its incidents are listed "
                         "without GPU-hours")
            incs.append(attribution.incidents_of(con, run, s)[0])
            continue
        atts[run] = a
        rows.append(a.rows.with_columns(run=pl.lit(run)))
        incs.append(a.incidents)
    row_frame = (pl.concat(rows, how="vertical_relaxed") if rows else _empty_rows())
    if not incs:  # typed, empty: the frame incidents_of gives for a run that is not there
        incs.append(attribution.incidents_of(con, "\x00no run", s)[0])
    inc = fleet.place(con, pl.concat(incs, how="diagonal_relaxed"))
    mfu = pl.DataFrame({"run": list(atts), "steady_mfu": [a.steady_mfu for a in atts.values()]},
                       schema={"run": pl.String, "steady_mfu": pl.Float64})
    return _Evidence(atts, row_frame, inc, mfu, notes)


def _empty_rows() -> pl.DataFrame:
    return pl.DataFrame(schema={"category": pl.String, "attempt": pl.Int32, "start_ts": pl.Datetime("us"),
                                "end_ts": pl.Datetime("us"), "seconds": pl.Float64, "gpu_hours": pl.Float64,
                                "usd": pl.Float64, "incident_id": pl.String, "failure_mode": pl.String,
                                "host": pl.String, "cluster": pl.String, "provider": pl.String, "run": pl.String})


def _in(frame: pl.DataFrame, col: str, start: dt.datetime, end: dt.datetime) -> pl.DataFrame:
    return frame.filter(pl.col(col) >= start, pl.col(col) < end)


def _with_blame(rows: pl.DataFrame, inc: pl.DataFrame) -> pl.DataFrame:
    """Ledger rows with the blame of the incident they are pinned on (`none` for unpinned losses)."""
    blame = inc.select("incident_id", pl.col("blame").cast(pl.String)).unique("incident_id")
    return rows.join(blame, on="incident_id", how="left").with_columns(pl.col("blame").fill_null("none"))


def summary(rows: pl.DataFrame, inc: pl.DataFrame, run_mfu: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Use, ETTR, MFU, losses and failures grouped by `keys` (provider, cluster or run)."""
    lost = pl.col("category") != "productive"
    r = _with_blame(rows, inc).join(run_mfu, on="run", how="left")
    has_mfu = pl.col("steady_mfu").is_not_null()
    used = r.group_by(keys).agg(
        runs=pl.col("run").n_unique(),
        wall_hours=pl.col("seconds").sum() / 3600,  # only meaningful per run: a run's rows tile its allocation
        gpu_hours=pl.col("gpu_hours").sum(),
        # NOTE: the exposure of failure rates is the time the attempts ran, not the requeue gaps between them:
        # one definition (EXPOSURE), the same GPU-hours as advice's and the provider what-if's per run
        exposure_hours=pl.col("seconds").filter(pl.col("category") != "restart").sum() / 3600,
        exposure_gpu_hours=pl.col("gpu_hours").filter(pl.col("category") != "restart").sum(),
        productive_gpu_hours=pl.col("gpu_hours").filter(~lost).sum(),
        lost_gpu_hours=pl.col("gpu_hours").filter(lost).sum(),
        usd_lost=pl.col("usd").filter(lost).sum(),
        provider_lost_gpu_hours=pl.col("gpu_hours").filter(lost & (pl.col("blame") == "provider")).sum(),
        provider_usd_lost=pl.col("usd").filter(lost & (pl.col("blame") == "provider")).sum(),
        hang_gpu_hours=pl.col("gpu_hours").filter(pl.col("category") == "hang").sum(),
        restart_gpu_hours=pl.col("gpu_hours").filter(pl.col("category") == "restart").sum(),
        checkpoint_gpu_hours=pl.col("gpu_hours").filter(pl.col("category") == "checkpoint").sum(),
        straggler_gpu_hours=pl.col("gpu_hours").filter(pl.col("category") == "straggler").sum(),
        mean_restart_s=pl.col("seconds").filter(pl.col("category") == "restart").mean(),
        mean_hang_s=pl.col("seconds").filter((pl.col("category") == "hang") & (pl.col("incident_id") != "none")
                                             ).mean(),
        _mfu_hours=pl.col("gpu_hours").filter(has_mfu).sum(),
        _steady=(pl.col("steady_mfu") * pl.col("gpu_hours")).filter(has_mfu).sum(),
        _effective=(pl.col("steady_mfu") * pl.col("gpu_hours")).filter(has_mfu & ~lost).sum(),
    )
    used = used.with_columns(
        ettr=pl.col("productive_gpu_hours") / pl.col("gpu_hours"),
        steady_mfu=pl.when(pl.col("_mfu_hours") > 0).then(pl.col("_steady") / pl.col("_mfu_hours")),
        effective_mfu=pl.when(pl.col("_mfu_hours") > 0).then(pl.col("_effective") / pl.col("_mfu_hours")),
    ).drop("_mfu_hours", "_steady", "_effective")
    ends = pl.col("kind") == "attempt_end"
    failure = is_failure()
    counted = inc.group_by(keys).agg(
        incidents=pl.len(), interruptions=ends.sum(), failures=failure.sum(),
        provider_failures=(failure & (pl.col("blame") == "provider")).sum())
    out = used.join(counted, on=keys, how="full", coalesce=True).with_columns(
        pl.col("incidents", "interruptions", "failures", "provider_failures").fill_null(0))
    return with_intervals(out).sort(keys)


def _interval_columns(frame: pl.DataFrame, name: str, exposure: str, per: float, kind: str) -> dict[str, pl.Series]:
    """`name`, `name_lo`, `name_hi`: a rate (`kind` "rate") or MTBF ("mtbf") of `failures` over `exposure`."""
    fn = rates.rate_interval if kind == "rate" else rates.mtbf_interval
    vals = [fn(int(k or 0), e, per) if kind == "rate" else fn(int(k or 0), e)
            for k, e in zip(frame["failures"].to_list(), frame[exposure].to_list(), strict=True)]
    ok = [rates.enough_exposure(g) for g in frame[_basis(frame)].to_list()]
    # NOTE: the point estimate is withheld below the minimum exposure; the interval is always given
    # (an unbounded MTBF, with no failure, is null rather than inf, which JSON cannot carry)
    def col(i: int, guard: bool) -> list:
        return [None if v[i] is None or (guard and not good) or math.isinf(v[i]) else v[i]
                for v, good in zip(vals, ok, strict=True)]
    return {name: pl.Series(name, col(0, True), pl.Float64), f"{name}_lo": pl.Series(f"{name}_lo", col(1, False),
                                                                                    pl.Float64),
            f"{name}_hi": pl.Series(f"{name}_hi", col(2, False), pl.Float64)}


def _basis(frame: pl.DataFrame) -> str:
    """The GPU-hours a rate is over: the exposure where the frame has it (summary), else its GPU-hours."""
    return "exposure_gpu_hours" if "exposure_gpu_hours" in frame.columns else "gpu_hours"


def with_intervals(frame: pl.DataFrame) -> pl.DataFrame:
    """Failures per 1,000 GPU-days and MTBF in GPU-days with their exact 95% Poisson intervals.

    `enough_exposure` tells whether the GPU-hours reach `rates.MIN_EXPOSURE_GPU_HOURS`; when they do
    not, the point estimates are null and `reliability_note` says why (the intervals stay)."""
    basis = _basis(frame)
    days = frame.with_columns(_gpu_days=pl.col(basis) / 24)
    cols = {**_interval_columns(days, "failures_per_1k_gpu_days", "_gpu_days", 1000.0, "rate"),
            **_interval_columns(days, "mtbf_gpu_days", "_gpu_days", 1.0, "mtbf")}
    ok = [rates.enough_exposure(g) for g in frame[basis].to_list()]
    notes = [None if good else rates.too_little(g, int(k or 0))
             for g, k, good in zip(frame[basis].to_list(), frame["failures"].to_list(), ok, strict=True)]
    return frame.with_columns(**cols, enough_exposure=pl.Series(ok, dtype=pl.Boolean),
                              reliability_note=pl.Series(notes, dtype=pl.String))


def _runs(ev: _Evidence, rows: pl.DataFrame, inc: pl.DataFrame, con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Per run: the summary plus its own MTBF (hours its attempts ran between failures) and whether it has a
    ledger. `wall_hours` is the ledger's: the scheduler's allocation of each attempt plus the gaps between
    them, which `clusterlab attribute` prints too (`clusterlab runs` gives the first to last log line)."""
    per = summary(rows, inc, ev.run_mfu, ["run"])
    info = fleet.run_places(con).select("run", "cluster", "provider", "gpus")
    per = per.with_columns(**_interval_columns(per, "mtbf_hours", "exposure_hours", 1.0, "mtbf"))
    return per.join(info, on="run", how="left").with_columns(
        has_ledger=pl.col("run").is_in(list(ev.attributions)),
    ).select("run", "cluster", "provider", "gpus", pl.exclude("run", "cluster", "provider", "gpus")).sort("run")


def _failure_modes(lost: pl.DataFrame, inc: pl.DataFrame) -> pl.DataFrame:
    """Per provider and failure mode: incidents, blame, lost GPU-hours and dollars."""
    by_rows = lost.group_by("provider", "failure_mode").agg(gpu_hours_lost=pl.col("gpu_hours").sum(),
                                                            usd_lost=pl.col("usd").sum())
    by_inc = inc.group_by("provider", "failure_mode").agg(incidents=pl.len(), blame=pl.col("blame").first())
    out = by_rows.join(by_inc, on=["provider", "failure_mode"], how="full", coalesce=True)
    default = pl.col("failure_mode").replace_strict({m: x.blame for m, x in taxonomy.MODES.items()},
                                                    default="none", return_dtype=pl.String)
    return out.with_columns(blame=pl.coalesce("blame", default), incidents=pl.col("incidents").fill_null(0),
                            gpu_hours_lost=pl.col("gpu_hours_lost").fill_null(0.0),
                            usd_lost=pl.col("usd_lost").fill_null(0.0)).sort(
        ["provider", "gpu_hours_lost", "failure_mode"], descending=[False, True, False])


def _blame(lost: pl.DataFrame) -> pl.DataFrame:
    """Per provider: lost GPU-hours and dollars by blame, and each blame's share of the loss."""
    out = lost.group_by("provider", "blame").agg(gpu_hours_lost=pl.col("gpu_hours").sum(),
                                                 usd_lost=pl.col("usd").sum())
    return out.with_columns(share=pl.col("gpu_hours_lost") / pl.col("gpu_hours_lost").sum().over("provider")).sort(
        ["provider", "gpu_hours_lost"], descending=[False, True])


def _worst_hosts(lost: pl.DataFrame, inc: pl.DataFrame, history: pl.DataFrame, limit: int = 10) -> pl.DataFrame:
    """Hosts with incidents this week, costliest first; `repeat_offender` when they had some in other weeks."""
    hosts = inc.filter(pl.col("host").is_not_null()).group_by("host", "cluster", "provider").agg(
        incidents=pl.len(), failure_modes=pl.col("failure_mode").unique().sort().str.join(", "))
    cost = lost.filter(pl.col("host") != attribution.NONE).group_by("host").agg(
        gpu_hours_lost=pl.col("gpu_hours").sum(), usd_lost=pl.col("usd").sum())
    hist = history.filter(pl.col("host").is_not_null()).group_by("host").agg(
        incidents_to_date=pl.len(), weeks_with_incidents=pl.col("week").n_unique(),
        first_incident_ts=pl.col("root_ts").min())
    out = hosts.join(cost, on="host", how="left").join(hist, on="host", how="left").with_columns(
        pl.col("gpu_hours_lost", "usd_lost").fill_null(0.0))
    return out.with_columns(repeat_offender=pl.col("weeks_with_incidents") > 1).sort(
        ["gpu_hours_lost", "incidents", "host"], descending=[True, True, False]).head(limit)


FLEET_LIMIT = 20  # hosts of the fleet table, costliest first (every host the rule flags is listed too)


def _fleet_hosts(con: duckdb.DuckDBPyConnection, inc: pl.DataFrame, history: pl.DataFrame, start: dt.datetime,
                 end: dt.datetime, limit: int = FLEET_LIMIT) -> pl.DataFrame:
    """The week's fleet memory (`account.fleet.fleet_memory`, what `clusterlab hosts --week` prints): per host its
    incidents and GPU-hours lost this week, and the fault episodes, hours in repair and jobs killed that started in
    it; beside them the relaunch plan's repeat-offender rule at the week's end (`account.offenders.rule_faults` over
    the HISTORY_DAYS before it). The `limit` costliest hosts, then every other host the rule flags."""
    week = memory.fleet_memory(con, memory.incident_hosts(inc), start, end)
    rule = memory.repeat_offenders(con, history, end - dt.timedelta(days=offenders.HISTORY_DAYS), end)
    top = week.head(limit)
    flagged = rule.filter(pl.col("repeat_offender"), ~pl.col("host").is_in(top["host"].implode()))
    rest = week.join(flagged.select("host"), on="host", how="right").select(week.columns)
    inv = store.frame(con, "SELECT host, cluster AS _c, provider AS _p FROM inventory")
    out = pl.concat([top, rest], how="vertical_relaxed").join(rule, on="host", how="left").join(
        inv, on="host", how="left")
    counts = ["incidents", "runs", "episodes", "open_episodes", "jobs_killed", "rule_incidents", "rule_episodes",
              "rule_faults"]
    return out.with_columns(
        pl.col(counts).fill_null(0), repair_hours=pl.col("repair_hours").fill_null(0.0),
        repeat_offender=pl.col("repeat_offender").fill_null(False),
        cluster=pl.coalesce("cluster", "_c"), provider=pl.coalesce("provider", "_p")).drop("_c", "_p")


def _stragglers(lost: pl.DataFrame, inc: pl.DataFrame) -> pl.DataFrame:
    """Hosts the ledger's straggler time is pinned on, with the step stretches that made them incidents."""
    strag = lost.filter(pl.col("category") == "straggler")
    steps = inc.filter(pl.col("kind") == "straggler").group_by("host").agg(
        stretches=pl.len(), slow_steps=(pl.col("last_step") - pl.col("first_step") + 1).sum(),
        runs=pl.col("run").unique().sort().str.join(", "))
    out = strag.group_by("host", "cluster", "provider").agg(gpu_hours_lost=pl.col("gpu_hours").sum(),
                                                            usd_lost=pl.col("usd").sum())
    return out.join(steps, on="host", how="left").sort("gpu_hours_lost", descending=True)


def _advice(atts: dict[str, attribution.Attribution], week_runs: list[str],
            priced: dict[str, what_if.WhatIf]) -> pl.DataFrame:
    """Each run's checkpoint-interval advice (Young/Daly on the cluster's measured failure rate).

    The saving is the advice's own (`account.advice`: the run's ledger re-priced at the optimum, the figure the
    what-if's `checkpoint_interval` prices), printed only where it stands across the MTBF's interval; the
    verdict of one that does not is the what-if's. "Training between saves" is the τ that pricing compares with
    the optimum: the measured gap between saves less one save. `cluster_gpu_hours` is the exposure of the
    run's cluster (every run of it in the store), not the provider's of the reliability table."""
    recs = [a.checkpoint_advice.to_dict() for r, a in atts.items() if r in week_runs and a.checkpoint_advice]
    schema = {"run": pl.String, "cluster": pl.String, "failures": pl.Int64, "cluster_gpu_hours": pl.Float64,
              "mtbf_job_hours": pl.Float64, "save_s": pl.Float64, "interval_s": pl.Float64,
              "optimal_interval_s": pl.Float64, "gpu_hours_saved": pl.Float64, "mtbf_job_hours_lo": pl.Float64,
              "mtbf_job_hours_hi": pl.Float64, "optimal_interval_lo_s": pl.Float64,
              "optimal_interval_hi_s": pl.Float64, "enough_exposure": pl.Boolean, "gpu_hours_saved_lo": pl.Float64,
              "gpu_hours_saved_hi": pl.Float64, "saving_stands": pl.Boolean}
    out = pl.DataFrame(recs, schema=schema) if recs else pl.DataFrame(schema=schema)
    found = {run: next((p for p in w.pricings if p.policy == "checkpoint_interval"), None)
             for run, w in priced.items()}
    verdicts = {run: p.verdict for run, p in found.items() if p is not None and p.priced}
    out = out.with_columns(
        train_interval_s=pl.when(pl.col("interval_s") > pl.col("save_s")).then(pl.col("interval_s") - pl.col("save_s")),
        gpu_hours_saved=pl.when(pl.col("saving_stands")).then(pl.col("gpu_hours_saved")),
        _what_if=pl.col("run").replace_strict(verdicts, default=None, return_dtype=pl.String))
    ratio = pl.col("train_interval_s") / pl.col("optimal_interval_s")
    secs = lambda c: pl.col(c).round(0).cast(pl.Int64)  # noqa: E731
    between = pl.when(pl.col("optimal_interval_lo_s").is_not_null() & pl.col("optimal_interval_hi_s").is_not_null()
                      ).then(pl.format(" (95%: {}-{} s)", secs("optimal_interval_lo_s"), secs("optimal_interval_hi_s"))
                             ).otherwise(pl.lit(""))
    verdict = (pl.when(pl.col("save_s").is_null()).then(pl.lit("no measured save to advise from"))
               .when(pl.col("failures").fill_null(0) == 0).then(pl.format(
                   "no cluster failure in {} GPU-hours: no interval to advise", pl.col("cluster_gpu_hours").round(1)))
               .when(pl.col("optimal_interval_s").is_null() | pl.col("train_interval_s").is_null()).then(
                   pl.lit("not enough failures or saves to advise"))
               .when(pl.col("_what_if").str.starts_with("too little exposure")).then(pl.col("_what_if"))
               .when((ratio > 0.8) & (ratio < 1.25)).then(pl.concat_str(pl.lit("interval is near the optimum"),
                                                                        between))
               .otherwise(pl.concat_str(pl.format("save after every {} s of training", secs("optimal_interval_s")),
                                        between, pl.format(" instead of every {} s", secs("train_interval_s")))))
    return out.with_columns(advice=verdict).drop("_what_if").sort("run")


def _change(this: pl.DataFrame, last: pl.DataFrame) -> pl.DataFrame:
    """Provider figures this week against last week (null where last week had no data)."""
    def long(f: pl.DataFrame, name: str) -> pl.DataFrame:
        cols = [c for c in CHANGE_METRICS if c in f.columns]
        return f.select("provider", *[pl.col(c).cast(pl.Float64) for c in cols]).unpivot(
            index="provider", variable_name="metric", value_name=name)
    out = long(this, "this_week").join(long(last, "last_week"), on=["provider", "metric"], how="left")
    order = {m: i for i, m in enumerate(CHANGE_METRICS)}
    return out.with_columns(change=pl.col("this_week") - pl.col("last_week")).sort(
        pl.col("provider"), pl.col("metric").replace_strict(order, return_dtype=pl.Int32))


def _ranking(providers: pl.DataFrame) -> pl.DataFrame:
    """Providers by the share of contracted GPU-time that was delivered and not lost to their own faults.

    score = (contracted − undelivered − provider-lost) / contracted GPU-hours, where undelivered is
    contracted − available (missing, late and drained nodes, as the Delivered table counts them) and
    provider-lost is what the ledger puts on provider-blamed incidents. With no contract known the
    basis falls back to the GPU-hours our runs used: (used − provider-lost) / used, and says so.
    """
    contracted = pl.col("contracted_gpu_hours").fill_null(0) > 0
    used = pl.col("gpu_hours").fill_null(0) > 0
    lost = pl.col("provider_lost_gpu_hours").fill_null(0.0)
    # NOTE: a drained node's hours and a run's loss on it can overlap for the minutes between the
    # drain and the run's exit; the clip keeps such a week's score within [0, 1]
    basis = pl.when(contracted).then(pl.lit(CONTRACT_BASIS)).when(used).then(pl.lit(USED_BASIS))
    score = (pl.when(contracted).then((pl.col("available_gpu_hours").fill_null(0.0) - lost)
                                      / pl.col("contracted_gpu_hours"))
             .when(used).then((pl.col("gpu_hours") - lost) / pl.col("gpu_hours"))).clip(0.0, 1.0)
    p = providers.with_columns(score=score, score_basis=basis, provider_lost_share=pl.when(contracted).then(
        lost / pl.col("contracted_gpu_hours")).when(used).then(lost / pl.col("gpu_hours")))
    p = p.with_columns(undelivered_gpu_hours=pl.when(contracted).then(
        pl.col("contracted_gpu_hours") - pl.col("available_gpu_hours").fill_null(0.0)),
        delivery_verdict=_delivery_verdict())
    p = p.with_columns(reliability_verdict=pl.Series(_reliability(p), dtype=pl.String))
    p = p.sort(["score", "provider"], descending=[True, False], nulls_last=True).with_row_index("rank", offset=1)
    return p.select("rank", "provider", "score", "score_basis", "delivered_share", "provider_lost_share",
                    "undelivered_gpu_hours", "provider_failures", "exposure_gpu_hours", "delivery_verdict",
                    "reliability_verdict", verdict=_verdict())


def _verdict() -> pl.Expr:
    """One line per provider: the score's word, then delivery and reliability apart, each from its own figures.

    The score is a share of contracted GPU-hours, so a missing node (1,344 GPU-hours a week) outweighs a
    failure (tens of GPU-hours): the line says how much of the score each part moved, and reliability speaks
    as a rate over its exposure, withheld ("too little exposure to tell") where its interval cannot tell."""
    word = (pl.when(pl.col("score").is_null()).then(pl.lit("no runs and no contract this week"))
            .when(pl.col("score") >= 0.9).then(pl.lit("keep"))
            .when(pl.col("score") >= 0.7).then(pl.lit("keep, claim credits"))
            .otherwise(pl.lit("escalate")))
    score = pl.format(": score {} {}", pl.col("score").round(3), "score_basis")
    moved = pl.when(pl.col("contracted_gpu_hours").fill_null(0) > 0).then(pl.format(
        " (undelivered {} GPU-h, lost to provider faults {} GPU-h)", _num(pl.col("undelivered_gpu_hours"), 0),
        _num(pl.col("provider_lost_gpu_hours").fill_null(0.0), 1)))
    return pl.concat_str([word, score, moved, pl.lit(" — delivery: "), pl.col("delivery_verdict"),
                          pl.lit("; reliability: "), pl.col("reliability_verdict")], ignore_nulls=True)


def _num(e: pl.Expr, digits: int) -> pl.Expr:
    """A figure with thousands separators, as the tables print it."""
    return e.map_elements(lambda v: f"{v:,.{digits}f}", return_dtype=pl.String)


def _delivery_verdict() -> pl.Expr:
    """What was delivered against the contract, from the Delivered table's figures."""
    contracted = pl.col("contracted_gpu_hours").fill_null(0) > 0
    share = pl.format("{}% of contracted GPU-time delivered", (pl.col("delivered_share") * 100).round(1))
    missing = pl.when(pl.col("missing_nodes").fill_null(0) > 0).then(
        pl.format("; {} of {} contracted nodes missing", "missing_nodes", "contracted_nodes"))
    late = pl.when(pl.col("late_nodes").fill_null(0) > 0).then(
        pl.format("; {} node(s) late ({} GPU-h)", "late_nodes", pl.col("late_gpu_hours").round(0).cast(pl.Int64)))
    drained = pl.when(pl.col("drained_nodes").fill_null(0) > 0).then(pl.format("; {} node(s) drained",
                                                                                "drained_nodes"))
    return pl.when(contracted).then(pl.concat_str([share, missing, late, drained], ignore_nulls=True)).otherwise(
        pl.lit("no contract known"))


def _reliability(providers: pl.DataFrame) -> list[str]:
    """Provider-caused failures per 1,000 GPU-days over the week's exposure (EXPOSURE), with their 95%
    interval; below the minimum exposure the rate is withheld and the line says so."""
    out = []
    for r in providers.iter_rows(named=True):
        exposure, k = r.get("exposure_gpu_hours") or 0.0, int(r.get("provider_failures") or 0)
        if not exposure:
            out.append("no runs this week")
            continue
        point, lo, hi = rates.rate_interval(k, exposure / 24, 1000.0)
        span = f"95% CI {lo:,.0f}–{hi:,.0f} per 1,000 GPU-days"
        ettr = f"ETTR {r['ettr'] * 100:.1f}%" if r.get("ettr") is not None else "ETTR unknown"
        tail = f"; {ettr}, ${r.get('provider_usd_lost') or 0.0:,.2f} lost to provider faults"
        head = f"{k} provider-caused failure(s) in {exposure:,.1f} GPU-hours of exposure"
        if not rates.enough_exposure(exposure):
            out.append(f"too little exposure to tell: {head} ({span}){tail}")
        else:
            out.append(f"{point:,.0f} provider-caused failures per 1,000 GPU-days ({span}; {head}){tail}")
    return out


def scorecard(con: duckdb.DuckDBPyConnection, week: str, providers: list[str] | tuple[str, ...] | None = None,
              settings: incidents.Settings | None = None) -> Scorecard:
    """The scorecard of one ISO week (`2026-W48`), for every provider or only those named."""
    s = settings or incidents.Settings()
    start, end = week_bounds(week)
    prev = start - dt.timedelta(days=7)
    ev = _collect(con, prev, end, s)
    rows, inc = _in(ev.rows, "start_ts", start, end), _in(ev.incidents, "root_ts", start, end)
    lost = _with_blame(rows.filter(pl.col("category") != "productive"), inc)
    delivery, drained = fleet.delivery(con, start, end)
    by_cluster = summary(rows, inc, ev.run_mfu, ["provider", "cluster"])
    clusters = delivery.join(by_cluster, on=["provider", "cluster"], how="full", coalesce=True).sort(
        "provider", "cluster")
    prov = summary(rows, inc, ev.run_mfu, ["provider"]).join(
        fleet.provider_delivery(con, delivery), on="provider", how="full", coalesce=True)
    last = summary(_in(ev.rows, "start_ts", prev, start), _in(ev.incidents, "root_ts", prev, start), ev.run_mfu,
                   ["provider"])
    history = fleet.history(con, s, end)
    week_runs = sorted(set(rows["run"].to_list()) | set(inc["run"].to_list()))
    week_atts = {r: a for r, a in ev.attributions.items() if r in week_runs}
    priced = what_if_week.price_runs(con, week_atts)  # NOTE: one pricing per run for both tables that print it
    sc = Scorecard(
        week=week_of(start), start=start, end=end, providers=prov.sort("provider"), clusters=clusters,
        runs=_runs(ev, rows, inc, con).filter(pl.col("run").is_in(week_runs)),
        ledger=rows.group_by("provider", "cluster", "category").agg(pl.col("gpu_hours").sum(), pl.col("usd").sum())
        .sort("provider", "cluster", "category"),
        failure_modes=_failure_modes(lost, inc), blame=_blame(lost), worst_hosts=_worst_hosts(lost, inc, history),
        fleet_hosts=_fleet_hosts(con, inc, history, start, end),
        stragglers=_stragglers(lost, inc), delivery=delivery, drained=drained,
        responsiveness=fleet.responsiveness(con, history, start, end), checkpoint_advice=_advice(
            ev.attributions, week_runs, priced), ranking=_ranking(prov), change=_change(prov, last),
        incidents=inc.select([c for c in attribution.INCIDENT_COLUMNS if c in inc.columns]).sort(
            "root_ts", "incident_id"),
        notes=_notes_of(ev.notes, week_runs),
        attributions=week_atts, support=tickets.support(con, history, end),
        what_if=what_if_week.week_what_if(con, week_atts, priced),
        changes=what_if_week.week_changes(con, start, end))
    return _only(sc, providers) if providers else sc


def _notes_of(notes: list[str], runs) -> list[str]:
    """The notes (`<run>: ...`) about these runs; a run's name may itself hold `:`."""
    return [n for n in notes if any(n.startswith(f"{r}: ") for r in runs)]


def _only(sc: Scorecard, providers: list[str] | tuple[str, ...]) -> Scorecard:
    """The scorecard cut down to some providers (the ranking re-numbered among them)."""
    keep = list(providers)
    for name in Scorecard.FRAMES:
        f = getattr(sc, name)
        if "provider" in f.columns:
            setattr(sc, name, f.filter(pl.col("provider").is_in(keep)))
    sc.ranking = sc.ranking.drop("rank").with_row_index("rank", offset=1)
    runs = set(sc.runs["run"].to_list())
    sc.checkpoint_advice = sc.checkpoint_advice.filter(pl.col("run").is_in(list(runs)))
    sc.attributions = {r: a for r, a in sc.attributions.items() if r in runs}
    sc.notes = _notes_of(sc.notes, runs)
    return sc

"""Attribution of a run: incidents, the ledger tied to them, and lost MFU by host, cluster, provider, mode."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import duckdb
import polars as pl

from clusterlab import store, taxonomy
from clusterlab.account import advice, evals, failed_launches, ledger, lineage, stepless, transport_lag
from clusterlab.diagnose import (
    counter_evidence,  # error counters weighed at an attempt's end
    incidents,
    read_cache,  # the clocks and spans the diagnosis reads once
    refinements,
    root_cause,
    straggler_evidence,  # a straggler's step records and the telemetry that explains them
    telemetry_incidents,  # slow stretches explained by telemetry (throttling, saturation)
    timeline,
)
from clusterlab.torchtools import flops
from clusterlab.triage import annotations

NONE = "none"
# Evidence that can slow every rank without stopping the job: a slow stretch with such a line on one of
# the run's hosts as it begins (from a minute before to two minutes in) is an incident on that host and
# mode, not left unexplained. Only the onset counts: the failure that ends a long slow stretch prints its
# own network lines at the end, and those are not why the stretch began.
SLOWDOWN_CAUSES = ("filesystem_io", "network", "pcie_error", "nvlink_error", "gpu_hw_other", "host_hw")
SLOWDOWN_LEAD_S = 60.0
SLOWDOWN_ONSET_S = 120.0
CLOCK_NOTE_S = 5.0  # a host clock this far off the log's is said in the notes (NTP keeps them within ms)
SLOWDOWN_MIN = 0.05  # a step counts as slowed when its unexplained excess is this share of the baseline
INCIDENT_SCHEMA: dict[str, pl.DataType] = {
    "incident_id": pl.String, "run": pl.String, "attempt": pl.Int32, "kind": pl.String, "root_ts": pl.Datetime("us"),
    "exit_ts": pl.Datetime("us"), "failure_mode": pl.String, "blame": pl.String, "host": pl.String,
    "rank": pl.Int32, "cluster": pl.String, "provider": pl.String, "action": pl.String, "gpu_hours_lost": pl.Float64,
    "usd_lost": pl.Float64, "evidence_count": pl.UInt32, "overridden": pl.Boolean, "detected_failure_mode": pl.String,
    "detected_host": pl.String, "status": pl.String, "ticket": pl.String, "note": pl.String, "first_step": pl.Int64,
    "last_step": pl.Int64, "confidence": pl.Float64, "rejected": root_cause.REJECTED,
}
INCIDENT_COLUMNS = list(INCIDENT_SCHEMA)


def empty_incidents() -> pl.DataFrame:
    """An incidents frame with no rows."""
    return pl.DataFrame(schema=INCIDENT_SCHEMA)


def complete_incidents(frame: pl.DataFrame) -> pl.DataFrame:
    """Every incident column, in order: the ones a run without a ledger cannot price (GPU-hours and dollars
    lost, where it has no step times) are there, empty, so that every reader can sort and print them."""
    return frame.with_columns([pl.lit(None, t).alias(c) for c, t in INCIDENT_SCHEMA.items() if c not in frame.columns]
                              ).select(INCIDENT_COLUMNS)


@dataclass
class Attribution:
    """Where a run's GPU-hours went; frames for notebooks, `to_dict()` for the CLI's JSON."""

    run: str
    gpus: int
    cluster: str | None
    wall_hours: float
    gpu_hours: float
    steady_mfu: float | None
    effective_mfu: float | None
    baseline_step_s: float
    rows: pl.DataFrame  # one row per (category, attempt, incident, host): the detailed ledger
    incidents: pl.DataFrame
    evidence: pl.DataFrame
    mfu_source: str | None = None
    notes: list[str] = field(default_factory=list)
    checkpoint_advice: advice.CheckpointAdvice | None = None
    # per (attempt, host): how far the host's clock runs ahead of the run's log clock, where measured
    clocks: pl.DataFrame | None = None

    @property
    def ledger(self) -> pl.DataFrame:
        """category, gpu_hours, lost_mfu: every category, in the fixed order."""
        agg = self.rows.group_by("category").agg(gpu_hours=pl.col("gpu_hours").sum())
        cats = pl.DataFrame({"category": ledger.CATEGORIES})
        out = cats.join(agg, on="category", how="left").with_columns(pl.col("gpu_hours").fill_null(0.0))
        lost = pl.when(pl.col("category") == "productive").then(0.0).otherwise(self._lost_mfu(pl.col("gpu_hours")))
        return out.with_columns(lost_mfu=lost)

    def _lost_mfu(self, hours: pl.Expr) -> pl.Expr:
        """A share of the run's GPU-time, in points of the steady-state MFU it cost."""
        if self.steady_mfu is None:
            return pl.lit(None, pl.Float64)
        return self.steady_mfu * hours / self.gpu_hours

    def by(self, key: str) -> pl.DataFrame:
        """Lost GPU-hours, lost MFU and $ by `failure_mode`, `host`, `cluster` or `provider`."""
        lost = self.rows.filter(pl.col("category") != "productive")
        agg = (lost.group_by(key).agg(gpu_hours_lost=pl.col("gpu_hours").sum(), usd_lost=pl.col("usd").sum())
               .sort("gpu_hours_lost", descending=True))
        return agg.with_columns(lost_mfu=self._lost_mfu(pl.col("gpu_hours_lost"))).select(
            key, "gpu_hours_lost", "lost_mfu", "usd_lost")

    def to_dict(self) -> dict:
        """The JSON document of `clusterlab attribute --json`."""
        ev = self.evidence
        incs = []
        for inc in self.incidents.to_dicts():
            lines = ev.filter(pl.col("incident_id") == inc["incident_id"]).head(20)
            incs.append({**{k: _iso(v) for k, v in inc.items()},
                         "evidence": [{k: _iso(r[k]) for k in ("source", "file", "line", "ts", "host", "text")}
                                      for r in lines.to_dicts()]})
        return {
            "run": self.run, "gpus": self.gpus, "wall_hours": self.wall_hours, "gpu_hours": self.gpu_hours,
            "steady_mfu": self.steady_mfu, "effective_mfu": self.effective_mfu,
            "ledger": self.ledger.to_dicts(),
            **{f"by_{k}": self.by(k).to_dicts() for k in ("failure_mode", "host", "cluster", "provider")},
            "incidents": incs,
            "checkpoint_advice": self.checkpoint_advice.to_dict() if self.checkpoint_advice else None,
            "notes": self.notes,
            "host_clocks": self.clocks.to_dicts() if self.clocks is not None else [],
        }

    def plot(self, ax=None):
        """The waterfall from steady-state to effective MFU (or GPU-hours when MFU is unknown)."""
        from clusterlab.plots import charts as plots

        return plots.ledger_waterfall(self.ledger, self.steady_mfu, self.gpu_hours, self.run, ax=ax)


def _iso(v):
    return v.isoformat() if isinstance(v, dt.datetime | dt.date) else v


def _step_rows(con: duckdb.DuckDBPyConnection, run: str, att: pl.DataFrame, tl: pl.DataFrame, b: float,
               slow: pl.DataFrame, inc: pl.DataFrame, evidence: pl.DataFrame
               ) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The ledger's rows from the step intervals (`tl`, baseline `b`), and the incidents and evidence with the
    slowdowns and failed launches they found."""
    tl = ledger.with_unlogged_steps(tl, _stall_roots(con, run, inc), b, store.frame(
        con, "SELECT attempt, ts, duration_s FROM checkpoints WHERE run = ? AND action = 'save' AND ts IS NOT NULL",
        [run]))
    latest = _latest_roots(con, inc, evidence)
    saves = store.frame(con, """SELECT DISTINCT ON (attempt, step, CASE WHEN step IS NULL THEN ts END)
                                       attempt AS s_attempt, step AS save_step, ts,
                                       coalesce(duration_s, 0) AS duration_s, ok
                                FROM checkpoints WHERE run = ? AND action = 'save' AND ts IS NOT NULL
                                ORDER BY attempt, step, CASE WHEN step IS NULL THEN ts END, duration_s IS NULL, ts""",
                        [run])
    cut = ledger.until_root(tl, latest, saves)
    # NOTE: one save told by two sources (the Trainer's "Saving model checkpoint" line, then DeepSpeed's engine
    # timing the same save) is the one with a duration: the earlier line without one would make the stall vanish.
    # Saves that name no step (a tag that is no step number, a path without one) are told apart by their time: all
    # of an attempt's would otherwise be one save, its other stalls booked as slowdown
    saves, tl = ledger.saves_before_cut(saves, tl, cut), cut
    # NOTE: isolated slow steps are noise; only stretches that became incidents count as straggling
    strag = inc.filter(pl.col("kind") == "straggler")
    straggling = slow.join_where(strag.select("attempt", "host", "first_step", "last_step", strag_id="incident_id"),
                           pl.col("attempt") == pl.col("attempt_right"), pl.col("host") == pl.col("host_right"),
                           pl.col("step") >= pl.col("first_step"), pl.col("step") <= pl.col("last_step")
                           ).select("attempt", "step", "host", "strag_id") if strag.height else slow.head(0).select(
        "attempt", "step", "host", strag_id=pl.lit(None, pl.String))
    wide = ledger.split_intervals(tl, saves, straggling, lineage.keep_points(att, saves, inc, con, run), b,
                                  evals.spans(con, run))
    ended = inc.filter(pl.col("kind") == "attempt_end")["attempt"].to_list()
    own = inc.filter(pl.col("kind") == "attempt_end").group_by("attempt").agg(
        root_own=pl.col("root_ts").min(), hang=(pl.col("failure_mode") == "nccl_timeout").any())
    tails = ledger.tails(tl, att, saves, [a for a in att["attempt"].to_list() if a not in ended],
                         latest.join(own.with_columns(pl.col("attempt").cast(latest.schema["attempt"]),
                                                      pl.col("root_own").cast(latest.schema["root_ts"])),
                                     on="attempt", how="left"), b)
    slow_steps, slow_inc, slow_ev = _slowdowns(con, run, wide, b)
    if slow_inc.height:
        inc = pl.concat([inc, _finish_incidents(con, slow_inc, slow_ev)], how="diagonal_relaxed").sort(
            "root_ts", "incident_id")
        evidence = pl.concat([evidence, slow_ev], how="diagonal_relaxed")
    rows = _tie(wide, tails, straggling, inc, att, slow_steps)
    inc, evidence, rows = failed_launches.with_failed_launches(con, run, att, inc, evidence, rows, _finish_incidents)
    return rows, inc, evidence


def _run_info(con: duckdb.DuckDBPyConnection, run: str) -> dict:
    rows = store.frame(con, """
        SELECT r.*, c.gpu, c.provider, p.usd_per_gpu_hour FROM runs r
        LEFT JOIN clusters c USING (cluster) LEFT JOIN providers p USING (provider) WHERE r.run = ?""", [run])
    if rows.height:
        return rows.row(0, named=True)
    if not store.frame(con, "SELECT 1 FROM attempts WHERE run = ? LIMIT 1", [run]).height:
        raise KeyError(f"no run {run!r}")
    return {"run": run}


def _steps(con: duckdb.DuckDBPyConnection, run: str, profile: pl.DataFrame) -> pl.DataFrame:
    """One record per step: per-rank timings at the steps they cover, the training log's lines at every
    other step (a window of timings never replaces the log's other steps)."""
    return timeline.merge(timeline.logged_steps(con, run), profile)


def _mfu(con: duckdb.DuckDBPyConnection, info: dict, baseline_s: float, notes: list[str]
         ) -> tuple[float | None, str | None]:
    """Steady-state MFU: the model FLOPs of one step at baseline speed over the GPUs' peak."""
    facts = dict(store.frame(con, "SELECT key, any_value(value) AS value FROM facts WHERE run = ? GROUP BY key",
                             [info["run"]]).iter_rows())
    try:
        per_token, source = flops.run_flops_per_token(info, facts)
        peak = flops.peak_flops(info.get("gpu") or "")
    except ValueError as e:
        notes.append(f"MFU unknown: {e}")
        return None, None
    tokens = info.get("tokens_per_step") or facts.get("tokens_per_step")
    if not tokens or not info.get("gpus"):
        notes.append("MFU unknown: run.toml gives no tokens_per_step or gpus")
        return None, None
    return float(tokens) * per_token / (baseline_s * info["gpus"] * peak), source


def attribute(con: duckdb.DuckDBPyConnection, run: str, settings: incidents.Settings | None = None) -> Attribution:
    """Incidents and the exact GPU-time ledger of one run; a refining rule that failed is named in its notes
    (`diagnose.refinements`)."""
    with refinements.collecting() as failed, read_cache.read_once():
        a = _attribute(con, run, settings)
    a.notes.extend(failed)
    return a


def _attribute(con: duckdb.DuckDBPyConnection, run: str, settings: incidents.Settings | None) -> Attribution:
    s = settings or incidents.Settings()
    info = _run_info(con, run)
    att = timeline.attempt_spans(con, run)  # the scheduler's span of each attempt where it has one
    if not att.height:
        raise KeyError(f"run {run!r} has no attempts with times")
    att, notes = timeline.disjoint_spans(att)
    gpus = int(info.get("gpus") or 0)
    if not gpus:
        gpus = int(store.frame(con, "SELECT coalesce(max(rank) + 1, 0) AS g FROM rank_steps WHERE run = ?",
                               [run]).item() or 1)
        notes.append(f"run.toml gives no gpus: {gpus} from the per-rank timings")
    # per-rank timings per step, each host's clock corrected; how far each host's clock is off the log's
    profile, offsets = timeline.rank_profile_and_offsets(con, run)
    host_clocks = timeline.host_clocks(con, run, profile, offsets)
    clocks = host_clocks.select("attempt", "host", offset_s=pl.col("corr_us") / 1e6).sort("attempt", "host")
    for r in clocks.filter(pl.col("offset_s").abs() >= CLOCK_NOTE_S).iter_rows(named=True):
        notes.append(f"host clock: {r['host']} runs {r['offset_s']:+,.1f} s off the run's log in attempt "
                     f"{r['attempt']} (measured at the step ends its ranks share with the others); its lines are "
                     "placed on the log's clock")
    slow = incidents.slow_steps(profile, s)
    inc, evidence = incidents_of(con, run, s, slow, profile, host_clocks)
    tl = ledger.timeline(_steps(con, run, profile), att)
    try:
        b: float | None = ledger.baseline_step_s(tl)
    except ledger.LedgerError:
        # no step times at all: where the scheduler's records give the attempts' spans, those and the incidents alone,
        # flagged (a run whose evidence is its nodes' and the scheduler's: `stepless`); else no ledger
        if not att["start_by"].str.starts_with("sacct").any():
            raise
        b = None
    if b is None:
        rows = stepless.rows(att, inc)
        notes.append(stepless.NOTE)
    else:
        rows, inc, evidence = _step_rows(con, run, att, tl, b, slow, inc, evidence)
    total_s = (att["end_ts"].max() - att["start_ts"].min()).total_seconds()
    try:
        ledger.check(rows, total_s)
    except ledger.LedgerError as e:  # never no answer: the best ledger there is, flagged, saying what disagreed
        rows, note = ledger.flagged(rows, total_s, e)
        notes.append(note)
    steady, source = _mfu(con, info, b, notes) if b is not None else (None, None)
    inv = _inventory(con, pl.concat([rows["own_host"], inc["host"].cast(pl.String)]), profile["slow_host"])
    rows = _place(inv, rows, inc, info, gpus)
    gpu_hours = gpus * total_s / 3600
    productive = rows.filter(pl.col("category") == "productive")["gpu_hours"].sum()
    inc = _with_cost(inc, rows, inv, info)
    return Attribution(
        run=run, gpus=gpus, cluster=info.get("cluster"), wall_hours=total_s / 3600, gpu_hours=gpu_hours,
        steady_mfu=steady, effective_mfu=None if steady is None else steady * productive / gpu_hours,
        baseline_step_s=b if b is not None else float("nan"), rows=rows, incidents=inc, evidence=evidence,
        mfu_source=source, notes=notes, clocks=clocks,
        checkpoint_advice=advice.advise(con, run, gpus, gpu_hours, _with_cluster_runs(con, run, inc, s),
                                        rows))


def _inventory(con: duckdb.DuckDBPyConnection, hosts: pl.Series, ranked: pl.Series) -> pl.DataFrame:
    """The rows of the `inventory` view (store.py) for `hosts` only. The view lists the hosts of every per-rank
    row, a scan of the whole table: here only hosts that neither the nodes, the events nor `ranked` (hosts
    known to have per-rank rows) name are looked up there, a filter its dictionaries answer."""
    hosts = hosts.drop_nulls().unique().to_list()
    known = store.frame(con, """SELECT host FROM nodes WHERE host IN (SELECT unnest($hosts))
                                UNION SELECT DISTINCT host FROM events WHERE host IN (SELECT unnest($hosts))""",
                        {"hosts": hosts})["host"].to_list()
    rest = sorted(set(hosts) - set(known) - set(ranked.drop_nulls().to_list()))
    found = store.frame(con, "SELECT DISTINCT host FROM rank_steps WHERE host IN (SELECT unnest($rest))",
                        {"rest": rest})["host"].to_list() if rest else []
    listed = sorted((set(hosts) - set(rest)) | set(found))
    return store.frame(con, """
        SELECT h.host, coalesce(n.cluster, 'unknown') AS cluster, coalesce(c.provider, 'unknown') AS provider
        FROM (SELECT unnest($listed::VARCHAR[]) AS host) h LEFT JOIN nodes n USING (host)
        LEFT JOIN clusters c ON c.cluster = n.cluster""", {"listed": listed})


def _with_cluster_runs(con: duckdb.DuckDBPyConnection, run: str, inc: pl.DataFrame,
                       s: incidents.Settings) -> pl.DataFrame:
    """This run's incidents and the attempt-end incidents of the other runs on its cluster (for advice)."""
    others = store.frame(con, """SELECT run FROM runs WHERE run <> ? AND cluster IS NOT DISTINCT FROM
                                 (SELECT cluster FROM runs WHERE run = ?)""", [run, run])["run"].to_list()
    frames = [inc.select("run", "kind", "failure_mode", "blame")]
    for other in others:  # NOTE: one root-cause pass per other run of the cluster, as the scorecard does
        # only the attempt ends count (advice.is_failure): no straggler pass over the other run's per-rank table
        ends, ev = counter_evidence.with_counter_evidence(con, *root_cause.attempt_end_incidents(con, other, s), s)
        ends = _finish_incidents(con, ends, ev)
        if ends.height:
            frames.append(ends.select("run", "kind", "failure_mode", "blame"))
    return pl.concat(frames, how="vertical_relaxed")


def incidents_of(con: duckdb.DuckDBPyConnection, run: str | None, s: incidents.Settings,
                 slow: pl.DataFrame | None = None, profile: pl.DataFrame | None = None,
                 clocks: pl.DataFrame | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """All incidents of a run (or every run) with human overrides applied, and their evidence; `profile`
    (`timeline.rank_profile` of the run, where the caller has it) spares a second read of the per-rank table."""
    ends, ev = root_cause.attempt_end_incidents(con, run, s, profile=profile, clocks=clocks)
    ends, ev = refinements.refined("the counter-evidence rule", lambda: counter_evidence.with_counter_evidence(
        con, ends, ev, s), (ends, ev))
    if slow is None:
        slow = incidents.slow_steps(incidents.step_profile(con, run), s)
    strag, strag_ev = refinements.refined("the straggler rule", lambda: straggler_evidence.stragglers(
        con, incidents.straggler_incidents(slow, s), slow), (pl.DataFrame(), pl.DataFrame()))
    ckpt, ckpt_ev = refinements.refined("the checkpoint rule", lambda: incidents.checkpoint_incidents(con, run, s),
                                        (pl.DataFrame(), pl.DataFrame()))
    inc = pl.concat([ends, strag, ckpt], how="diagonal_relaxed").sort("run", "root_ts", "incident_id")
    if ckpt_ev.height:
        ckpt_ev = ckpt_ev.with_columns(rank_in_incident=pl.int_range(pl.len()).over("incident_id") + 1,
                                       tier=pl.lit(None, pl.Int32)).select(ev.columns)
        evidence = pl.concat([ev, ckpt_ev], how="diagonal_relaxed")
    else:
        evidence = ev
    if strag_ev.height:
        evidence = pl.concat([evidence, strag_ev], how="diagonal_relaxed")
    return _finish_incidents(con, inc, evidence), evidence


def _finish_incidents(con: duckdb.DuckDBPyConnection, inc: pl.DataFrame, evidence: pl.DataFrame) -> pl.DataFrame:
    """Evidence counts, human overrides, blame and recommended action (NVIDIA's for an Xid root cause)."""
    counts = evidence.group_by("incident_id").len("evidence_count") if evidence.height else pl.DataFrame(
        schema={"incident_id": pl.String, "evidence_count": pl.UInt32})
    inc = inc.join(counts, on="incident_id", how="left").with_columns(pl.col("evidence_count").fill_null(0))
    inc = annotations.apply(con, inc)
    modes = pl.DataFrame({"failure_mode": list(taxonomy.MODES), "blame_default": [m.blame for m in
                          taxonomy.MODES.values()], "action": [m.action for m in taxonomy.MODES.values()]})
    inc = inc.join(modes, on="failure_mode", how="left").with_columns(
        blame=pl.coalesce("blame", "blame_default")).drop("blame_default")
    xid_action = evidence.filter(pl.col("rank_in_incident") == 1, pl.col("xid").is_not_null())
    if xid_action.height:  # NVIDIA's guidance for the Xid beats the mode's generic advice
        xa = xid_action.select("incident_id", xid_act=pl.col("xid").map_elements(
            lambda c: taxonomy.xid(int(c)).action, return_dtype=pl.String))
        inc = inc.join(xa, on="incident_id", how="left").with_columns(
            action=pl.coalesce("xid_act", "action")).drop("xid_act")
    return inc


def _stall_roots(con: duckdb.DuckDBPyConnection, run: str, inc: pl.DataFrame) -> pl.DataFrame:
    """Per attempt that ended badly, when it stopped stepping (`attempt, root_ts`): its root event, or, where the
    collective watchdogs fired, when their ranks began to wait (the timeout's time less how long the collective
    ran, the median over the lines), whichever came first.

    NOTE: a node that dies without a word is dated by the scheduler minutes later ("not responding"), so the
    whole steps a log printed every N steps ran after its last record and before the death (`with_unlogged_steps`)
    were booked as hang; the others' watchdogs say to the second when the job stopped, and so, before them, do
    the network errors its peers raise about it (a stamped one after the last step record is later than the death
    by the transport's timeout, `transport_lag`)."""
    ends = inc.filter(pl.col("kind") == "attempt_end").select(pl.col("attempt").cast(pl.Int32), "root_ts")
    lost = inc.filter(pl.col("kind") == "attempt_end", pl.col("failure_mode") == "node_failure")["attempt"]
    # NOTE: a watchdog line without its own stamp (torch 2.1's "[E ProcessGroupNCCL.cpp:475] ...") lies between
    # its stamped neighbours, the lower one maybe the last step record ten minutes before it was printed: dated by
    # that, the wait it reports began a whole timeout before the job stopped, and the steps that ran up to the
    # fault became hang. Only the latest it can have been printed (its upper bound) says no more than it knows.
    waits = store.frame(con, """
        SELECT attempt::INTEGER AS attempt, median(CASE WHEN dated IS NULL THEN ts ELSE ts_hi END
               - to_milliseconds(TRY_CAST(json_extract_string(detail, '$.ran_for_ms') AS BIGINT))) AS root_ts
        FROM events WHERE run = $run AND kind = 'watchdog_timeout' AND attempt IS NOT NULL
          AND TRY_CAST(json_extract_string(detail, '$.ran_for_ms') AS BIGINT) IS NOT NULL
          AND (dated IS NULL OR ts_hi IS NOT NULL)
        GROUP BY ALL
        UNION ALL
        SELECT e.attempt::INTEGER, min(e.ts) - to_microseconds(CAST($lag * 1e6 AS BIGINT)) FROM events e
        WHERE e.run = $run AND list_contains($lost, e.attempt) AND e.failure_mode = 'network' AND e.dated IS NULL
          AND e.ts > (SELECT max(s.ts) FROM steps s WHERE s.run = $run AND s.attempt = e.attempt)
        GROUP BY ALL""", {"run": run, "lost": [int(x) for x in lost.to_list()],
                            "lag": transport_lag.run_lag_s(con, run)})
    if not waits.height or not ends.height:
        return ends
    waits = waits.filter(pl.col("attempt").is_in(ends["attempt"].to_list())).with_columns(
        pl.col("root_ts").cast(ends.schema["root_ts"]))
    return pl.concat([ends, waits]).group_by("attempt").agg(pl.col("root_ts").min())


def _latest_roots(con: duckdb.DuckDBPyConnection, inc: pl.DataFrame, evidence: pl.DataFrame) -> pl.DataFrame:
    """Per attempt that ended badly, the latest its root event can have been (`attempt, root_ts`): a root line
    without its own stamp (a traceback, an undated step line the root was read off) is dated by its interval's
    lower bound, the stamped line before it, maybe minutes before the fault, and the steps the job ran inside that
    interval must not become hang on that date alone."""
    ends = inc.filter(pl.col("kind") == "attempt_end").select("incident_id", "run", "attempt", "root_ts")
    lines = (evidence.join(ends, on="incident_id").filter(pl.col("ts") == pl.col("root_ts"))
             .select("incident_id", "file", "line").unique() if evidence.height
             else pl.DataFrame(schema={"incident_id": pl.String, "file": pl.String, "line": pl.Int64}))
    hi = store.frame(con, """
        SELECT incident_id, max(ts_hi) AS root_hi FROM (
            SELECT l.incident_id, e.ts_hi FROM lines l JOIN ingested_files f ON f.path = l.file
            JOIN events e ON e.file_id = f.file_id AND e.line = l.line
            UNION ALL
            SELECT i.incident_id, s.ts_hi FROM ends i
            JOIN steps s ON s.run = i.run AND s.attempt = i.attempt AND s.ts = i.root_ts
            -- NOTE: only a row the step clock could not date sits at its interval's lower bound: one it dated
            -- (its printed step time) is where it ended, and a root read off it (a divergence's onset, the
            -- start of the spike's step) is no earlier than it seems; its later stamp may be minutes after
            WHERE s.step_s IS NULL)
        WHERE ts_hi IS NOT NULL GROUP BY incident_id""", lines=lines, ends=ends)
    if not hi.height:
        return ends.select("attempt", "root_ts")
    return ends.join(hi.with_columns(pl.col("root_hi").cast(ends.schema["root_ts"])), on="incident_id",
                     how="left").select("attempt", root_ts=pl.max_horizontal("root_ts", "root_hi"))


def _slowdowns(con: duckdb.DuckDBPyConnection, run: str, wide: pl.DataFrame, baseline_s: float
               ) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Slowed stretches with concurrent evidence on a run host: per step its incident; the incidents; evidence.

    A stretch is consecutive step records each slowed by more than SLOWDOWN_MIN of the baseline with no
    other explanation; its root cause is the first SLOWDOWN_CAUSES line from SLOWDOWN_LEAD_S before it to
    SLOWDOWN_ONSET_S into it, on one of the hosts the run's attempts used (the most severe, then the earliest).
    """
    per_step = pl.DataFrame(schema={"attempt": pl.Int32, "step": pl.Int64, "slow_id": pl.String})
    none = (per_step, pl.DataFrame(), pl.DataFrame())
    # NOTE: a stretch is consecutive step RECORDS, not step numbers: a log that prints every tenth step (torchtitan,
    # Megatron's log interval) has records 10 steps apart, each of which would be a stretch of its own. A record a
    # save explains (its excess is the checkpoint's) neither slows nor ends a stretch: only a record at pace does
    is_slow = pl.col("slowdown") > SLOWDOWN_MIN * baseline_s * pl.col("n")
    at_pace = ~is_slow & ~(pl.col("checkpoint") > 0)
    slowed = (wide.filter(pl.col("step").is_not_null()).sort("attempt", "step")
              .with_columns(stretch=at_pace.cast(pl.Int64).cum_sum().over("attempt"))
              .filter(is_slow).select(pl.col("attempt").cast(pl.Int32), "step", "start", "end", "stretch"))
    if not slowed.height:
        return none
    # (a hardware error the hardware coped with explains no slowdown: incidents.COPED)
    events = store.frame(con, f"""
        SELECT e.ts, e.host, e.source, e.kind, e.failure_mode, e.xid, e.rank, f.path AS file, e.line, e.text,
               CASE e.severity WHEN 'critical' THEN 0 WHEN 'error' THEN 1 ELSE 2 END AS severity_rank
        FROM events e JOIN ingested_files f USING (file_id)
        WHERE e.failure_mode IN (SELECT unnest($modes)) AND e.ts IS NOT NULL AND NOT ({incidents.COPED})
          AND e.host IN (SELECT DISTINCT unnest(hosts) FROM attempts WHERE run = $run)
          -- a line without a stamp of its own lies anywhere between its stamped neighbours: one whose interval is
          -- wider than the onset window cannot be placed at a slowdown's onset (an NCCL WARN printed as a job
          -- died, dated only by the save line minutes above it)
          AND (e.ts_hi IS NULL OR e.ts_hi <= e.ts + to_seconds($onset))
        ORDER BY e.ts, e.line""", {"modes": list(SLOWDOWN_CAUSES), "run": run, "onset": SLOWDOWN_ONSET_S})
    events = telemetry_incidents.with_slowdown_causes(con, run, events)  # throttling GPUs, saturated services
    if not events.height:
        return none
    stretches = slowed.group_by("attempt", "stretch").agg(
        lo=pl.col("start").min(), hi=pl.col("end").max(), first_step=pl.col("step").min(),
        last_step=pl.col("step").max())
    lead, onset = dt.timedelta(seconds=SLOWDOWN_LEAD_S), dt.timedelta(seconds=SLOWDOWN_ONSET_S)
    # NOTE: an episode (telemetry: a GPU braked for hours, `end_ts`) that began before the stretch and still ran at its
    # onset explains it too: a GPU slowed since before the attempt's first step has no onset inside the stretch
    if "end_ts" not in events.columns:
        events = events.with_columns(end_ts=pl.lit(None, pl.Datetime("us")))
    spans = pl.col("end_ts").is_not_null() & (pl.col("ts") <= pl.col("lo")) & (pl.col("end_ts") >= pl.col("lo"))
    ev = (stretches.join_where(events, (pl.col("ts") >= pl.col("lo") - lead) | spans,
                               (pl.col("ts") <= pl.min_horizontal(pl.col("hi"), pl.col("lo") + onset)) | spans)
          .with_columns(incident_id=pl.format("{}:{}:slowdown:{}", pl.lit(run), "attempt", "first_step"))
          # NOTE: an error outranks a warning at the onset (a non-fatal IB event is no reason for a stall
          # that a filesystem's lost connection explains), then the earliest line
          .sort("incident_id", "severity_rank", "ts", "line"))
    if not ev.height:
        return none
    first = ev.group_by("incident_id", maintain_order=True).first()
    inc = first.select(
        "incident_id", run=pl.lit(run), attempt="attempt", kind=pl.lit("slowdown"), root_ts="ts", exit_ts="hi",
        failure_mode="failure_mode", host="host", tier=pl.lit(None, pl.Int32), first_step="first_step",
        last_step="last_step")
    evidence = ev.with_columns(rank_in_incident=pl.int_range(pl.len()).over("incident_id") + 1,
                               tier=pl.lit(None, pl.Int32)).select(
        "incident_id", "rank_in_incident", "ts", "host", "source", "kind", "failure_mode", "xid", "rank", "file",
        "line", "text", "tier")
    steps = slowed.join(first.select("attempt", "stretch", slow_id="incident_id"), on=["attempt", "stretch"])
    return steps.select(list(per_step.columns)), inc, evidence


def _part(frame: pl.DataFrame, category: str, seconds: str, incident: pl.Expr, host: pl.Expr | None = None,
          start: str = "start", end: str = "end") -> pl.DataFrame:
    return frame.select(category=pl.lit(category), attempt="attempt", start_ts=start, end_ts=end,
                        seconds=pl.col(seconds).cast(pl.Float64), incident_id=incident.cast(pl.String),
                        own_host=(host if host is not None else pl.lit(None)).cast(pl.String))


# slowdown causes that slow one host's GPU, so the others wait for it (a straggler), not the whole job's pace
_ONE_HOST_SLOWDOWNS = ("gpu_throttle",)


def _tie(wide: pl.DataFrame, tails: pl.DataFrame, slow: pl.DataFrame, inc: pl.DataFrame,
         att: pl.DataFrame, slowdowns: pl.DataFrame) -> pl.DataFrame:
    """Ledger rows: each category's seconds tied to the incident that caused them."""
    ends = inc.filter(pl.col("kind") == "attempt_end").select("attempt", end_id="incident_id")
    stalls = inc.filter(pl.col("kind") == "checkpoint_stall").select("attempt", save_step="first_step",
                                                                      stall_id="incident_id")
    lost = inc.filter(pl.col("kind") == "checkpoint_lost")
    # A slowed stretch whose cause is one GPU's throttled clock (telemetry) is that host's straggling: every rank
    # waited for one (the per-rank records that would show it as a straggler may be missing)
    one_host = inc.filter(pl.col("kind") == "slowdown", pl.col("failure_mode").is_in(_ONE_HOST_SLOWDOWNS)).select(
        slow_id="incident_id", slow_own_host="host")
    w = (wide.join(ends, on="attempt", how="left").join(stalls, on=["attempt", "save_step"], how="left")
         .join(slow.select("attempt", "step", "strag_id"), on=["attempt", "step"], how="left")
         .join(slowdowns, on=["attempt", "step"], how="left").join(one_host, on="slow_id", how="left")
         .with_columns(straggler=pl.col("straggler") + pl.when(pl.col("slow_own_host").is_not_null())
                       .then(pl.col("slowdown")).otherwise(0.0),
                       slowdown=pl.when(pl.col("slow_own_host").is_null()).then(pl.col("slowdown")).otherwise(0.0),
                       strag_id=pl.coalesce("strag_id", pl.when(pl.col("slow_own_host").is_not_null())
                                            .then(pl.col("slow_id"))),
                       slow_host=pl.coalesce("slow_host", "slow_own_host")))
    w = ledger.thrown_is_recompute(w)
    if lost.height:  # the work between the resumed step and the lost save is the lost save's fault
        pairs = w.select("attempt", "step").join_where(
            lost.select(lost_attempt="attempt", lo="first_step", hi="last_step", lost_id="incident_id"),
            pl.col("attempt") < pl.col("lost_attempt"), pl.col("step") >= pl.col("lo"), pl.col("step") <= pl.col("hi"))
        w = w.join(pairs.select("attempt", "step", "lost_id").unique(["attempt", "step"]), on=["attempt", "step"],
                   how="left")
    else:
        w = w.with_columns(lost_id=pl.lit(None, pl.String))
    none = pl.lit(None, pl.String)
    t = tails.join(ends, on="attempt", how="left").join(
        stalls.rename({"save_step": "tail_save_step", "stall_id": "tail_stall_id"}), on=["attempt", "tail_save_step"],
        how="left").with_columns(prev_end_id=pl.col("end_id").shift(1))
    parts = [
        _part(w, "productive", "productive", none),
        _part(w, "checkpoint", "checkpoint", pl.col("stall_id")),
        _part(w, "data_stall", "data_stall", none),
        _part(w, "straggler", "straggler", pl.col("strag_id"), pl.col("slow_host")),
        _part(w, "slowdown", "slowdown", pl.col("slow_id")),
        _part(w, "recompute", "recompute", pl.coalesce("lost_id", "end_id")),
        _part(t, "startup", "startup", pl.col("prev_end_id"), start="start_ts", end="first_start"),
        _part(t, "checkpoint", "tail_checkpoint", pl.col("tail_stall_id"), start="last_end", end="end_ts"),
        _part(t, "recompute", "partial", pl.col("end_id"), start="last_end", end="hang_start"),
        _part(t, "hang", "hang", pl.col("end_id"), start="hang_start", end="end_ts"),
        _part(t, "restart", "restart", pl.col("end_id"), start="end_ts", end="next_start"),
    ]
    rows = pl.concat(parts, how="vertical_relaxed").filter(pl.col("seconds") != 0)
    return (rows.group_by("category", "attempt", "incident_id", "own_host")
            .agg(pl.col("seconds").sum(), pl.col("start_ts").min(), pl.col("end_ts").max())
            .sort("attempt", "start_ts", "category"))


def _place(inv: pl.DataFrame, rows: pl.DataFrame, inc: pl.DataFrame, info: dict,
           gpus: int) -> pl.DataFrame:
    """Give every ledger row its failure mode, host, cluster, provider, GPU-hours and dollars."""
    placed = (rows.join(inc.select("incident_id", "failure_mode", inc_host="host"), on="incident_id", how="left")
              .with_columns(host=pl.coalesce("own_host", "inc_host"))
              .join(inv, on="host", how="left"))
    price = info.get("usd_per_gpu_hour")
    return placed.with_columns(
        cluster=pl.coalesce("cluster", pl.lit(info.get("cluster"), pl.String)).fill_null(NONE),
        provider=pl.coalesce("provider", pl.lit(info.get("provider"), pl.String)).fill_null(NONE),
        gpu_hours=pl.col("seconds") * gpus / 3600,
    ).with_columns(
        # the run pays its own provider's price, whichever host wasted the time
        usd=pl.col("gpu_hours") * (price or 0.0),
        incident_id=pl.col("incident_id").fill_null(NONE), failure_mode=pl.col("failure_mode").fill_null(NONE),
        host=pl.col("host").fill_null(NONE),
    ).select("category", "attempt", "start_ts", "end_ts", "seconds", "gpu_hours", "usd", "incident_id",
             "failure_mode", "host", "cluster", "provider")


def _with_cost(inc: pl.DataFrame, rows: pl.DataFrame, inv: pl.DataFrame, info: dict) -> pl.DataFrame:
    """Incidents with cluster, provider and the GPU-hours the ledger pins on each."""
    cost = (rows.filter(pl.col("category") != "productive").group_by("incident_id")
            .agg(gpu_hours_lost=pl.col("gpu_hours").sum(), usd_lost=pl.col("usd").sum()))
    out = inc.join(inv, on="host", how="left").join(cost, on="incident_id", how="left")
    return out.with_columns(
        cluster=pl.coalesce("cluster", pl.lit(info.get("cluster"), pl.String)).fill_null(NONE),
        provider=pl.coalesce("provider", pl.lit(info.get("provider"), pl.String)).fill_null(NONE),
        gpu_hours_lost=pl.col("gpu_hours_lost").fill_null(0.0), usd_lost=pl.col("usd_lost").fill_null(0.0))

"""What a watch detects on each tick, as events: hang, failure, straggler or slowdown, node-side evidence."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import duckdb
import polars as pl

from clusterlab import store
from clusterlab.account import attribution
from clusterlab.diagnose import incidents
from clusterlab.watch.state import LiveState

# Kernel lines that mean a job host's GPU, memory or fabric is in trouble (the kernel collector's kinds).
NODE_KINDS = ("xid", "sxid", "gpu_fell_off_bus", "link_down", "port_module_error", "row_remap_pending",
              "edac_uncorrected", "memory_failure", "pcie_aer", "pcie_bus_error", "pcie_recovery_failed")
EVIDENCE_SHOWN = 5  # evidence lines an event carries


@dataclass(frozen=True)
class WatchSettings:
    """When a watch calls something a hang or a slowdown."""

    hang_steps: float = 10.0  # no progress for this many baseline steps ...
    hang_min_s: float = 120.0  # ... and at least this long is a hang
    slowdown_ratio: float = 1.5  # the recent step time this many times the baseline is a slowdown ...
    slowdown_min_intervals: int = 10  # ... once the baseline has this many step intervals
    node_lead_s: float = 600.0  # node-side evidence this long before the attempt's first step still counts
    incidents: incidents.Settings = field(default_factory=incidents.Settings)

    def hang_after_s(self, baseline_step_s: float | None) -> float:
        """Seconds without progress that make a hang: max(k x baseline step, T)."""
        return max(self.hang_steps * (baseline_step_s or 0.0), self.hang_min_s)


def event(kind: str, key: str, st: LiveState, message: str, *, host: str | None = None,
          hosts: list[str] | None = None, failure_mode: str | None = None, incident_id: str | None = None,
          evidence_ts: dt.datetime | None = None, evidence: list[dict] | None = None, **extra) -> dict:
    """One detection: what a terminal line, the events file, the alert program and `watch_events` carry."""
    return {"key": key, "kind": kind, "run": st.run, "attempt": st.attempt, "host": host,
            "hosts": hosts or ([host] if host else []), "failure_mode": failure_mode, "incident_id": incident_id,
            "evidence_ts": evidence_ts, "message": message, "evidence": evidence or [], **extra}


def hang(st: LiveState, now: dt.datetime, s: WatchSettings, con: duckdb.DuckDBPyConnection) -> list[dict]:
    """No progress for max(k x baseline, T): the ranks and hosts whose records stopped first, and their last."""
    if st.last_step is None or st.progress_seen_at is None:
        return []
    idle_s = (now - st.progress_seen_at).total_seconds()
    limit_s = s.hang_after_s(st.baseline_step_s)
    if idle_s < limit_s:
        return []
    first = stopped_first(st.ranks, s.incidents.skew_s)
    together = bool(first.height) and first.height == st.ranks.height and st.ranks.height > 1
    if together:  # their last finished steps agree: the step the others began and stall in may tell them apart
        silent = never_began(con, st)
        if silent.height:
            first, together = silent, False
    hosts = sorted({h for h in first["host"].to_list() if h}) if first.height else []
    # NOTE: a GPU's Xid is often logged a little before the step records stop (the step in flight completes)
    lead = dt.timedelta(seconds=max(60.0, 2 * (st.baseline_step_s or 0.0)))
    suspects = node_evidence(con, st, s, since=st.last_step_ts - lead if st.last_step_ts else None)
    evidence = [{"rank": r["rank"], "host": r["host"], "step": r["last_step"], "ts": r["last_ts"], "file": r["file"],
                 "line": r["line"], "text": f"last step record of rank {r['rank']}: step {r['last_step']}"}
                for r in first.head(EVIDENCE_SHOWN).iter_rows(named=True)]
    evidence += [{k: e[k] for k in ("host", "ts", "file", "line", "text")} for e in suspects[:EVIDENCE_SHOWN]]
    # NOTE: ranks that stopped together in a collective do not say which one hung, unless they share one host
    blamed = sorted({e["host"] for e in suspects}) or ([] if together and len(hosts) > 1 else hosts)
    behind = (f"rank {', '.join(str(r) for r in first['rank'].to_list())} "
              if first.height and not together and first.height < st.ranks.height else "")
    who = (f"{behind}on {', '.join(blamed)}" + (f" (all {st.ranks.height} ranks stopped together)" if together else "")
           if blamed else
           f"all {st.ranks.height} ranks stopped together at step {st.last_step}" if together else "")
    msg = f"no progress for {idle_s:.0f} s (limit {limit_s:.0f} s) after step {st.last_step}; {who}".rstrip("; ")
    return [event("hang", f"{st.run}:{st.attempt}:hang:{st.last_step}", st, msg, host=blamed[0] if blamed else None,
                  hosts=blamed or hosts, failure_mode="hang", evidence_ts=st.last_step_ts, evidence=evidence,
                  ranks=first["rank"].to_list() if first.height else [], idle_s=idle_s, limit_s=limit_s,
                  stopped_together=together)]


def never_began(con: duckdb.DuckDBPyConnection, st: LiveState) -> pl.DataFrame:
    """The ranks (rows of `st.ranks`) that never began the step the other ranks stall in, from the recorder's
    stall records (`step_stalled` events; `diagnose.stopped_first` reads them the same way after the fact); empty
    where none stall, all do, or the silent ranks outnumber the waiting ones."""
    stalled = store.frame(con, """
        SELECT rank, max(TRY_CAST(json_extract_string(detail, '$.step') AS BIGINT)) AS stalled_step FROM events
        WHERE run = $run AND attempt IS NOT DISTINCT FROM $attempt AND kind = 'step_stalled' AND rank IS NOT NULL
        GROUP BY rank""", {"run": st.run, "attempt": st.attempt})
    if not stalled.height or not st.ranks.height:
        return st.ranks.clear()
    r = st.ranks.join(stalled.with_columns(pl.col("rank").cast(st.ranks.schema["rank"])), on="rank", how="left")
    waiting = (pl.col("stalled_step") > pl.col("last_step")).fill_null(False)
    silent = r.filter(~waiting)
    if not silent.height or silent.height > r.height - silent.height:
        return st.ranks.clear()
    return silent.drop("stalled_step").sort("rank")


def stopped_first(ranks: pl.DataFrame, skew_s: float) -> pl.DataFrame:
    """The ranks behind the others: the lowest last step, and of those the ones whose last record is oldest
    (by more than the hosts' clock skew)."""
    if not ranks.height:
        return ranks
    low = ranks.filter(pl.col("last_step") == pl.col("last_step").min())
    oldest = low["last_ts"].min()
    return low.filter(pl.col("last_ts") <= oldest + dt.timedelta(seconds=skew_s)).sort("rank")


def failures_and_stragglers(con: duckdb.DuckDBPyConnection, st: LiveState, s: WatchSettings) -> list[dict]:
    """The run's incidents from the existing root-cause analysis: each one an event as soon as it appears."""
    inc, ev = attribution.incidents_of(con, st.run, s.incidents)
    if not inc.height:
        return []
    first = ev.filter(pl.col("rank_in_incident") <= EVIDENCE_SHOWN) if ev.height else ev
    out = []
    for r in inc.iter_rows(named=True):
        lines = [{k: e[k] for k in ("host", "ts", "file", "line", "text")}
                 for e in first.filter(pl.col("incident_id") == r["incident_id"]).iter_rows(named=True)]
        kind = "straggler" if r["kind"] == "straggler" else "failure"
        # NOTE: torchrun --standalone names its host `localhost`, which names no host: an attempt whose ranks all
        # ran on one host failed on that host
        if not r.get("host") and kind == "failure" and r.get("attempt") == st.attempt and len(st.hosts) == 1:
            r["host"] = st.hosts[0]
        where = f" on {r['host']}" if r.get("host") else ""
        steps = f" from step {r['first_step']}" if kind == "straggler" and r.get("first_step") is not None else ""
        msg = f"{r['failure_mode']}{where}{steps}" + (f" ({r['action']})" if r.get("action") else "")
        out.append(event(kind, r["incident_id"], st, msg, host=r.get("host"), failure_mode=r["failure_mode"],
                         incident_id=r["incident_id"], evidence_ts=r.get("root_ts"), evidence=lines,
                         attempt_of_incident=r.get("attempt"), blame=r.get("blame"), action=r.get("action")))
    return out


def slowdown(con: duckdb.DuckDBPyConnection, st: LiveState, s: WatchSettings) -> list[dict]:
    """The recent step time well above the baseline: once per stretch, with the host slowest meanwhile."""
    slow = (st.baseline_step_s is not None and st.recent_step_s is not None
            and st.intervals >= s.slowdown_min_intervals and st.recent_step_s > s.slowdown_ratio * st.baseline_step_s)
    if not slow:
        st.slow_since_step = None
        return []
    if st.slow_since_step is None:
        st.slow_since_step = st.last_step
    host = store.frame(con, """
        SELECT host, count(*) AS n FROM (
            SELECT step, arg_max(host, coalesce(compute_s, step_s)) AS host FROM rank_steps
            WHERE run = $run AND attempt IS NOT DISTINCT FROM $attempt AND step > $since - $recent
            GROUP BY step) WHERE host IS NOT NULL GROUP BY host ORDER BY n DESC, host LIMIT 1""",
        {"run": st.run, "attempt": st.attempt, "since": st.last_step, "recent": 5})
    h = host["host"][0] if host.height else None
    msg = (f"step time {st.recent_step_s:.3g} s against a baseline of {st.baseline_step_s:.3g} s "
           f"({st.recent_step_s / st.baseline_step_s:.1f}x)" + (f"; slowest host {h}" if h else ""))
    return [event("slowdown", f"{st.run}:{st.attempt}:slowdown:{st.slow_since_step}", st, msg, host=h,
                  failure_mode="straggler", evidence_ts=st.last_step_ts, ratio=st.recent_step_s / st.baseline_step_s)]


def node_evidence(con: duckdb.DuckDBPyConnection, st: LiveState, s: WatchSettings,
                  since: dt.datetime | None = None) -> list[dict]:
    """Kernel evidence of GPU, memory or link trouble on one of the job's hosts (from the attempt's start)."""
    if not st.hosts:
        return []
    return store.frame(con, f"""
        WITH start AS (SELECT min(ts) AS ts FROM (
                SELECT ts FROM rank_steps WHERE run = $run AND attempt IS NOT DISTINCT FROM $attempt
                UNION ALL SELECT ts FROM steps WHERE run = $run AND attempt IS NOT DISTINCT FROM $attempt))
        SELECT DISTINCT ON (f.path, e.line) e.host, e.ts, e.kind, e.failure_mode, e.xid, e.severity,
               f.path AS file, e.line, e.text
        FROM events e JOIN ingested_files f USING (file_id)
        WHERE e.host IN (SELECT unnest($hosts)) AND e.kind IN ({", ".join(f"'{k}'" for k in NODE_KINDS)})
          AND (e.severity IN ('error', 'critical') OR e.kind IN ('xid', 'row_remap_pending'))
          AND e.ts >= coalesce($since, (SELECT ts FROM start) - to_seconds($lead), e.ts)
        ORDER BY f.path, e.line, e.xid NULLS LAST""",
        {"run": st.run, "attempt": st.attempt, "hosts": st.hosts, "since": since, "lead": s.node_lead_s}).to_dicts()


def node_events(con: duckdb.DuckDBPyConnection, st: LiveState, s: WatchSettings) -> list[dict]:
    """One event per node-side line (Xid, link down, ECC, ...) on a host of the job."""
    out = []
    for e in sorted(node_evidence(con, st, s), key=lambda e: (e["ts"], e["file"], e["line"])):
        what = f"Xid {e['xid']}" if e["xid"] is not None else e["kind"]
        key = f"{st.run}:node:{e['host']}:{e['file']}:{e['line']}"
        out.append(event("node", key, st, f"{what} ({e['failure_mode'] or 'no failure mode'}) on {e['host']}",
                         host=e["host"], failure_mode=e["failure_mode"], evidence_ts=e["ts"],
                         evidence=[{k: e[k] for k in ("host", "ts", "file", "line", "text")}], xid=e["xid"]))
    return out


def detect(con: duckdb.DuckDBPyConnection, st: LiveState, now: dt.datetime, s: WatchSettings,
           fresh: bool = True) -> list[dict]:
    """Everything detectable now (already-known keys included: the caller keeps only new ones).

    `fresh`: the store gained rows since the last tick. Without new rows only a hang can appear, and the
    root-cause pass (the costly part of a tick) is skipped: a hung job's ticks stay short.
    """
    if not fresh:
        return hang(st, now, s, con)
    return [*hang(st, now, s, con), *failures_and_stragglers(con, st, s), *slowdown(con, st, s),
            *node_events(con, st, s)]

"""An incident report a provider's support engineer can act on: what, where, when, evidence, cost, action."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import duckdb
import polars as pl

from clusterlab import store, taxonomy
from clusterlab.account import attribution
from clusterlab.account.ledger import LedgerError
from clusterlab.diagnose import incidents
from clusterlab.reports import fleet, fmt, recommend
from clusterlab.reports.scorecard import records

EVIDENCE_COLUMNS = ["ts", "host", "source", "kind", "xid", "rank", "file", "line", "text"]
_NODE_STATES = ("slurm_node_drain", "slurm_node_down", "slurm_node_resume", "slurm_node_reason", "slurm_node_reboot")


@dataclass
class IncidentReport:
    """Everything the exported report shows about one incident, as data."""

    incident_id: str
    incident: dict  # the incident's row, as `Lab.incidents` gives it
    summary: str  # one line: what, where, when, how much
    what: str  # the failure in words (the Xid's meaning where there is one)
    timeline: pl.DataFrame  # ts, after_s, event, host, detail, file, line
    root_evidence: pl.DataFrame  # the lines that show the cause: ts, host, source, kind, xid, rank, file, line, text
    symptoms: pl.DataFrame  # what other hosts and ranks printed, one row per (host, source, kind)
    ledger: pl.DataFrame  # the GPU-time this incident cost, by category and attempt: seconds lost, span_s
    gpu_hours_lost: float | None
    usd_lost: float | None
    usd_per_gpu_hour: float | None
    action: str  # what to do, as the taxonomy words it ("drain node")
    guidance: list[str]  # why, and what the relaunch did about it: each fact once, the action not repeated
    relaunch: dict | None  # the next attempt: when, on which hosts, from which checkpoint
    relaunch_note: str | None  # where `relaunch` is None, why: no later attempt, or the incident did not end one
    recorded_relaunches: pl.DataFrame  # rows a relaunch audit table holds for this incident, if any
    provider_support: str | None
    notes: list[str] = field(default_factory=list)
    confidence: float | None = None  # of the root cause (0-1), for an attempt's end
    rejected: pl.DataFrame = field(default_factory=pl.DataFrame)  # candidates the attribution turned down, why

    @property
    def action_line(self) -> str:
        """The recommended action and where: 'drain node: east-003'."""
        host = self.incident.get("host")
        if self.action == "none":
            return "no action on a node"
        return f"{self.action}: {host}" if host else self.action

    def to_dict(self) -> dict:
        """The JSON document of `clusterlab report --json`."""
        doc = {k: getattr(self, k) for k in ("incident_id", "summary", "what", "gpu_hours_lost", "usd_lost",
                                             "usd_per_gpu_hour", "action", "guidance", "provider_support",
                                             "notes", "confidence", "relaunch_note")}
        doc["incident"] = records(pl.DataFrame([self.incident]))[0]
        for name in ("timeline", "root_evidence", "symptoms", "ledger", "recorded_relaunches", "rejected"):
            doc[name] = records(getattr(self, name))
        doc["relaunch"] = records(pl.DataFrame([self.relaunch]))[0] if self.relaunch else None
        return doc


def _sources(con: duckdb.DuckDBPyConnection, run: str, s: incidents.Settings, a: attribution.Attribution | None
             ) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame | None, list[str], attribution.Attribution | None]:
    """The run's incidents, evidence and ledger rows from the attribution API (no ledger: none), and the
    attribution itself."""
    try:
        a = a or attribution.attribute(con, run, s)
        return a.incidents, a.evidence, a.rows, [], a
    except (LedgerError, KeyError) as e:
        inc, ev = attribution.incidents_of(con, run, s)
        note = f"no GPU-time ledger for {run} ({e.args[0] if e.args else e}): the cost is unknown"
        return fleet.place(con, inc), ev, None, [note], None


def _split(ev: pl.DataFrame, host: str | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Root-cause lines (the top tier, and the guilty host's own non-symptom lines) and the symptoms."""
    top = ev["tier"].max() if ev.height else None
    root = pl.col("tier").is_null() | (pl.col("tier") == top) if top is not None else pl.col("tier").is_null()
    if host is not None:
        root = root | ((pl.col("host") == host) & (pl.col("tier") > incidents.SYMPTOM_TIER))
    ev = ev.with_columns(is_root=root.fill_null(False)).sort("ts", "file", "line")
    # the line the attribution ranked first leads; the rest of the cause follows in time order
    roots = ev.filter(pl.col("is_root")).sort(pl.col("rank_in_incident") != 1, maintain_order=True).select(
        EVIDENCE_COLUMNS)
    rest = ev.filter(~pl.col("is_root"))
    symptoms = rest.group_by("host", "source", "kind", maintain_order=True).agg(
        lines=pl.len(), first_ts=pl.col("ts").min(), last_ts=pl.col("ts").max(),
        file=pl.col("file").first(), line=pl.col("line").first(), text=pl.col("text").first())
    return roots, symptoms.sort("first_ts", "host", nulls_last=True)


def _next_attempt(con: duckdb.DuckDBPyConnection, inc: dict) -> dict | None:
    """The attempt that followed this one: when it started, on which hosts, from which checkpoint."""
    att = store.frame(con, """
        SELECT a.attempt, a.start_ts, a.first_step_ts, a.first_step, a.hosts,
               (SELECT hosts FROM attempts p WHERE p.run = a.run AND p.attempt = ?) AS old_hosts,
               (SELECT min(step) FROM checkpoints c WHERE c.run = a.run AND c.attempt = a.attempt
                  AND c.action = 'load') AS resumed_from_step,
               (SELECT min(ts) FROM checkpoints c WHERE c.run = a.run AND c.attempt = a.attempt
                  AND c.action = 'load') AS load_ts
        FROM attempts a WHERE a.run = ? AND a.attempt > ? ORDER BY a.attempt LIMIT 1""",
                     [inc["attempt"], inc["run"], inc["attempt"]])
    if not att.height:
        return None
    r = att.row(0, named=True)
    old, new = set(r.pop("old_hosts") or []), set(r["hosts"] or [])
    exit_ts = inc.get("exit_ts")
    return {**r, "hosts": sorted(new), "excluded_hosts": sorted(old - new), "added_hosts": sorted(new - old),
            "guilty_host_excluded": None if inc.get("host") is None else inc["host"] not in new,
            "downtime_s": (r["first_step_ts"] - exit_ts).total_seconds() if r["first_step_ts"] and exit_ts else None}


def _recorded_relaunches(con: duckdb.DuckDBPyConnection, incident_id: str) -> pl.DataFrame:
    """What a relaunch audit table (any table named relaunch* with an incident_id) recorded for this incident."""
    tables = store.frame(con, """SELECT table_name FROM information_schema.columns
                                 WHERE column_name = 'incident_id' AND table_name LIKE 'relaunch%'""")
    frames = [store.frame(con, f'SELECT * FROM "{t}" WHERE incident_id = ?', [incident_id])
              for t in tables["table_name"].to_list()]
    frames = [f for f in frames if f.height]
    return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()


def _node_actions(con: duckdb.DuckDBPyConnection, host: str | None, since: dt.datetime,
                  until: dt.datetime) -> pl.DataFrame:
    """Scheduler state changes of the guilty host between the root cause and the restart's first step."""
    if host is None:
        return pl.DataFrame()
    return store.frame(con, f"""
        SELECT e.ts, e.host, e.kind, e.text, f.path AS file, e.line FROM events e
        JOIN ingested_files f USING (file_id)
        WHERE e.host = ? AND e.kind IN {_NODE_STATES} AND e.ts BETWEEN ? AND ? ORDER BY e.ts, e.line""",
                       [host, since, until])


# What a ledger segment of the incident means on its timeline (restart and startup: the attempts say it).
_SEGMENTS = {"recompute": "last kept work; what follows is thrown away (recompute)",
             "hang": "the root event: the job hangs until it exits", "checkpoint": "stalled save begins",
             "straggler": "slow steps begin", "slowdown": "slow steps begin", "data_stall": "data stall begins"}


def _step(ts, event: str, host=None, detail=None, file=None, line=None) -> dict:
    return {"ts": ts, "event": event, "host": host, "detail": detail, "file": file, "line": line}


def _segment_detail(r: dict) -> str:
    """A ledger row in words: the time lost, and the span it was lost in where that is longer (a straggler
    loses seconds over minutes of slow steps)."""
    lost, span = r["seconds"], r["span_s"]
    if span is not None and span - lost > max(1.0, 0.01 * span):
        return f"{r['category']}: {fmt.duration(lost)} lost in the {fmt.duration(span)} until {fmt.ts(r['end_ts'])}"
    return f"{r['category']}: {fmt.duration(lost)} until {fmt.ts(r['end_ts'])}"


def _timeline(inc: dict, roots: pl.DataFrame, symptoms: pl.DataFrame, ledger: pl.DataFrame,
              nodes: pl.DataFrame, nxt: dict | None, not_a_hang: str | None = None) -> pl.DataFrame:
    """From the root cause to the first step after the restart, oldest first; `not_a_hang`: why the ledger's hang
    is the step under way (`_hang_or_step`), where it is."""
    out: list[dict] = []
    if roots.height:
        r = roots.row(0, named=True)
        out.append(_step(r["ts"], f"root cause: {r['kind']}", r["host"], r["text"], r["file"], r["line"]))
    else:
        out.append(_step(inc["root_ts"], f"incident starts: {inc['failure_mode']}", inc.get("host")))
    if symptoms.height:
        s = symptoms.sort("first_ts").row(0, named=True)
        out.append(_step(s["first_ts"], f"first symptom elsewhere: {s['kind']}", s["host"], s["text"], s["file"],
                         s["line"]))
    t0 = out[0]["ts"]
    for r in ledger.filter(pl.col("category").is_in(list(_SEGMENTS))).sort("start_ts").iter_rows(named=True):
        event, detail = _SEGMENTS[r["category"]], _segment_detail(r)
        if r["category"] == "hang" and not_a_hang:
            event, detail = "last step logged; the next step was under way", f"{detail}, {not_a_hang}: not a hang"
        out.append(_step(r["start_ts"], event, detail=detail))
    ends = {"attempt_end": f"attempt {inc['attempt']} exits", "checkpoint_stall": "the stalled save completes",
            "straggler": "last slow step", "checkpoint_lost": "resumed from an older checkpoint"}
    out.append(_step(inc["exit_ts"], ends.get(inc["kind"], "incident ends")))
    for r in nodes.iter_rows(named=True):
        out.append(_step(r["ts"], f"scheduler: {r['kind'].removeprefix('slurm_')}", r["host"], r["text"], r["file"],
                         r["line"]))
    if nxt:
        out.append(_step(nxt["start_ts"], f"attempt {nxt['attempt']} starts on {len(nxt['hosts'])} hosts",
                         detail=", ".join(nxt["hosts"])))
        if nxt["load_ts"] is not None:
            out.append(_step(nxt["load_ts"], f"checkpoint of step {nxt['resumed_from_step']} loaded"))
        if nxt["first_step_ts"] is not None:
            first = f" (step {nxt['first_step']})" if nxt["first_step"] is not None else ""
            out.append(_step(nxt["first_step_ts"], f"first step after the restart{first}"))
    frame = pl.DataFrame(out, schema={"ts": pl.Datetime("us"), "event": pl.String, "host": pl.String,
                                      "detail": pl.String, "file": pl.String, "line": pl.Int64})
    return frame.filter(pl.col("ts").is_not_null()).sort("ts", maintain_order=True).with_columns(
        after_s=(pl.col("ts") - t0).dt.total_microseconds() / 1e6).select("ts", "after_s", *frame.columns[1:])


def _what(inc: dict, roots: pl.DataFrame) -> tuple[str, int | None]:
    """The failure in words: the root Xid's meaning, else the failure mode's description."""
    xids = roots.filter(pl.col("xid").is_not_null())["xid"] if roots.height else pl.Series([])
    if xids.len():
        code = int(xids[0])
        return f"Xid {code} ({taxonomy.xid(code).description})", code
    m = taxonomy.MODES.get(inc["failure_mode"])
    return (f"{m.description[0].upper()}{m.description[1:]} ({m.id})" if m else inc["failure_mode"]), None


def _summary(inc: dict, what: str, hang_s: float | None) -> str:
    """One line: what, where, when, what it did, how much it cost, whose fault."""
    cluster, provider = inc.get("cluster") or "?", inc.get("provider") or "?"
    where = f" on {inc['host']} ({cluster}, {provider})" if inc.get("host") else f" on {cluster} ({provider})"
    kind, run, k = inc["kind"], inc["run"], inc["attempt"]
    effect = {
        "attempt_end": f"ended attempt {k} of {run}" + (f" after {fmt.duration(hang_s)} of hang" if hang_s else ""),
        "straggler": f"slowed steps {inc.get('first_step')}-{inc.get('last_step')} of {run} (attempt {k})",
        "checkpoint_stall": f"stalled the checkpoint save at step {inc.get('first_step')} of {run} (attempt {k})",
        "checkpoint_lost": f"lost the checkpoint of step {inc.get('last_step')} of {run}",
    }.get(kind, f"hit {run} (attempt {k})")
    cost = (f"{fmt.num(inc['gpu_hours_lost'])} GPU-hours ({fmt.usd(inc.get('usd_lost'))}) lost"
            if inc.get("gpu_hours_lost") is not None else "cost unknown (no ledger)")
    return f"{what}{where} at {fmt.ts(inc['root_ts'])} {effect}; {cost}; blame: {inc.get('blame') or 'unknown'}."


def _guidance(inc: dict, xid: int | None, nxt: dict | None, support: str | None) -> list[str]:
    """Why the action (NVIDIA's guidance where an Xid is the cause, the failure mode's default), what the
    relaunch did about it, and whom to call: each fact once, the action itself only where a source differs."""
    action, host, out = inc.get("action") or "none", inc.get("host"), []
    m = taxonomy.MODES.get(inc["failure_mode"])
    mode = f"{m.id} ({m.description})" if m else None
    if xid is not None:
        x = taxonomy.xid(xid)
        nvidia = f"NVIDIA's guidance for Xid {xid} ({x.description})"
        why = f"Why: {nvidia}" if x.action == action else f"{nvidia}: {x.action}"
        if m and m.action == action == x.action:
            why += f", also the default for {mode}"
        elif m and m.action != x.action:
            why += f"; it takes precedence over the default for {mode}, {m.action}"
        out.append(why + ".")
    elif m:
        out.append(f"Why: the default for {mode}." if m.action == action
                   else f"The default for {mode} is {m.action}; the incident's own is above.")
    if nxt and host and action.startswith("drain"):
        out.append(f"The relaunch (attempt {nxt['attempt']}) excluded {host}." if nxt["guilty_host_excluded"]
                   else f"{host} was still in attempt {nxt['attempt']}: drain it before the next launch.")
    if inc.get("blame") == "provider" and support:
        out.append(f"Provider support: {support}")
    return out


REJECTED_COLUMNS = {"failure_mode": pl.String, "host": pl.String, "ts": pl.Datetime("us"), "kind": pl.String,
                    "file": pl.String, "line": pl.Int64, "reason": pl.String}


def _rejected(con: duckdb.DuckDBPyConnection, candidates: list[dict] | None) -> pl.DataFrame:
    """The candidates the attribution considered and turned down, one row each with its reason."""
    rows = [{**(c.get("candidate") or {}), "reason": c.get("reason")} for c in candidates or []]
    for r in rows:  # NOTE: the attribution keeps the time as ISO text; a bad one is shown as missing
        try:
            r["ts"] = dt.datetime.fromisoformat(r["ts"]) if r.get("ts") else None
        except (TypeError, ValueError):
            r["ts"] = None
    frame = pl.DataFrame([{k: r.get(k) for k in REJECTED_COLUMNS} for r in rows], schema=REJECTED_COLUMNS)
    return fleet.short_paths(con, frame)


def _step_gap_s(con: duckdb.DuckDBPyConnection, run: str, attempt: int) -> float | None:
    """The attempt's ordinary time between step records at its end: the median gap of the finest source (the
    log's step lines, the per-rank records) that was still recording at its own pace when the last record came."""
    return con.execute("""
        WITH recs AS (SELECT 'log:' || source AS src, step, max(ts) AS ts FROM steps
                      WHERE run = $run AND attempt = $attempt AND step IS NOT NULL AND ts IS NOT NULL
                      GROUP BY ALL
                      UNION ALL
                      SELECT 'ranks' AS src, step, max(ts) AS ts FROM rank_steps
                      WHERE run = $run AND attempt = $attempt AND step IS NOT NULL AND ts IS NOT NULL
                      GROUP BY ALL),
             gaps AS (SELECT src, ts, epoch(ts) - epoch(lag(ts) OVER (PARTITION BY src ORDER BY step)) AS gap_s
                      FROM recs),
             per AS (SELECT src, median(gap_s) AS g, max(ts) AS last_ts FROM gaps GROUP BY src)
        SELECT min(g) FROM per
        WHERE epoch((SELECT max(last_ts) FROM per)) - epoch(last_ts) <= g""",
                       {"run": run, "attempt": attempt}).fetchall()[0][0]


def _hang_or_step(con: duckdb.DuckDBPyConnection, inc: dict, hang_s: float | None, s: incidents.Settings
                  ) -> tuple[float | None, str | None]:
    """(the hang worth the name, else why the ledger's is none): the ledger's `hang` runs from the root event,
    which a log that prints one record in N steps dates no better than the gap between records: a hang shorter
    than a few such gaps is the steps under way, not a hang."""
    if not hang_s:
        return hang_s, None
    gap = _step_gap_s(con, inc["run"], inc["attempt"])
    # NOTE: the bound root-cause ranking uses for a job that had stopped stepping (Settings.late_steps)
    if gap and hang_s <= s.late_steps * gap:
        return None, (f"within {s.late_steps:g} of the attempt's ordinary gaps between step records "
                      f"({fmt.duration(gap)} each)")
    return hang_s, None


def _relaunch_note(con: duckdb.DuckDBPyConnection, inc: dict, nxt: dict | None, inc_all: pl.DataFrame) -> str | None:
    """Why the report shows no relaunch: no attempt followed this one, or the incident did not end its attempt."""
    if nxt:
        return None
    run, k = inc["run"], inc["attempt"]
    later = con.execute("SELECT min(attempt) FROM attempts WHERE run = ? AND attempt > ?", [run, k]).fetchall()[0][0]
    after = f"attempt {later} followed it" if later is not None else "no later attempt of this run is in the store"
    if inc["kind"] == "attempt_end":
        return "No later attempt of this run in the store."
    if inc["kind"] == "checkpoint_lost":
        return (f"This incident is found in the relaunch itself: attempt {k} resumed from the checkpoint of step "
                f"{inc.get('first_step') - 1 if inc.get('first_step') is not None else '?'}, not "
                f"{inc.get('last_step')}.")
    end = inc_all.filter(pl.col("kind") == "attempt_end", pl.col("attempt") == k)["incident_id"]
    ended = f" to its end, incident {end[0]}" if end.len() else ""
    return f"This incident did not end attempt {k}: the attempt ran on{ended}; {after}."


def runs_of(con: duckdb.DuckDBPyConnection, incident_id: str) -> list[str]:
    """The runs an incident id can belong to, longest name first (a run's name may itself hold `:`)."""
    return store.frame(con, """
        SELECT run FROM (SELECT run FROM attempts UNION SELECT run FROM runs)
        WHERE run IS NOT NULL AND starts_with(?, run || ':') ORDER BY length(run) DESC, run""",
                       [incident_id])["run"].to_list()


def incident_report(con: duckdb.DuckDBPyConnection, incident_id: str, settings: incidents.Settings | None = None,
                    attributed: attribution.Attribution | None = None) -> IncidentReport:
    """The report of one incident (`run:attempt:end`, `run:attempt:straggler:host:step`, ...).

    `attributed`: the run's `Attribution` when the caller has it already (it is not computed again)."""
    s = settings or incidents.Settings()
    for run in runs_of(con, incident_id):  # NOTE: not split on `:`, which a run's name may hold
        inc_all, ev_all, rows, notes, att = _sources(con, run, s, attributed if attributed and attributed.run == run
                                                     else None)
        hit = inc_all.filter(pl.col("incident_id") == incident_id)
        if hit.height:
            break
    else:
        raise KeyError(f"no incident {incident_id!r}")
    inc = hit.select([c for c in attribution.INCIDENT_COLUMNS if c in hit.columns]).row(0, named=True)
    ev = fleet.short_paths(con, ev_all.filter(pl.col("incident_id") == incident_id))
    roots, symptoms = _split(ev, inc.get("host"))
    # `seconds` is the time each GPU lost; `span_s` the wall time it was lost in (a straggler's is longer)
    ledger = (rows.filter(pl.col("incident_id") == incident_id).select(
        "category", "attempt", "start_ts", "end_ts", "seconds", "gpu_hours", "usd").sort("start_ts")
        if rows is not None else pl.DataFrame(schema={"category": pl.String, "attempt": pl.Int32,
                                                      "start_ts": pl.Datetime("us"), "end_ts": pl.Datetime("us"),
                                                      "seconds": pl.Float64, "gpu_hours": pl.Float64,
                                                      "usd": pl.Float64}))
    ledger = ledger.with_columns(span_s=(pl.col("end_ts") - pl.col("start_ts")).dt.total_microseconds() / 1e6)
    nxt = _next_attempt(con, inc) if inc["kind"] == "attempt_end" else None
    horizon = (nxt or {}).get("first_step_ts") or inc["exit_ts"] + dt.timedelta(hours=1)
    nodes = fleet.short_paths(con, _node_actions(con, inc.get("host"), inc["root_ts"], horizon))
    prov = store.frame(con, "SELECT usd_per_gpu_hour, notes FROM providers WHERE provider = ?",
                       [inc.get("provider")])
    price, support = (prov.row(0) if prov.height else (None, None))
    what, xid = _what(inc, roots)
    booked = ledger.filter(pl.col("category") == "hang")["seconds"].sum() if ledger.height else None
    hang, not_a_hang = _hang_or_step(con, inc, booked, s)
    if not_a_hang:
        notes = [*notes, f"The ledger books the {fmt.duration(booked)} after the last step record as hang; "
                 f"{not_a_hang}, it is the step under way when the job ended, not a hang."]
    return IncidentReport(
        incident_id=incident_id, incident=inc, summary=_summary(inc, what, hang), what=what,
        timeline=_timeline(inc, roots, symptoms, ledger, nodes, nxt, not_a_hang), root_evidence=roots,
        symptoms=symptoms,
        ledger=ledger, gpu_hours_lost=inc.get("gpu_hours_lost"), usd_lost=inc.get("usd_lost"),
        usd_per_gpu_hour=price, action=inc.get("action") or "none",
        guidance=_guidance(inc, xid, nxt, support) + (recommend.for_incident(con, att, inc) if att else []),
        relaunch=nxt, relaunch_note=_relaunch_note(con, inc, nxt, inc_all),
        recorded_relaunches=_recorded_relaunches(con, incident_id), provider_support=support,
        notes=notes, confidence=inc.get("confidence"), rejected=_rejected(con, inc.get("rejected")))

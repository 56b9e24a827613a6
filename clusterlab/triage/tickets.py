"""Provider tickets: each ticket's timeline (opened, acknowledged, answered, resolved, reopened) and how a
provider's support answers, set against what clusterlab's evidence said.

A step is recorded one at a time (`record`, `clusterlab ticket`) or imported from a ticketing system's CSV
export (`import_csv`: one row per ticket, a column per step's time). The support table per provider: tickets,
median hours to acknowledge and to resolve, the share of the tickets about faults clusterlab blamed on the
provider's hardware that were answered "no fault found" or "user's code", and incidents on a ticket's host
after the provider answered "fixed" or "hardware replaced".
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import duckdb
import polars as pl

from clusterlab import store

STEPS = ("opened", "acknowledged", "answered", "resolved", "reopened")
ANSWERS = ("fixed", "hardware_replaced", "no_fault_found", "user_code")
DENIALS = ("no_fault_found", "user_code")
REPAIRS = ("fixed", "hardware_replaced")
# CSV header (lower case, spaces and dashes as `_`) -> column; a few ticketing systems' export names.
_ALIASES = {
    "ticket": "ticket", "id": "ticket", "key": "ticket", "issue_key": "ticket", "ticket_id": "ticket",
    "provider": "provider", "host": "host", "node": "host", "incident": "incident_id", "incident_id": "incident_id",
    "opened": "opened", "created": "opened", "created_at": "opened", "opened_at": "opened",
    "acknowledged": "acknowledged", "acknowledged_at": "acknowledged", "first_response": "acknowledged",
    "first_reply_at": "acknowledged", "answered": "answered", "answered_at": "answered",
    "answer": "answer", "resolution": "answer", "resolved": "resolved", "resolved_at": "resolved",
    "solved_at": "resolved", "reopened": "reopened", "reopened_at": "reopened", "note": "note", "summary": "note",
}
_ANSWER_WORDS = {"fixed": "fixed", "hardware replaced": "hardware_replaced", "hardware_replaced": "hardware_replaced",
                 "replaced": "hardware_replaced", "no fault found": "no_fault_found",
                 "no_fault_found": "no_fault_found", "nff": "no_fault_found", "user code": "user_code",
                 "user_code": "user_code", "user's code": "user_code", "customer issue": "user_code"}


class TicketError(ValueError):
    """A ticket step or CSV row that cannot be recorded: the message names the file and line."""


def answer_of(text: str | None) -> str | None:
    """The answer category a free-text resolution names (None: none given; TicketError: unknown)."""
    if text is None or not text.strip():
        return None
    key = text.strip().lower().replace("-", " ")
    if key not in _ANSWER_WORDS:
        raise TicketError(f"unknown answer {text!r} (one of: {', '.join(ANSWERS)})")
    return _ANSWER_WORDS[key]


def record(con: duckdb.DuckDBPyConnection, ticket: str, step: str, ts: dt.datetime, provider: str | None = None,
           host: str | None = None, incident_id: str | None = None, answer: str | None = None,
           note: str | None = None, source: str = "api") -> None:
    """One step of a ticket's timeline (a repeat of the same step at the same time is kept once)."""
    if step not in STEPS:
        raise TicketError(f"unknown step {step!r} (one of: {', '.join(STEPS)})")
    if not ticket.strip():
        raise TicketError("a ticket needs an id")
    ans = answer_of(answer)
    if ans is not None and step not in ("answered", "resolved"):
        raise TicketError(f"an answer belongs to the answered or resolved step, not {step!r}")
    _insert(con, pl.DataFrame([{"ticket": ticket, "step": step, "ts": ts, "provider": provider, "host": host,
                                "incident_id": incident_id, "answer": ans, "note": note, "source": source}]))


def _insert(con: duckdb.DuckDBPyConnection, rows: pl.DataFrame) -> None:
    con.register("_ticket_rows", rows.to_arrow())
    try:
        con.execute("""INSERT OR IGNORE INTO tickets (ticket, step, ts, provider, host, incident_id, answer, note,
                       source) SELECT ticket, step, ts, provider, host, incident_id, answer, note, source
                       FROM _ticket_rows""")
    finally:
        con.unregister("_ticket_rows")


def import_csv(con: duckdb.DuckDBPyConnection, path: str | os.PathLike) -> int:
    """Every row of a ticketing system's CSV export as timeline steps; returns the steps recorded."""
    p = Path(path)
    try:
        raw = pl.read_csv(p, infer_schema=False)
    except (OSError, pl.exceptions.PolarsError) as e:
        raise TicketError(f"{p}: cannot read as CSV: {e}") from None
    cols = {c: _ALIASES.get(c.strip().lower().replace(" ", "_").replace("-", "_")) for c in raw.columns}
    frame = raw.select([pl.col(c).alias(k) for c, k in cols.items() if k]).with_row_index("csv_line", offset=2)
    if "ticket" not in frame.columns or "opened" not in frame.columns:
        raise TicketError(f"{p}:1: a ticket id and an opened time are needed (columns {sorted(set(raw.columns))})")
    for c in ("provider", "host", "incident_id", "answer", "note", *STEPS):
        if c not in frame.columns:
            frame = frame.with_columns(pl.lit(None, pl.String).alias(c))
    answers = frame["answer"].to_list()
    for i, a in enumerate(answers):  # a short column of free text, checked for a clear error
        try:
            answers[i] = answer_of(a)
        except TicketError as e:
            raise TicketError(f"{p}:{int(frame['csv_line'][i])}: {e}") from None
    frame = frame.with_columns(answer=pl.Series(answers, dtype=pl.String))
    long = frame.unpivot(index=["csv_line", "ticket", "provider", "host", "incident_id", "answer", "note"],
                         on=list(STEPS), variable_name="step", value_name="when").filter(pl.col("when").is_not_null())
    when = pl.col("when").str.strip_chars()
    long = long.with_columns(ts=pl.coalesce(
        when.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f%z", strict=False).dt.convert_time_zone("UTC")
        .dt.replace_time_zone(None),
        when.str.replace("T", " ").str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False),
        when.str.replace("T", " ").str.to_datetime("%Y-%m-%d %H:%M", strict=False)).cast(pl.Datetime("us")))
    bad = long.filter(pl.col("ts").is_null())
    if bad.height:
        r = bad.row(0, named=True)
        raise TicketError(f"{p}:{r['csv_line']}: {r['step']} time {r['when']!r} is not a date and time")
    no_id = long.filter(pl.col("ticket").is_null() | (pl.col("ticket").str.strip_chars() == ""))
    if no_id.height:
        raise TicketError(f"{p}:{no_id['csv_line'][0]}: no ticket id")
    rows = long.select("ticket", "step", "ts", "provider", "host", "incident_id",
                       answer=pl.when(pl.col("step").is_in(["answered", "resolved"])).then(pl.col("answer")),
                       note=pl.when(pl.col("step") == "opened").then(pl.col("note")),
                       source=pl.lit(f"csv:{p.name}"))
    before = con.execute("SELECT count(*) FROM tickets").fetchall()[0][0]
    _insert(con, rows)
    return con.execute("SELECT count(*) FROM tickets").fetchall()[0][0] - before


def timelines(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """One row per ticket: its provider (else its host's), host, incident, each step's first time, the answer,
    reopen count, and hours from opening to acknowledgement and to the last resolution."""
    return store.frame(con, """
        WITH t AS (SELECT * FROM tickets),
        one AS (
            SELECT ticket, any_value(provider) AS provider, any_value(host) AS host,
                   any_value(incident_id) AS incident_id,
                   min(ts) FILTER (WHERE step = 'opened') AS opened_at,
                   min(ts) FILTER (WHERE step = 'acknowledged') AS acknowledged_at,
                   min(ts) FILTER (WHERE step = 'answered') AS answered_at,
                   max(ts) FILTER (WHERE step = 'resolved') AS resolved_at,
                   arg_max(answer, ts) FILTER (WHERE answer IS NOT NULL) AS answer,
                   count(*) FILTER (WHERE step = 'reopened') AS reopened
            FROM t GROUP BY ticket)
        SELECT one.ticket, coalesce(one.provider, inv.provider) AS provider, one.host, one.incident_id,
               opened_at, acknowledged_at, answered_at, resolved_at, answer, reopened,
               date_diff('second', opened_at, acknowledged_at) / 3600.0 AS hours_to_acknowledge,
               date_diff('second', opened_at, resolved_at) / 3600.0 AS hours_to_resolve
        FROM one LEFT JOIN inventory inv ON inv.host = one.host
        ORDER BY opened_at, ticket""")


SUPPORT_SCHEMA = {"provider": pl.String, "tickets": pl.UInt32, "open": pl.UInt32,
                  "median_hours_to_acknowledge": pl.Float64, "median_hours_to_resolve": pl.Float64,
                  "hardware_tickets": pl.UInt32, "denied": pl.UInt32, "denied_share": pl.Float64,
                  "repeats_after_fix": pl.UInt32}


def support(con: duckdb.DuckDBPyConnection, history: pl.DataFrame, until: dt.datetime | None = None) -> pl.DataFrame:
    """Per provider, tickets opened before `until`: counts, median hours to acknowledge and resolve, and of the
    tickets about an incident clusterlab blamed on the provider (`history`: incident_id, host, blame, root_ts),
    how many were answered "no fault found" or "user's code"; incidents on a ticket's host after its fix."""
    t = timelines(con)
    if until is not None:
        t = t.filter(pl.col("opened_at") < until)
    if not t.height:
        return pl.DataFrame(schema=SUPPORT_SCHEMA)
    hist = history.select("incident_id", inc_host="host", blame="blame", inc_ts="root_ts") if history.height else \
        pl.DataFrame(schema={"incident_id": pl.String, "inc_host": pl.String, "blame": pl.String,
                             "inc_ts": pl.Datetime("us")})
    t = t.join(hist.select("incident_id", "blame", "inc_host"), on="incident_id", how="left").with_columns(
        host=pl.coalesce("host", "inc_host"), hardware=pl.col("blame") == "provider")
    fixed = t.filter(pl.col("answer").is_in(REPAIRS), pl.col("host").is_not_null()).select(
        "ticket", "host", fixed_at=pl.coalesce("resolved_at", "answered_at"), own="incident_id")
    later = fixed.join_where(hist.select("incident_id", "inc_host", "inc_ts"), pl.col("host") == pl.col("inc_host"),
                             pl.col("inc_ts") > pl.col("fixed_at")).filter(pl.col("incident_id") != pl.col("own")
                                                                           .fill_null(""))
    repeats = later.group_by("ticket").agg(repeats=pl.col("incident_id").n_unique())
    t = t.join(repeats, on="ticket", how="left").with_columns(pl.col("repeats").fill_null(0))
    hw = pl.col("hardware").fill_null(False)
    out = t.group_by(pl.col("provider").fill_null("unknown")).agg(
        tickets=pl.len(), open=pl.col("resolved_at").is_null().sum(),
        median_hours_to_acknowledge=pl.col("hours_to_acknowledge").median(),
        median_hours_to_resolve=pl.col("hours_to_resolve").median(),
        hardware_tickets=hw.sum(), denied=(hw & pl.col("answer").is_in(DENIALS).fill_null(False)).sum(),
        repeats_after_fix=pl.col("repeats").sum())
    out = out.with_columns(denied_share=pl.when(pl.col("hardware_tickets") > 0)
                           .then(pl.col("denied") / pl.col("hardware_tickets")))
    return out.select(list(SUPPORT_SCHEMA)).cast(SUPPORT_SCHEMA).sort("provider")

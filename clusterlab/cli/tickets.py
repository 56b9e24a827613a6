"""`clusterlab ticket add|import|list`: a thin layer over `clusterlab.triage.tickets`.

It takes the database from the parent group's context; `clusterlab.cli.app` registers the group."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import click

from clusterlab.cli.common import emit_json, fail, json_option, open_lab, print_frame, records
from clusterlab.triage import tickets


@click.group("ticket")
def ticket_group() -> None:
    """Provider tickets: each step of a ticket's timeline, for the scorecard's support table."""


@ticket_group.command("add")
@click.argument("ticket")
@click.argument("step", type=click.Choice(tickets.STEPS))
@click.option("--at", "at", required=True, help="When (UTC), e.g. 2026-11-24T09:30.")
@click.option("--provider", help="The provider the ticket was sent to.")
@click.option("--host", help="The host it is about.")
@click.option("--incident", "incident_id", help="The clusterlab incident it is about.")
@click.option("--answer", help=f"The provider's answer ({', '.join(tickets.ANSWERS)}); answered or resolved steps.")
@click.option("--note", help="Free text.")
@click.pass_context
def add_command(ctx: click.Context, ticket: str, step: str, at: str, provider: str | None, host: str | None,
                incident_id: str | None, answer: str | None, note: str | None) -> None:
    """Record one STEP (opened, acknowledged, answered, resolved, reopened) of TICKET."""

    try:
        when = dt.datetime.fromisoformat(at)
    except ValueError:
        fail(f"--at {at!r}: not an ISO date and time")
    if when.tzinfo is not None:
        when = when.astimezone(dt.UTC).replace(tzinfo=None)
    with open_lab(ctx) as lab:
        try:
            tickets.record(lab.con, ticket, step, when, provider, host, incident_id, answer, note, source="cli")
        except tickets.TicketError as e:
            fail(str(e))
    click.echo(f"{ticket}: {step} at {when.isoformat()}")


@ticket_group.command("import")
@click.argument("csv_file", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.pass_context
def import_command(ctx: click.Context, csv_file: Path) -> None:
    """Import a ticketing system's CSV export: one row per ticket, a column per step's time."""

    with open_lab(ctx) as lab:
        try:
            n = tickets.import_csv(lab.con, csv_file)
        except tickets.TicketError as e:
            fail(str(e))
    click.echo(f"{csv_file}: {n} ticket step(s) recorded")


@ticket_group.command("list")
@json_option
@click.pass_context
def list_command(ctx: click.Context, as_json: bool) -> None:
    """Every ticket's timeline: its steps' times, the answer, hours to acknowledge and to resolve."""

    with open_lab(ctx, read_only=True) as lab:
        frame = tickets.timelines(lab.con)
    emit_json(records(frame)) if as_json else print_frame(frame)

"""`clusterlab change add|list|compare`: thin commands over `clusterlab.whatif.changes`."""

from __future__ import annotations

import datetime as dt

import click

from clusterlab.cli.common import emit_json, fail, open_lab, print_frame, records


def _when(value: str) -> dt.datetime:
    try:
        return dt.datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an ISO 8601 time (2026-11-24T09:30, UTC)") from None


@click.group("change")
def change_group() -> None:
    """Changes made to a cluster (a hot-fix, an upgrade, an excluded node) and whether they worked."""


@change_group.command("add")
@click.option("--cluster", required=True, help="The cluster it was made on.")
@click.option("--at", "at", required=True, help="When it took effect (ISO 8601, UTC).")
@click.option("--what", required=True, help="What changed, e.g. 'NCCL_IB_TIMEOUT=22' or 'provider re-seated cables'.")
@click.option("--author", help="Who says so.")
@click.pass_context
def add(ctx: click.Context, cluster: str, at: str, what: str, author: str | None) -> None:
    """Record a change made to a cluster at a time."""

    when = _when(at)
    with open_lab(ctx) as lab:
        try:
            change_id = lab.change(cluster, when, what, author=author)
        except ValueError as e:
            fail(str(e))
    click.echo(f"change {change_id} on {cluster} at {when.isoformat()}: {what}")


@change_group.command("list")
@click.option("--cluster", help="Only this cluster.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document and nothing else.")
@click.pass_context
def list_changes(ctx: click.Context, cluster: str | None, as_json: bool) -> None:
    """The recorded changes, oldest first."""

    with open_lab(ctx, read_only=True) as lab:
        frame = lab.changes(cluster)
    emit_json(records(frame)) if as_json else print_frame(frame)


@change_group.command("compare")
@click.option("--cluster", required=True, help="The cluster.")
@click.option("--change", "change", required=True, help="The change's id (or its exact text).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document and nothing else.")
@click.pass_context
def compare(ctx: click.Context, cluster: str, change: str, as_json: bool) -> None:
    """MTBF, failures per 1,000 GPU-days by mode, ETTR and steady MFU before against after, with 95 % intervals."""

    with open_lab(ctx, read_only=True) as lab:
        try:
            c = lab.compare(cluster, change)
        except KeyError as e:
            fail(e.args[0])
    if as_json:
        emit_json(c.to_dict())
        return
    click.echo(f"change {c.change['change_id']} on {cluster} at {c.change['ts'].isoformat()}: {c.change['what']}")
    print_frame(c.metrics)
    for note in c.notes:
        click.echo(f"note: {note}")

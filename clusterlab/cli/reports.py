"""`clusterlab scorecard` and `clusterlab report`: thin commands over `clusterlab.reports`.

They take the database from the parent group's context (`ctx.obj["db"]`) and share the rest
of the command line's helpers (`clusterlab.cli.common`); `clusterlab.cli.app` registers them.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import click

from clusterlab.cli.common import EXIT_BAD_INPUT, fail, open_error
from clusterlab.lab import Lab
from clusterlab.store import db_path

# NOTE: `clusterlab.reports` is imported by the command that runs: every other command would pay for it

DEFAULT_OUT = Path("clusterlab-reports")  # where `scorecard` writes without --out


def _open(ctx: click.Context) -> Lab:
    """The parent group's database (and its lake, with --lake), read-only when it exists (reports never write)."""
    path = (ctx.obj or {}).get("db") or db_path(None)
    if path != ":memory:" and not Path(path).exists():
        fail(f"{path}: no such database (clusterlab ingest creates it)")
    try:
        return Lab(path, read_only=True, lake=(ctx.obj or {}).get("lake"))
    except Exception as e:  # a locked or foreign file: one line, exit 2, as every other command
        fail(open_error(path, e))


def _emit(doc) -> None:
    def default(v):
        return v.isoformat() if isinstance(v, dt.datetime | dt.date) else str(v)
    click.echo(json.dumps(doc, indent=2, default=default))


def _fail(ctx: click.Context, message: str) -> None:
    click.echo(f"error: {message}", err=True)
    ctx.exit(EXIT_BAD_INPUT)


_format = click.option("--format", "fmt", type=click.Choice(["html", "md", "both"]), default=None,
                       help="html (self-contained, the default), md, or both.")
_json = click.option("--json", "as_json", is_flag=True, help="Print one JSON document and nothing else.")


@click.command("scorecard")
@click.option("--week", required=True, help="ISO week, e.g. 2026-W48.")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False),
              help=f"Folder to write scorecard-<week>.html/.md into (default: ./{DEFAULT_OUT}; `-`: the document "
                   "on stdout).")
@_format
@click.option("--provider", "providers", multiple=True, help="Only this provider (repeatable).")
@_json
@click.pass_context
def scorecard_cmd(ctx: click.Context, week: str, out: Path | None, fmt: str | None, providers: tuple[str, ...],
                  as_json: bool) -> None:
    """Weekly provider scorecard: GPU-hours delivered and lost, ETTR, MFU, MTBF, failure mix, worst hosts, ranking."""
    from clusterlab.reports import render
    from clusterlab.reports.scorecard import scorecard

    with _open(ctx) as lab:
        try:
            sc = scorecard(lab.con, week, providers or None)
        except ValueError as e:
            _fail(ctx, str(e))
        if str(out) == "-" and not as_json:
            if fmt == "both":
                _fail(ctx, "--format both needs --out DIR")
            click.echo(render.render_scorecard(sc, fmt or "html"), nl=False)
            return
        # NOTE: --json alone writes nothing (the document is the answer); otherwise never HTML on a terminal
        folder = out if out is not None and str(out) != "-" else None if as_json else DEFAULT_OUT
        written = render.write_scorecard(sc, folder, render.formats(fmt)) if folder else []
    if as_json:
        _emit({**sc.to_dict(), "files": [str(p) for p in written]})
        return
    _print_summary(sc)
    default = " (the default --out)" if out is None else ""
    for p in written:
        click.echo(f"wrote {p}{default}")


def _print_summary(sc) -> None:
    """The ranking in a few lines: provider, score and verdict."""
    ranking = sc.ranking.to_dicts()
    click.echo(f"scorecard {sc.week}: {len(ranking)} provider(s)")
    for r in ranking:  # the verdict reads "keep: score 0.93 of contracted GPU-hours; ETTR ..."
        click.echo(f"  {r['rank']}. {r['provider']}: {r['verdict']}")


@click.command("report")
@click.argument("incident_id")
@click.option("--out", type=click.Path(path_type=Path),
              help="File (its suffix is replaced per format) or folder to write the report into "
                   "(default: the document on stdout).")
@_format
@_json
@click.pass_context
def report_cmd(ctx: click.Context, incident_id: str, out: Path | None, fmt: str | None, as_json: bool) -> None:
    """Incident report for a provider's support: evidence lines, timeline, cost, recommended action, relaunch."""
    from clusterlab.reports import render
    from clusterlab.reports.incident_report import incident_report

    if fmt is None and out is not None and out.suffix in (".html", ".md"):
        fmt = out.suffix[1:]
    with _open(ctx) as lab:
        try:
            rep = incident_report(lab.con, incident_id)
        except KeyError as e:
            _fail(ctx, e.args[0] if e.args else str(e))
        if out is None and not as_json:
            if fmt == "both":
                _fail(ctx, "--format both needs --out FILE")
            click.echo(render.render_incident(rep, fmt or "html"), nl=False)
            return
        written = render.write_incident(rep, out, render.formats(fmt)) if out else []
    if as_json:
        _emit({**rep.to_dict(), "files": [str(p) for p in written]})
    else:
        for p in written:
            click.echo(str(p))


COMMANDS = [scorecard_cmd, report_cmd]

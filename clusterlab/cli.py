"""The `clusterlab` command: a thin layer over `clusterlab.Lab`."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sys
from pathlib import Path

import click
import polars as pl

from clusterlab.lab import Lab
from clusterlab.ledger import LedgerError
from clusterlab.preflight import preflight
from clusterlab.reader import InputError
from clusterlab.relaunch.cli import print_plan
from clusterlab.relaunch.cli import relaunch as relaunch_command
from clusterlab.reports.cli import COMMANDS as REPORT_COMMANDS
from clusterlab.reports.render import write_week
from clusterlab.reports.scorecard import latest_week
from clusterlab.simulator.cli import simulate
from clusterlab.store import DEFAULT_DB

EXIT_BAD_INPUT = 2
SAMPLES = Path(__file__).resolve().parent.parent / "data_samples"


def _jsonable(v):
    if isinstance(v, dt.datetime | dt.date):
        return v.isoformat()
    return v


def records(frame: pl.DataFrame) -> list[dict]:
    """Frame rows as JSON-ready dicts (times in ISO 8601)."""
    return [{k: _jsonable(v) for k, v in row.items()} for row in frame.to_dicts()]


def emit_json(doc) -> None:
    click.echo(json.dumps(doc, default=_jsonable, indent=2))


def print_frame(frame: pl.DataFrame, limit: int | None = None) -> None:
    with pl.Config(tbl_rows=limit or frame.height, tbl_cols=-1, fmt_str_lengths=80, tbl_width_chars=200,
                   tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True):
        click.echo(frame.head(limit) if limit else frame)


def _open(ctx: click.Context, read_only: bool = False) -> Lab:
    path = ctx.obj["db"]
    try:
        return Lab(path, read_only=read_only and Path(path).exists())
    except Exception as e:  # a locked or foreign file: say so in one line
        raise click.ClickException(f"{path}: cannot open database: {e}") from None


json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document and nothing else.")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", envvar="CLUSTERLAB_DB", default=DEFAULT_DB, show_default=True,
              help="DuckDB file (or $CLUSTERLAB_DB).")
@click.pass_context
def main(ctx: click.Context, db: str) -> None:
    """Diagnostics and postmortems for training runs on rented GPU clusters."""
    ctx.ensure_object(dict)
    ctx.obj["db"] = db


for _command in [*REPORT_COMMANDS, simulate, relaunch_command]:  # scorecard, report, simulate, relaunch
    main.add_command(_command)
main.add_command(preflight)  # clusterlab preflight (torch imported only when it runs)


def _progress_bar(enabled: bool):
    if not enabled:
        return None, None
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(TextColumn("ingest"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                   TextColumn("{task.description}"), transient=True,
                   console=__import__("rich.console").console.Console(stderr=True))
    task = bar.add_task("", total=None)

    def update(done: int, total: int, name: str) -> None:
        bar.update(task, completed=done, total=total, description=name[-50:])

    return bar, update


def run_ingest(lab: Lab, paths, inventory, run, host, year, as_json: bool) -> int:
    """Ingest, print the summary; the exit status (2 when any input was bad)."""
    bar, update = _progress_bar(not as_json and sys.stderr.isatty())
    try:
        if bar:
            bar.start()
        summary = lab.ingest(*paths, inventory=inventory, run=run, host=host, year=year, progress=update)
    except InputError as e:
        click.echo(f"error: {e}", err=True)
        return EXIT_BAD_INPUT
    finally:
        if bar:
            bar.stop()
    if as_json:
        emit_json(summary.to_dict())
    else:
        c = summary.counts()
        click.echo(f"files: {len(summary.files)} ("
                   + ", ".join(f"{n} {s}" for s, n in sorted(c.items())) + ")")
        click.echo("rows: " + ", ".join(f"{t} {n}" for t, n in summary.rows.items() if n))
        unparsed = sum(f.unparsed for f in summary.files)
        if unparsed:
            click.echo(f"lines matched but not understood: {unparsed}")
    for m in summary.problems:
        click.echo(f"error: {m}", err=True)
    return EXIT_BAD_INPUT if summary.problems else 0


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--inventory", type=click.Path(path_type=Path), help="inventory.toml describing the fleet.")
@click.option("--run", help="Run name for files outside a runs/<run>/ directory.")
@click.option("--host", help="Host for files whose lines and path name none.")
@click.option("--year", type=int, help="Year for log formats that print none (default: the file's mtime).")
@json_option
@click.pass_context
def ingest(ctx, paths, inventory, run, host, year, as_json):
    """Ingest evidence files and directories (idempotent; a grown log adds only what is new)."""
    with _open(ctx) as lab:
        ctx.exit(run_ingest(lab, paths, inventory, run, host, year, as_json))


@main.command()
@json_option
@click.pass_context
def runs(ctx, as_json):
    """Runs with attempts, GPUs and wall time."""
    with _open(ctx, read_only=True) as lab:
        frame = lab.runs()
    emit_json(records(frame)) if as_json else print_frame(frame)


@main.command()
@click.option("--host", help="Only this host.")
@click.option("--mode", help="Only this failure mode (see the taxonomy).")
@click.option("--run", help="Only this run.")
@click.option("--kind", help="Only this kind of event (xid, watchdog_timeout, ...).")
@click.option("--limit", type=int, default=None, help="At most this many rows (table output: 50).")
@json_option
@click.pass_context
def events(ctx, host, mode, run, kind, limit, as_json):
    """Parsed evidence: ts, host, source, kind, failure_mode, xid, rank, file, line, text."""
    with _open(ctx, read_only=True) as lab:
        frame = lab.events(host=host, mode=mode, run=run, kind=kind)
    cols = ["ts", "host", "source", "kind", "failure_mode", "xid", "rank", "file", "line", "text"]
    frame = frame.select(cols)
    if as_json:
        emit_json(records(frame.head(limit) if limit else frame))
    else:
        print_frame(frame.with_columns(pl.col("file").str.split("/").list.last()), limit or 50)


INCIDENT_CLI_COLUMNS = ["incident_id", "run", "attempt", "root_ts", "exit_ts", "failure_mode", "blame", "host",
                        "cluster", "provider", "gpu_hours_lost", "evidence_count"]


@main.command()
@click.option("--run", help="Only this run.")
@json_option
@click.pass_context
def incidents(ctx, run, as_json):
    """One row per incident: root-cause time, exit, failure mode, blame, host, GPU-hours lost, evidence."""
    with _open(ctx, read_only=True) as lab:
        frame = lab.incidents(run)
    frame = frame.select([c for c in [*INCIDENT_CLI_COLUMNS, "overridden", "status"] if c in frame.columns])
    if as_json:
        emit_json(records(frame.rename({"incident_id": "id", "root_ts": "start", "exit_ts": "end"})))
    else:
        print_frame(frame)


def _print_attribution(a) -> None:
    mfu = (f"steady MFU {a.steady_mfu:.1%}, effective {a.effective_mfu:.1%}" if a.steady_mfu is not None
           else "MFU unknown")
    click.echo(f"{a.run}: {a.gpus} GPUs x {a.wall_hours:.2f} h = {a.gpu_hours:.1f} GPU-hours; {mfu}")
    print_frame(a.ledger.with_columns(pl.col("gpu_hours").round(3), pl.col("lost_mfu").round(4)))
    print_frame(a.incidents.select("incident_id", "failure_mode", "host", "blame", "action",
                                   pl.col("gpu_hours_lost").round(3), pl.col("usd_lost").round(2)))
    for note in a.notes:
        click.echo(f"note: {note}")


@main.command()
@click.option("--run", required=True, help="The run to account for.")
@json_option
@click.pass_context
def attribute(ctx, run, as_json):
    """The GPU-time ledger of a run: every GPU-hour in one category, tied to incident, mode, host, provider."""
    with _open(ctx, read_only=True) as lab:
        try:
            a = lab.attribute(run)
        except (KeyError, LedgerError) as e:
            click.echo(f"error: {run}: {e.args[0] if e.args else e}", err=True)
            ctx.exit(EXIT_BAD_INPUT)
        emit_json(a.to_dict()) if as_json else _print_attribution(a)


@main.command()
@click.argument("incident_id")
@click.option("--mode", "failure_mode", help="The failure mode it really was.")
@click.option("--host", help="The host really at fault.")
@click.option("--blame", type=click.Choice(["provider", "user", "unknown"]))
@click.option("--note", help="What a reviewer found.")
@click.option("--ticket", help="The provider's ticket reference.")
@click.option("--status", type=click.Choice(["open", "with_provider", "resolved"]))
@click.option("--author", help="Who says so.")
@click.pass_context
def annotate(ctx, incident_id, **fields):
    """Confirm or override an incident (mode, host, blame) and track its ticket; reports show the override."""
    with _open(ctx) as lab:
        try:
            lab.annotate(incident_id, **fields)
        except ValueError as e:
            click.echo(f"error: {e}", err=True)
            ctx.exit(EXIT_BAD_INPUT)
    click.echo(f"annotated {incident_id}")


@main.command()
@click.option("--out", type=click.Path(path_type=Path), default=Path("clusterlab-demo"), show_default=True,
              help="Folder for the demo database and outputs (recreated).")
@click.option("--samples", type=click.Path(path_type=Path, exists=True), default=SAMPLES / "bundle",
              show_default=False, help="Evidence bundle to use (default: the embedded data_samples/bundle).")
@click.pass_context
def demo(ctx, out: Path, samples: Path):
    """The main job on the embedded samples: ingest, attribution, reports and the dry-run relaunch plan."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    db = out / "clusterlab.duckdb"
    click.echo(f"# clusterlab demo: ingesting {samples} into {db}")
    with Lab(db) as lab:
        status = run_ingest(lab, [samples], None, None, None, None, as_json=False)
        click.echo("\n# runs")
        print_frame(lab.runs())
        click.echo("\n# evidence by failure mode")
        print_frame(lab.sql("""
            SELECT failure_mode, count(*) AS events, count(DISTINCT host) AS hosts,
                   min(ts) AS first, max(ts) AS last
            FROM events WHERE failure_mode IS NOT NULL GROUP BY ALL ORDER BY events DESC"""))
        click.echo("\n# hardware evidence (first line per host and kind)")
        print_frame(lab.sql("""
            SELECT ts, host, kind, failure_mode, xid, text FROM events
            WHERE source = 'kernel' AND failure_mode IS NOT NULL
            QUALIFY row_number() OVER (PARTITION BY host, kind ORDER BY ts) = 1 ORDER BY ts"""))
        for run in lab.runs()["run"].to_list():
            click.echo(f"\n# attribution: {run}")
            try:
                _print_attribution(lab.attribute(run))
            except LedgerError as e:
                click.echo(f"no ledger: {e}")
        week = latest_week(lab.con)
        if week:
            reports = out / "reports"
            paths = write_week(lab.con, week, reports, ("html", "md"))
            n = sum(1 for p in paths if p.name.startswith("incident-") and p.suffix == ".html")
            click.echo(f"\n# reports: the {week} scorecard and {n} incident reports (HTML and Markdown) in {reports}")
            click.echo(f"open {reports / f'scorecard-{week}.html'}")
        runs = lab.runs()
        if runs.height:  # the biggest run is the one worth getting going again
            run = runs.sort(["gpus", "wall_hours"], descending=True)["run"][0]
            click.echo(f"\n# relaunch (dry run): clusterlab --db {db} relaunch --run {run}")
            try:
                print_plan(lab.relaunch_plan(run))
            except (KeyError, ValueError) as e:
                click.echo(f"no relaunch plan: {e}")
    click.echo(f"\nexplore it: clusterlab --db {db} incidents")
    ctx.exit(status)


if __name__ == "__main__":
    main()

"""The `clusterlab` command: a thin layer over `clusterlab.Lab`."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import sys
from pathlib import Path
from typing import NoReturn

import click
import duckdb
import polars as pl

from clusterlab import goodput, steady_state
from clusterlab.changes_cli import change_group
from clusterlab.lab import Lab
from clusterlab.lake import LakeError
from clusterlab.lake_cli import ENGINES, spark_ingest_status
from clusterlab.lake_cli import export as export_command
from clusterlab.ledger import LedgerError
from clusterlab.preflight import preflight
from clusterlab.reader import InputError
from clusterlab.relaunch.cli import print_plan
from clusterlab.relaunch.cli import relaunch as relaunch_command
from clusterlab.reports.cli import COMMANDS as REPORT_COMMANDS
from clusterlab.reports.render import write_week
from clusterlab.reports.scorecard import latest_week
from clusterlab.simulator.cli import simulate
from clusterlab.simulator.sink import OutDirError, check_out_dir, mark_out_dir
from clusterlab.store import DEFAULT_DB, DatabaseLocked, db_path
from clusterlab.taxonomy import MODES
from clusterlab.ticket_cli import ticket_group
from clusterlab.watch.cli import metrics as metrics_command
from clusterlab.watch.cli import watch as watch_command
from clusterlab.whatif_cli import what_if_command

EXIT_BAD_INPUT = 2
SAMPLES = Path(__file__).resolve().parent.parent / "data_samples"
CREATES_DB = frozenset({"ingest", "watch"})  # the commands that may create a missing database (demo makes its own)
DB_MAGIC = b"DUCK"  # bytes 8-11 of every DuckDB file
TEXT_FLOOR = 20  # characters of log text a table keeps before it cuts or drops other columns
KEEP_WHOLE = frozenset({"incident_id", "id", "run", "host"})  # identifiers to copy: a table never cuts them
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # kept off the terminal


def _jsonable(v):
    if isinstance(v, dt.datetime | dt.date):
        return v.isoformat()
    return v


def records(frame: pl.DataFrame) -> list[dict]:
    """Frame rows as JSON-ready dicts (times in ISO 8601)."""
    return [{k: _jsonable(v) for k, v in row.items()} for row in frame.to_dicts()]


def emit_json(doc) -> None:
    click.echo(json.dumps(doc, default=_jsonable, indent=2))


SKIPPED_SHOWN = 20  # files a directory walk skipped, named one a line before the rest are counted


def fail(message: str) -> NoReturn:
    """One line on stderr, exit status 2."""
    click.echo(f"error: {message}", err=True)
    raise click.exceptions.Exit(EXIT_BAD_INPUT)


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float):
        return f"{v:.4f}".rstrip("0").rstrip(".") if abs(v) < 1e12 else f"{v:.4g}"
    if isinstance(v, dt.datetime):
        return v.isoformat(sep=" ", timespec="seconds")  # --json keeps the microseconds
    if isinstance(v, list):
        return ", ".join(map(_cell, v))
    return _CONTROL.sub("?", str(v))


def _fit(widths: list[int], floors: list[int], width: int, first: int | None) -> list[int]:
    """Column widths that fit `width`: column `first` is cut first, then the widest cuttable one."""
    widths = list(widths)
    excess = sum(widths) + 2 * (len(widths) - 1) - width
    while excess > 0:
        if first is not None and widths[first] > floors[first]:
            i = first
        else:
            i = max(range(len(widths)), key=lambda k: widths[k] - floors[k])
        if widths[i] <= floors[i]:
            break  # nothing left to cut: the terminal wraps, but no identifier is cut
        widths[i] -= 1
        excess -= 1
    return widths


def format_table(frame: pl.DataFrame, width: int) -> tuple[list[str], list[str]]:
    """A frame as plain text lines at most `width` wide, and the columns left out to get there.

    Long text is cut (…), identifiers never; when that is not enough, the rightmost columns go.
    """
    cols = frame.columns
    cells = [[_cell(v) for v in frame[c].to_list()] for c in cols]
    right = [frame[c].dtype.is_numeric() for c in cols]
    natural = [max([len(c), *map(len, col)]) for c, col in zip(cols, cells, strict=True)]
    cuttable = [frame[c].dtype in (pl.String, pl.List(pl.String)) and c not in KEEP_WHOLE for c in cols]
    floors = [min(n, TEXT_FLOOR if c == "text" else max(len(c), 10)) if cut else n
              for c, n, cut in zip(cols, natural, cuttable, strict=True)]
    shown = list(range(len(cols)))
    # NOTE: the first column (the row's identifier) and the log text stay; the others go from the right
    droppable = [i for i in shown[1:] if cols[i] != "text"]
    while droppable and sum(floors[i] for i in shown) + 2 * (len(shown) - 1) > width:
        shown.remove(droppable.pop())
    text = shown.index(cols.index("text")) if "text" in cols else None
    widths = _fit([min(natural[i], max(floors[i], width)) for i in shown], [floors[i] for i in shown], width, text)

    def line(values: list[str]) -> str:
        out = []
        for v, w, i in zip(values, widths, shown, strict=True):
            v = v if len(v) <= w else v[: w - 1] + "…"
            out.append(v.rjust(w) if right[i] else v.ljust(w))
        return "  ".join(out).rstrip()

    rows = [line([cells[i][r] for i in shown]) for r in range(frame.height)]
    return [line([cols[i] for i in shown]), line(["-" * w for w in widths]), *rows], [
        c for i, c in enumerate(cols) if i not in shown]


def print_frame(frame: pl.DataFrame, limit: int | None = None) -> None:
    """A frame as a table that fits the terminal (its first `limit` rows)."""
    if frame.is_empty():
        click.echo("(no rows)")
        return
    width = shutil.get_terminal_size((160, 24)).columns
    lines, hidden = format_table(frame.head(limit) if limit else frame, width)
    for text in lines:
        click.echo(text)
    if hidden:
        click.echo(f"not shown at {width} columns: {', '.join(hidden)} (a wider terminal, or --json)"[:width])


def db_problem(path: str, create: bool) -> str | None:
    """Why `path` cannot be this command's database (None: it can)."""
    if path == ":memory:":
        return None
    p = Path(path)
    if not p.exists():
        return None if create else f"{path}: no such database (check --db; `clusterlab ingest` creates one)"
    if p.is_dir():
        return f"{path}: is a directory, not a DuckDB database"
    try:
        with open(p, "rb") as f:
            head = f.read(12)
    except OSError as e:
        return f"{path}: cannot read: {e.strerror or e}"
    if head[8:12] != DB_MAGIC:
        return f"{path}: not a DuckDB database" + (" (an empty file)" if not head else "")
    return None


def open_error(path: str, e: Exception) -> str:
    """One line for a database that would not open (a lock held by another process, most often)."""
    text = (str(e).splitlines() or [type(e).__name__])[0]
    if isinstance(e, DatabaseLocked):
        return text
    if isinstance(e, duckdb.IOException) and "lock" in text.lower():
        pid = re.search(r"PID (\d+)", str(e))
        return f"{path}: another clusterlab is writing to this database" + (f" (pid {pid[1]})" if pid else "")
    return f"{path}: cannot open database: {text}"


def _open(ctx: click.Context, read_only: bool = False) -> Lab:
    path = ctx.obj["db"]
    try:
        return Lab(path, read_only=read_only and path != ":memory:", lake=ctx.obj.get("lake"))
    except LakeError as e:
        fail(str(e))
    except (duckdb.Error, RuntimeError, OSError) as e:  # locked, foreign or newer than us: one line
        fail(open_error(path, e))


def _db_option(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """`--db` after the command: it wins over the one before; either way the database is checked here."""
    obj = ctx.ensure_object(dict)
    if value is not None:
        obj["db"] = value
    obj.setdefault("db", db_path(None))
    if not ctx.resilient_parsing and (problem := db_problem(obj["db"], ctx.command.name in CREATES_DB)):
        fail(problem)


def _json_option(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    """A command's `--json`, also on when given before the command (`clusterlab --json runs`)."""
    return bool(value or (ctx.obj or {}).get("json"))


json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document and nothing else.")


class _Main(click.Group):
    """The command group; a database locked half-way through a command is one line, not a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (DatabaseLocked, duckdb.IOException) as e:
            if not isinstance(e, DatabaseLocked) and "lock" not in str(e).lower():
                raise
            fail(open_error(ctx.obj["db"], e))


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", envvar="CLUSTERLAB_DB", default=DEFAULT_DB, show_default=True,
              help="DuckDB file (or $CLUSTERLAB_DB); also accepted after the command.")
@click.option("--json", "as_json", is_flag=True, help="The command's --json: one JSON document on stdout.")
@click.option("--lake", type=click.Path(path_type=Path),
              help="Read this Parquet lake (export --parquet, ingest --engine spark) instead of --db's evidence.")
@click.pass_context
def main(ctx: click.Context, db: str, as_json: bool, lake: Path | None) -> None:
    """Diagnostics and postmortems for training runs on rented GPU clusters."""
    ctx.ensure_object(dict)
    if lake is not None and ctx.get_parameter_source("db") is click.core.ParameterSource.DEFAULT:
        db = ":memory:"  # a lake alone: what is written beside it (annotations) lasts as long as the command
    ctx.obj.update(db=db, json=as_json, lake=lake)
    sub = main.commands.get(ctx.invoked_subcommand or "")
    if as_json and sub is not None and not any(p.name == "as_json" for p in sub.params):
        fail(f"{sub.name} has no --json output")


for _command in [*REPORT_COMMANDS, simulate, relaunch_command]:  # scorecard, report, simulate, relaunch
    main.add_command(_command)
main.add_command(preflight)  # clusterlab preflight (torch imported only when it runs)
main.add_command(watch_command)  # clusterlab watch: live detection, alerts, metrics
main.add_command(metrics_command)  # clusterlab metrics: OpenMetrics text of the watched runs
main.add_command(what_if_command)  # clusterlab what-if
main.add_command(change_group)  # clusterlab change add|list|compare
main.add_command(ticket_group)  # clusterlab ticket add|import|list: provider tickets' timelines
main.add_command(export_command)  # clusterlab export --parquet DIR: the store as a Parquet lake


def _progress_bar(enabled: bool):
    if not enabled:
        return None, None
    import time

    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    bar = Progress(TextColumn("ingest"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                   TextColumn("{task.fields[files]} files {task.fields[rate]:.0f}/s"), TimeRemainingColumn(),
                   TextColumn("{task.description}"), transient=True,
                   console=__import__("rich.console").console.Console(stderr=True))
    task = bar.add_task("", total=None, files=0, rate=0.0)
    start, files = time.monotonic(), 0

    def update(done: int, total: int, name: str) -> None:
        nonlocal files
        files += bool(name)  # one call per file read, and a last one without a name
        rate = files / max(time.monotonic() - start, 1e-3)
        bar.update(task, completed=done, total=total, description=name[-50:], files=files, rate=rate)

    return bar, update


def run_ingest(lab: Lab, paths, inventory, run, host, year, as_json: bool, workers: int | None = None) -> int:
    """Ingest, print the summary; the exit status (2 when any input was bad)."""
    bar, update = _progress_bar(not as_json and sys.stderr.isatty())
    try:
        if bar:
            bar.start()
        summary = lab.ingest(*paths, inventory=inventory, run=run, host=host, year=year, progress=update,
                             workers=workers)
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
        for why in summary.skipped[:SKIPPED_SHOWN]:
            click.echo(f"skipped {why}")
        if len(summary.skipped) > SKIPPED_SHOWN:
            click.echo(f"skipped {len(summary.skipped) - SKIPPED_SHOWN} more files (--json lists them all)")
    for m in summary.problems:
        click.echo(f"error: {m}", err=True)
    return EXIT_BAD_INPUT if summary.problems else 0


@main.command()
# NOTE: strings, not Paths: a Path folds the // of a URL (s3a://bucket/...), which --engine spark reads
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--inventory", type=click.Path(), help="inventory.toml describing the fleet (a URL with --engine spark).")
@click.option("--run", help="Run name for files outside a runs/<run>/ directory.")
@click.option("--host", help="Host for files whose lines and path name none.")
@click.option("--year", type=int, help="Year for log formats that print none (default: the file's mtime).")
@click.option("--workers", type=click.IntRange(min=1), help="Parsing processes (default: the number of cores).")
@click.option("--engine", type=click.Choice(ENGINES), default="duckdb", show_default=True,
              help="spark: parse on Spark executors into the Parquet lake --lake (pip install 'clusterlab[spark]').")
@click.option("--lake", type=click.Path(path_type=Path), help="The Parquet lake --engine spark writes (and adds to).")
@click.option("--master", help="Spark master URL (default: spark-submit's, else local[*]).")
@json_option
@click.pass_context
def ingest(ctx, paths, inventory, run, host, year, workers, engine, lake, master, as_json):
    """Ingest evidence files and directories (idempotent; a grown log adds only what is new)."""
    if engine == "spark":
        ctx.exit(spark_ingest_status(lake or ctx.obj.get("lake"), master, paths, inventory, run, host, year, as_json))
    if lake is not None or ctx.obj.get("lake") is not None:
        fail("--lake: the duckdb engine ingests into --db; --engine spark writes a lake")
    with _open(ctx) as lab:
        ctx.exit(run_ingest(lab, paths, inventory, run, host, year, as_json, workers))


@main.command()
@json_option
@click.pass_context
def runs(ctx, as_json):
    """Runs with attempts, GPUs and wall time."""
    with _open(ctx, read_only=True) as lab:
        frame = lab.runs()
    emit_json(records(frame)) if as_json else print_frame(frame)


EVENTS_SHOWN = 50  # table rows of `events` without --limit


@main.command()
@click.option("--host", help="Only this host.")
@click.option("--mode", help="Only this failure mode (see the taxonomy).")
@click.option("--run", help="Only this run.")
@click.option("--kind", help="Only this kind of event (xid, watchdog_timeout, ...).")
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help=f"At most this many rows (table output: {EVENTS_SHOWN}; --json: all).")
@json_option
@click.pass_context
def events(ctx, host, mode, run, kind, limit, as_json):
    """Parsed evidence: ts, host, source, kind, failure_mode, xid, rank, file, line, text."""
    if mode is not None and mode not in MODES:
        fail(f"--mode {mode!r}: no such failure mode; known: {', '.join(MODES)}")
    with _open(ctx, read_only=True) as lab:
        frame = lab.events(host=host, mode=mode, run=run, kind=kind)
    cols = ["ts", "host", "source", "kind", "failure_mode", "xid", "rank", "file", "line", "text"]
    frame = frame.select(cols)
    if as_json:
        emit_json(records(frame.head(limit) if limit else frame))
        return
    shown = min(frame.height, limit or EVENTS_SHOWN)
    where = pl.format("{}:{}", pl.col("file").str.split("/").list.last(), "line").alias("file:line")
    print_frame(frame.select("ts", "host", "kind", "failure_mode", where, "text", "source", "xid", "rank"), shown)
    if shown < frame.height:
        click.echo(f"{shown} of {frame.height} shown (--limit N, or --json for all)")


INCIDENT_CLI_COLUMNS = ["incident_id", "run", "attempt", "root_ts", "exit_ts", "failure_mode", "blame", "host",
                        "cluster", "provider", "gpu_hours_lost", "evidence_count"]
# A table's order: what a narrow terminal keeps comes first (the id already names run and attempt).
INCIDENT_TABLE_COLUMNS = ["incident_id", "gpu_hours_lost", "failure_mode", "blame", "host", "provider", "cluster",
                          "root_ts", "exit_ts", "evidence_count", "overridden", "status", "run", "attempt"]


@main.command()
@click.option("--run", help="Only this run.")
@json_option
@click.pass_context
def incidents(ctx, run, as_json):
    """One row per incident, costliest first: root-cause time, exit, failure mode, blame, host, GPU-hours lost."""
    with _open(ctx, read_only=True) as lab:
        frame = lab.incidents(run)
    frame = (frame.select([c for c in [*INCIDENT_CLI_COLUMNS, "overridden", "status"] if c in frame.columns])
             .sort(["gpu_hours_lost", "root_ts"], descending=[True, False], nulls_last=True))
    if as_json:
        emit_json(records(frame.rename({"incident_id": "id", "root_ts": "start", "exit_ts": "end"})))
    else:
        print_frame(frame.select([c for c in INCIDENT_TABLE_COLUMNS if c in frame.columns]))


@main.command("hosts")
@click.option("--week", help="Only incidents of this ISO week, e.g. 2026-W48.")
@json_option
@click.pass_context
def hosts_cmd(ctx, week, as_json):
    """The costliest hosts across runs: incidents, failure modes, GPU-hours and $ lost, first and last incident."""
    with _open(ctx, read_only=True) as lab:
        try:
            frame = lab.hosts(week)
        except ValueError as e:
            fail(str(e))
    emit_json(records(frame)) if as_json else print_frame(frame)


@main.command("unmatched")
@click.option("--run", help="Only lines of this run's logs.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="Templates to show.")
@json_option
@click.pass_context
def unmatched_cmd(ctx, run, limit, as_json):
    """Trouble-looking lines no rule understood, grouped by template (numbers, hosts, paths masked), commonest first."""
    with _open(ctx, read_only=True) as lab:
        frame = lab.unmatched(run=run, limit=limit)
    if as_json:
        emit_json(records(frame))
    else:
        print_frame(frame.select("lines", "files", "seen_by", "template", "file", "line"))


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
@click.option("--format", "fmt", type=click.Choice(["table", "goodput"]), default="table", show_default=True,
              help="goodput: JSON in ml-goodput-measurement's buckets, with Meta's ETTR.")
@json_option
@click.pass_context
def attribute(ctx, run, fmt, as_json):
    """The GPU-time ledger of a run: every GPU-hour in one category, tied to incident, mode, host, provider."""
    with _open(ctx, read_only=True) as lab:
        try:
            a = lab.attribute(run)
        except (KeyError, LedgerError) as e:
            fail(f"{run}: {e.args[0] if e.args else e}")
        if fmt == "goodput":
            emit_json(goodput.goodput(a))
            return
        emit_json(a.to_dict() | {"steady_state": steady_state.breakdown(lab.con, run, a.steady_mfu).to_dict()}
                  ) if as_json else _print_attribution(a)


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
            fail(str(e))
    click.echo(f"annotated {incident_id}")


@main.command()
@click.option("--out", type=click.Path(path_type=Path), default=Path("clusterlab-demo"), show_default=True,
              help="Folder for the demo database and outputs (recreated if clusterlab made it).")
@click.option("--samples", type=click.Path(path_type=Path, exists=True), default=SAMPLES / "bundle",
              show_default=False, help="Evidence bundle to use (default: the embedded data_samples/bundle).")
@click.option("--force", is_flag=True, help="Replace --out even if clusterlab did not make it.")
@click.pass_context
def demo(ctx, out: Path, samples: Path, force: bool):
    """The main job on the embedded samples: ingest, attribution, reports and the dry-run relaunch plan."""
    try:
        check_out_dir(out, force)
    except OutDirError as e:
        fail(str(e))
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    mark_out_dir(out)
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


NO_DB = frozenset({"simulate", "preflight", "demo"})  # the commands that never open --db


def _share_group_options(group: click.Group) -> None:
    """Every command that opens the database takes --db after it too; a --json before a command is its own."""
    for name, cmd in group.commands.items():
        for p in cmd.params:
            if p.name == "as_json":
                p.callback = _json_option
        if name in NO_DB:
            continue
        if isinstance(cmd, click.Group):
            # NOTE: on its subcommands, not the group: a group's options are checked before `change add --help`
            # would print, so a missing database would hide the help
            _share_group_options(cmd)
            continue
        cmd.params.append(click.Option(["--db"], callback=_db_option, expose_value=False, metavar="PATH",
                                       help="DuckDB file (the same as --db before the command)."))


_share_group_options(main)

if __name__ == "__main__":
    main()

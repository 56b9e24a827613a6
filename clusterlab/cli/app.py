"""The `clusterlab` command: a thin layer over `clusterlab.Lab`."""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

import click
import duckdb
import polars as pl

from clusterlab.cli.changes import change_group
from clusterlab.cli.common import (
    emit_json,
    fail,
    json_flag,
    json_option,
    nothing_to_ingest,
    open_error,
    open_lab,
    print_frame,
    records,
    run_ingest,
    store_options,
)
from clusterlab.cli.lake import ENGINES, spark_ingest_status
from clusterlab.cli.lake import export as export_command
from clusterlab.cli.relaunch import relaunch as relaunch_command
from clusterlab.cli.reports import COMMANDS as REPORT_COMMANDS
from clusterlab.cli.simulate import simulate
from clusterlab.cli.tickets import ticket_group
from clusterlab.cli.watch import metrics as metrics_command
from clusterlab.cli.watch import watch as watch_command
from clusterlab.cli.whatif import what_if_command
from clusterlab.store import DEFAULT_DB, DatabaseLocked
from clusterlab.taxonomy import MODES
from clusterlab.torchtools.preflight import preflight

# NOTE: every command's module is imported here, but what a command does (attribution, reports, the simulator,
# relaunch, watch) is imported inside it: `clusterlab ingest` would otherwise pay 0.3 s to import all of it

SAMPLES = Path(__file__).resolve().parents[2] / "data_samples"


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
@click.version_option(package_name="clusterlab", prog_name="clusterlab", message="%(prog)s %(version)s")
@click.pass_context
def main(ctx: click.Context, db: str, as_json: bool, lake: Path | None) -> None:
    """Diagnostics and postmortems for training runs on rented GPU clusters."""
    ctx.ensure_object(dict)
    if lake is not None and ctx.get_parameter_source("db") is click.core.ParameterSource.DEFAULT:
        db = ":memory:"  # a lake alone: what is written beside it (annotations) lasts as long as the command
    given = ctx.get_parameter_source("db") is not click.core.ParameterSource.DEFAULT
    ctx.obj.update(db=db, db_given=given, json=as_json, lake=lake)
    sub = main.commands.get(ctx.invoked_subcommand or "")
    if as_json and sub is not None and not isinstance(sub, click.Group) and not _takes_json(sub):
        fail(f"{sub.name} has no --json output")  # (a group's commands say so themselves: _refuse_json)


def _takes_json(cmd: click.Command) -> bool:
    return any(p.name == "as_json" for p in cmd.params)


def _refuse_json(name: str, cmd: click.Command) -> None:
    """A group's command without JSON output refuses a --json given before the group (`--json change add`)."""
    run = cmd.callback

    @functools.wraps(run)
    def callback(*args, **kwargs):
        if (click.get_current_context().obj or {}).get("json"):
            fail(f"{name} has no --json output")
        return run(*args, **kwargs)

    cmd.callback = callback


for _command in [*REPORT_COMMANDS, simulate, relaunch_command]:  # scorecard, report, simulate, relaunch
    main.add_command(_command)
main.add_command(preflight)  # clusterlab preflight (torch imported only when it runs)
main.add_command(watch_command)  # clusterlab watch: live detection, alerts, metrics
main.add_command(metrics_command)  # clusterlab metrics: OpenMetrics text of the watched runs
main.add_command(what_if_command)  # clusterlab what-if
main.add_command(change_group)  # clusterlab change add|list|compare
main.add_command(ticket_group)  # clusterlab ticket add|import|list: provider tickets' timelines
main.add_command(export_command)  # clusterlab export --parquet DIR: the store as a Parquet lake


@main.command()
# NOTE: strings, not Paths: a Path folds the // of a URL (s3a://bucket/...), which --engine spark reads
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--inventory", type=click.Path(), help="inventory.toml describing the fleet (a URL with --engine spark).")
@click.option("--run", help="Run name for files outside a runs/<run>/ directory.")
@click.option("--host", help="Host for files whose lines and path name none.")
@click.option("--year", type=int, help="Year for log formats that print none (default: the year the evidence's "
              "own dated stamps show, else the file's mtime).")
@click.option("--workers", type=click.IntRange(min=1), help="Parsing processes (default: the number of cores).")
@click.option("--epoch", type=click.DateTime(["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S"]),
              help="Day 0 (UTC) of files that count days since their start (a fault trace's event_time).")
@click.option("--engine", type=click.Choice(ENGINES), default="duckdb", show_default=True,
              help="spark: parse on Spark executors into the Parquet lake --lake (pip install 'clusterlab[spark]').")
@click.option("--lake", type=click.Path(path_type=Path), help="The Parquet lake --engine spark writes (and adds to).")
@click.option("--master", help="Spark master URL (default: spark-submit's, else local[*]).")
@json_option
@click.pass_context
def ingest(ctx, paths, inventory, run, host, year, workers, epoch, engine, lake, master, as_json):
    """Ingest evidence files and directories (idempotent; a grown log adds only what is new)."""
    if engine == "spark":
        ctx.exit(spark_ingest_status(lake or ctx.obj.get("lake"), master, paths, inventory, run, host, year, as_json))
    if lake is not None or ctx.obj.get("lake") is not None:
        fail("--lake: the duckdb engine ingests into --db; --engine spark writes a lake")
    if problem := nothing_to_ingest(paths):  # before the database is opened: a typo creates no empty one
        fail(problem)
    with open_lab(ctx) as lab:
        ctx.exit(run_ingest(lab, paths, inventory, run, host, year, as_json, workers, epoch))


@main.command()
@json_option
@click.pass_context
def runs(ctx, as_json):
    """Runs with attempts, GPUs and wall time."""
    with open_lab(ctx, read_only=True) as lab:
        frame = lab.runs()
    emit_json(records(frame)) if as_json else print_frame(frame)


@main.command("attempts")
@click.option("--run", required=True, help="The run.")
@json_option
@click.pass_context
def attempts_cmd(ctx, run, as_json):
    """A run's attempts as the ledger divides them: span, what gave it (sacct or its logs), job, steps; and each
    host's clock offset from the run's log where the ranks' shared step ends measure it."""
    with open_lab(ctx, read_only=True) as lab:
        if run not in set(lab.runs()["run"].to_list()):
            fail(f"no run {run!r} in the store")
        try:
            spans, notes, clocks = lab.spans(run)
        except KeyError as e:
            fail(str(e.args[0]))
        steps = lab.attempts(run).select("attempt", "first_step", "last_step", "n_hosts")
    frame = spans.join(steps, on="attempt", how="left").select(
        "attempt", "start_ts", "end_ts", "start_by", "end_by", "job_id", "first_step", "last_step", "n_hosts",
        "ev_start_ts", "ev_end_ts")
    if as_json:
        emit_json({"attempts": records(frame), "notes": notes, "host_clocks": records(clocks)})
        return
    print_frame(frame)
    for n in notes:
        click.echo(n)
    if clocks.height:
        click.echo("host clocks (seconds ahead of the run's log):")
        print_frame(clocks)


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
    with open_lab(ctx, read_only=True) as lab:
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
    with open_lab(ctx, read_only=True) as lab:
        try:
            frame = lab.incidents(run)
        except KeyError as e:
            fail(str(e.args[0]))
    frame = (frame.select([c for c in [*INCIDENT_CLI_COLUMNS, "overridden", "status"] if c in frame.columns])
             .sort(["gpu_hours_lost", "root_ts"], descending=[True, False], nulls_last=True))
    if as_json:  # the table's names: one incident reads the same in both, and in `attribute --json`
        emit_json(records(frame))
    else:
        print_frame(frame.select([c for c in INCIDENT_TABLE_COLUMNS if c in frame.columns]))


@main.command("hosts")
@click.option("--week", help="Only incidents of this ISO week, e.g. 2026-W48.")
@json_option
@click.pass_context
def hosts_cmd(ctx, week, as_json):
    """The fleet's memory per host across runs and weeks: incidents, failure modes, GPU-hours and $ lost, fault
    episodes (a fault trace, an episode CSV, slurmctld DOWN / DRAIN to RESUME), hours in repair, jobs killed."""
    with open_lab(ctx, read_only=True) as lab:
        try:
            frame = lab.hosts(week)
        except ValueError as e:
            fail(str(e))
    # NOTE: the counts first in the terminal (a narrow one drops the last columns); --json keeps the frame's order
    first = ["host", "incidents", "episodes", "gpu_hours_lost", "repair_hours", "jobs_killed", "failure_modes",
             "episode_modes"]
    emit_json(records(frame)) if as_json else print_frame(frame.select(*first, pl.exclude(first)))


@main.command("unmatched")
@click.option("--run", help="Only lines of this run's logs.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="Templates to show.")
@json_option
@click.pass_context
def unmatched_cmd(ctx, run, limit, as_json):
    """Trouble-looking lines no rule understood, grouped by template (numbers, hosts, paths masked), commonest first."""
    with open_lab(ctx, read_only=True) as lab:
        frame = lab.unmatched(run=run, limit=limit)
    if as_json:
        emit_json(records(frame))
    else:
        print_frame(frame.select("lines", "files", "seen_by", "template", "file", "line"))


def _print_attribution(a) -> None:
    mfu = (f"steady MFU {a.steady_mfu:.1%}, effective {a.effective_mfu:.1%}" if a.steady_mfu is not None
           else "MFU unknown")
    # NOTE: the ledger's hours are the scheduler's allocation, gaps included (`runs`: first to last log line)
    click.echo(f"{a.run}: {a.gpus} GPUs x {a.wall_hours:.2f} h allocated = {a.gpu_hours:.1f} GPU-hours; {mfu}")
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
    from clusterlab.account import goodput, steady_state
    from clusterlab.account.ledger import LedgerError

    with open_lab(ctx, read_only=True) as lab:
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
    with open_lab(ctx) as lab:
        if lab.lake is not None and lab.path == ":memory:":  # the command ends, and the annotation with it
            fail("an annotation over a lake is kept in a database: give one (--db FILE) beside --lake")
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
    from clusterlab.account.ledger import LedgerError
    from clusterlab.cli.relaunch import print_plan
    from clusterlab.lab import Lab
    from clusterlab.reports.render import write_week
    from clusterlab.reports.scorecard import latest_week
    from clusterlab.simulator.sink import OutDirError, check_out_dir, mark_out_dir

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
NO_LAKE = frozenset({"ingest", "watch", "metrics"})  # ingest's --lake is the one it writes; watch reads files


def _share_group_options(group: click.Group) -> None:
    """Every command that opens the database takes --db (and --lake) after it too; a --json before a command is
    its own."""
    for name, cmd in group.commands.items():
        for p in cmd.params:
            if p.name == "as_json":
                p.callback = json_flag
        if name in NO_DB:
            continue
        if isinstance(cmd, click.Group):
            # NOTE: the group only notes them (`change --db X list`); its subcommands check: a group's options
            # are handled before `change add --help` would print, so a missing database would hide the help
            cmd.params.extend(store_options(check_db=False))
            _share_group_options(cmd)
            for sub_name, sub in cmd.commands.items():
                if not _takes_json(sub):
                    _refuse_json(f"{name} {sub_name}", sub)
            continue
        db, lake = store_options()
        cmd.params.extend([db] if name in NO_LAKE else [db, lake])


_share_group_options(main)

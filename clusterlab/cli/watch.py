"""`clusterlab watch` and `clusterlab metrics`: thin commands over `clusterlab.watch`."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import click

from clusterlab import store
from clusterlab.cli.common import EXIT_BAD_INPUT
from clusterlab.ingest.reader import InputError

# NOTE: `clusterlab.watch` is imported by the command that runs: every other command would pay for it


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    raise click.exceptions.Exit(EXIT_BAD_INPUT)


@click.command()
@click.option("--run", required=True, help="The run the evidence belongs to.")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--interval", type=click.FloatRange(min=0.1), default=5.0, show_default=True,
              help="Seconds between ticks.")
@click.option("--hang-after", "hang_min_s", type=click.FloatRange(min=1), default=120.0, show_default=True,
              help="T: no progress for max(k x baseline step, T) seconds is a hang.")
@click.option("--hang-steps", type=click.FloatRange(min=1), default=10.0, show_default=True,
              help="k: baseline steps without progress that make a hang (at least --hang-after).")
@click.option("--events", "events_file", type=click.Path(path_type=Path, dir_okay=False),
              help="Append each detection to this file as a JSON Lines record.")
@click.option("--on-alert", "on_alert", multiple=True, metavar="ARG",
              help="Program (then its arguments, one --on-alert each) run with the event's JSON on stdin; never a "
                   "shell.")
@click.option("--repeat-after", "repeat_s", type=click.FloatRange(min=0), default=300.0, show_default=True,
              help="Seconds before the same kind of alert on the same host is sent again.")
@click.option("--metrics", "metrics_at", metavar="[HOST:]PORT", help="Serve OpenMetrics here (loopback by default).")
@click.option("--metrics-any-host", is_flag=True, help="Allow --metrics on an address that is not loopback.")
@click.option("--textfile", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the metrics to this node-exporter textfile after each tick.")
@click.option("--relaunch", "relaunch_mode", type=click.Choice(["ask", "auto"]), default=None,
              help="On a detection the policy names: propose the relaunch plan (ask) or execute it (auto).")
@click.option("--policy", "policy_file", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="policy.toml: relaunches per hour, intact checkpoint, modes that drain, cancel a hung job.")
@click.option("--ticks", type=click.IntRange(min=1), default=None, help="Stop after this many ticks.")
@click.pass_context
def watch(ctx, run, paths, interval, hang_min_s, hang_steps, events_file, on_alert, repeat_s, metrics_at,
          metrics_any_host, textfile, relaunch_mode, policy_file, ticks):
    """Follow a running job's evidence: live state, hang / failure / straggler / node alerts, metrics."""
    from clusterlab.watch import metrics as prom
    from clusterlab.watch.alerts import Alerter
    from clusterlab.watch.detect import WatchSettings
    from clusterlab.watch.loop import Watcher
    from clusterlab.watch.policy import Policy, load_policy
    from clusterlab.watch.relaunch import PolicyRelaunch

    db = ctx.obj["db"]
    if db == ":memory:":
        _fail("watch needs a database file (--db PATH): readers open it between ticks")
    snap = None
    if metrics_at:
        try:
            host, port = prom.listen_address(metrics_at, metrics_any_host)
            snap, _server = prom.serve(host, port)
        except (ValueError, OSError) as e:
            _fail(str(e))
        click.echo(f"watch: metrics on http://{host}:{port}/metrics")
    after_tick = []
    if snap is not None or textfile:
        def refresh(con, res) -> None:
            fams = prom.families(con, run)
            if snap is not None:
                snap.metrics = fams
            if textfile:
                prom.write_textfile(str(textfile), fams)
        after_tick.append(refresh)
    say = lambda m: click.echo(m, err=True)  # noqa: E731
    after_close = []
    if relaunch_mode:
        try:
            policy = load_policy(policy_file) if policy_file else Policy()
        except InputError as e:
            _fail(str(e))
        after_close.append(PolicyRelaunch(db, policy, relaunch_mode, say=say))
    alerter = Alerter(events_file=events_file, program=list(on_alert) or None, repeat_s=repeat_s)
    watcher = Watcher(db, run, list(paths), settings=WatchSettings(hang_min_s=hang_min_s, hang_steps=hang_steps),
                      alerter=alerter, after_tick=after_tick, after_close=after_close, say=say)
    stop = threading.Event()
    # NOTE: SIGTERM / Ctrl-C let the tick under way finish (its state is in the file), then the watch stops
    before = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    click.echo(f"watch: run {run}, {len(paths)} path(s), every {interval:g} s; database {db}", err=True)
    try:
        watcher.run(interval=interval, stop=stop, max_ticks=ticks)
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
    click.echo(watcher.stopped_line(), err=True)


@click.command()
@click.option("--run", help="Only this run.")
@click.option("--textfile", type=click.Path(path_type=Path, dir_okay=False),
              help="Write a node-exporter textfile instead of printing.")
@click.pass_context
def metrics(ctx, run, textfile):
    """OpenMetrics text of the watched runs: goodput, step rate against baseline, lost GPU-hours, open incidents."""
    from clusterlab.watch import metrics as prom

    try:
        con = store.connect(ctx.obj["db"], read_only=ctx.obj["db"] != ":memory:")
    except store.DatabaseLocked as e:
        _fail(str(e))
    try:
        if not con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'watch_state'"
                           ).fetchall()[0][0]:
            _fail(f"{ctx.obj['db']}: no watch has run on this database (`clusterlab watch` keeps the metrics)")
        fams = prom.families(con, run)
    finally:
        con.close()
    if textfile:
        prom.write_textfile(str(textfile), fams)
    else:
        click.echo(prom.text(fams), nl=False)

"""`clusterlab relaunch`: print a run's relaunch plan (dry run) or execute it."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from clusterlab import store
from clusterlab.cli.common import EXIT_BAD_INPUT
from clusterlab.lab import Lab

if TYPE_CHECKING:
    from clusterlab.relaunch.plan import RelaunchPlan

# NOTE: `clusterlab.relaunch` (the plan, its backends) is imported when the command runs or its help is shown:
# every other command would pay for it

EXIT_FAILED = 1  # the relaunch was attempted and did not take


def _json_default(v):
    return v.isoformat() if isinstance(v, dt.datetime | dt.date) else str(v)


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> None:
    click.echo(f"error: {message}", err=True)
    raise click.exceptions.Exit(code)


def print_plan(plan: RelaunchPlan) -> None:
    """The plan for a person: what is excluded and why, the checkpoint, the nodes, the command."""
    click.echo(f"relaunch plan for {plan.run} (incident {plan.incident}, backend {plan.backend})")
    if plan.nothing_to_relaunch:
        click.echo(f"  nothing to relaunch: {plan.nothing_to_relaunch}")
    for e in plan.exclude:
        click.echo(f"  exclude {e.host}: {e.reason} [{e.failure_mode}, {e.incident or 'preflight'}]")
        for line in e.evidence[:1]:
            click.echo(f"      {line['file']}:{line['line']}: {line['text'][:140]}")
    for d in plan.drain:
        click.echo(f"  drain   {d['host']}: {d['reason']}")
    c = plan.checkpoint
    state = "verified" if c.verified else "NOT verified"
    click.echo(f"  resume from step {c.step} ({state}): {c.path}" if c.step is not None else "  resume: from scratch")
    for s in c.skipped:
        click.echo(f"  skipped checkpoint step {s['step']}: {s['failure_mode']}: {s['reason']}")
    click.echo(f"  nodes: {plan.nodes_needed} needed, {plan.nodes_available} healthy available")
    click.echo(f"  recompute: {plan.recompute_gpu_hours:.3f} GPU-hours since that checkpoint")
    click.echo("  command: " + (" ".join(_quote(a) for a in plan.command) or "(none)"))
    for w in plan.warnings:
        click.echo(f"  warning: {w}")


class _Backends(click.Choice):
    """The relaunch backends' names, read from `clusterlab.relaunch` when first needed."""

    def __init__(self) -> None:
        super().__init__(())

    @property
    def choices(self):
        from clusterlab.relaunch.backends import BACKENDS

        return sorted(BACKENDS)

    @choices.setter
    def choices(self, value) -> None:  # (click.Choice sets them; they are BACKENDS' names)
        pass


def _quote(arg: str) -> str:
    """An argument shown as one word (display only: the command is never given to a shell)."""
    return arg if arg and all(ch.isalnum() or ch in "-_=./:,[]@%+" for ch in arg) else json.dumps(arg)


@click.command("relaunch")
@click.option("--run", required=True, help="The run to relaunch.")
@click.option("--backend", type=_Backends(), help="Default: run.toml's launcher.")
@click.option("--execute", "do_execute", is_flag=True, help="Drain, launch and record it (default: dry run).")
@click.option("--watch", "watch_s", type=float, default=60.0, show_default=True,
              help="Seconds to watch the relaunched job for its first steps.")
@click.option("--watch-dir", type=click.Path(path_type=Path, file_okay=False),
              help="Where the new attempt writes its logs (runs/<run>/): its first steps are read from there.")
@click.option("--release", "release_id", type=int, metavar="AUDIT_ROW",
              help="Give back the claim of a launch whose process died mid-launch (after checking the scheduler).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document and nothing else.")
@click.pass_context
def relaunch(ctx: click.Context, run: str, backend: str | None, do_execute: bool, watch_s: float,
             watch_dir: Path | None, release_id: int | None, as_json: bool) -> None:
    """The relaunch plan of a run: hosts to exclude and drain, the intact checkpoint, the command."""
    from clusterlab.relaunch.execute import RelaunchRefused, execute
    from clusterlab.relaunch.plan import relaunch_plan
    from clusterlab.relaunch.safety import UnsafeValueError

    path = store.db_path((ctx.obj or {}).get("db"))
    if release_id is not None:
        _release(path, release_id)
        return
    lake = (ctx.obj or {}).get("lake")
    if not do_execute and path != ":memory:" and not Path(path).exists():
        _fail(f"{path}: no database (run `clusterlab ingest` first)")
    if do_execute and lake is not None and path == ":memory:":
        _fail("relaunch --execute over a lake needs a database (--db FILE) to keep its audit and claims")
    try:
        # (over a lake, the plan reads the lake's evidence through a Lab, which attaches it)
        con = (Lab(path, read_only=not do_execute and path != ":memory:", lake=lake).con if lake is not None
               else store.connect(path, read_only=not do_execute and path != ":memory:"))
    except store.DatabaseLocked as e:
        _fail(str(e))
    except Exception as e:  # a foreign file: say so in one line
        _fail(f"{path}: cannot open database: {e}")
    try:
        try:
            plan = relaunch_plan(con, run, backend=backend)
        except (KeyError, ValueError) as e:  # UnsafeValueError is a ValueError
            _fail(f"{run}: {e.args[0] if e.args else e}")
        status = 0
        if do_execute:
            try:
                ex = execute(con, plan, watch_s=watch_s, watch_dir=watch_dir)
            except (RelaunchRefused, UnsafeValueError) as e:
                _fail(f"{run}: relaunch refused: {e}")
            plan.executed = ex.to_dict()
            status = EXIT_FAILED if ex.result in ("failed", "job_failed") else 0
    finally:
        con.close()
    if as_json:
        click.echo(json.dumps(plan.to_dict(), default=_json_default, indent=2))
    else:
        print_plan(plan)
        if plan.executed:
            _print_execution(plan.executed)
    ctx.exit(status)


def _release(path: str, relaunch_id: int) -> None:
    from clusterlab.relaunch.execute import RelaunchRefused, release

    if path != ":memory:" and not Path(path).exists():
        _fail(f"{path}: no database")
    try:
        con = store.connect(path)
    except store.DatabaseLocked as e:
        _fail(str(e))
    try:
        incident = release(con, relaunch_id)
    except RelaunchRefused as e:
        _fail(f"cannot release: {e}")
    finally:
        con.close()
    click.echo(f"claim of audit row {relaunch_id} given back: incident {incident} may be relaunched")


def _print_execution(ex: dict) -> None:
    """What executing did: hosts refused, each command run (with the scheduler's answer when it failed), the job."""
    if ex["repeat"]:
        click.echo(f"{ex['note']}: nothing launched")
        return
    for r in ex.get("refused_hosts") or []:
        click.echo(f"  refused host {r['host']}: {r['reason']} (left out of the scheduler's commands)")
    note = ex.get("note") or ""
    for c in ex["commands"]:
        click.echo(f"  ran: {' '.join(_quote(a) for a in c['argv'])} -> {c['returncode']}")
        if c["returncode"] and c["output"] and c["output"] not in note:  # the note below already says it
            for line in c["output"].splitlines()[-5:]:
                click.echo(f"       {line}")
    steps = ex["first_steps"]
    loss = f" (loss {steps['loss']:.4f})" if steps and steps.get("loss") is not None else ""
    seen = f"; first steps {steps['first_step']}..{steps['last_step']} ran{loss}" if steps else ""
    if ex["result"] == "failed":
        click.echo(f"relaunch failed, nothing launched (audit row {ex['relaunch_id']}): {note or 'no reason given'}")
        return
    click.echo(f"job {ex['job_id']}: {ex['result']}{seen} (audit row {ex['relaunch_id']})")
    if note:
        click.echo(f"  note: {note}")

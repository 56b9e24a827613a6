"""`clusterlab what-if`: a thin command over `clusterlab.whatif.what_if`.

It takes the database from the parent group's context; `clusterlab.cli.app` registers the command."""

from __future__ import annotations

import click

from clusterlab.cli.common import emit_json, fail, open_lab, print_frame


class _PolicyOption(click.Option):
    """--policy, whose help names the policies: read from `clusterlab.whatif` when the help is shown, so that
    the command line does not import the what-if analysis (and the attribution under it) for every command."""

    def get_help_record(self, ctx: click.Context):
        from clusterlab.whatif.what_if import POLICIES

        self.help = (f"A policy to price (repeatable; default: all): {', '.join(POLICIES)}. "
                     "E.g. hang_timeout=120, checkpoint_interval=600, provider=borealis.")
        return super().get_help_record(ctx)


@click.command("what-if")
@click.option("--run", required=True, help="The run whose ledger to re-price.")
@click.option("--policy", "policies", cls=_PolicyOption, multiple=True, metavar="NAME[=SECONDS|PROVIDER]",
              help="A policy to price (repeatable; default: all).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document and nothing else.")
@click.pass_context
def what_if_command(ctx: click.Context, run: str, policies: tuple[str, ...], as_json: bool) -> None:
    """What the run would have cost under other policies: GPU-hours and $ saved, with the assumptions."""
    from clusterlab.account.ledger import LedgerError
    from clusterlab.whatif.what_if import PolicyError

    with open_lab(ctx, read_only=True) as lab:
        try:
            w = lab.what_if(run, list(policies) or None)
        except PolicyError as e:
            fail(str(e))
        except (KeyError, LedgerError) as e:
            fail(f"{run}: {e.args[0] if e.args else e}")
    if as_json:
        emit_json(w.to_dict())
        return
    print_frame(w.summary.select("policy", "setting", "gpu_hours_saved", "usd_saved", "gpu_hours_extra",
                                 "categories", "verdict"))
    for p in w.pricings:
        for line in p.assumptions:
            click.echo(f"assumes ({p.policy}): {line}")

"""`clusterlab simulate`: the click command (registered in the main CLI)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from clusterlab.cli.common import EXIT_BAD_INPUT


@click.command("simulate")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory to write the bundle to (replaced if clusterlab made it; else refused without --force).")
@click.option("--scenario", type=click.Choice(["fleet", "demo"]), default="fleet", show_default=True,
              help="fleet: a random fleet sized by the options below; demo: the hand-placed story of "
              "data_samples/bundle/ (`clusterlab demo`), which ignores them.")
@click.option("--seed", default=0, show_default=True, type=int, help="The same seed gives the same bytes.")
@click.option("--providers", default=2, show_default=True, type=click.IntRange(1, 8))
@click.option("--clusters-per-provider", default=2, show_default=True, type=click.IntRange(1, 26))
@click.option("--nodes-per-cluster", default=16, show_default=True, type=click.IntRange(1, 999))
@click.option("--days", default=1.0, show_default=True, type=click.FloatRange(min=0.01))
@click.option("--gpus-per-node", default=8, show_default=True, type=click.IntRange(1, 8))
@click.option("--failure-scale", default=1.0, show_default=True, type=click.FloatRange(min=0.0),
              help="Multiply the published failure rates (Llama 3, 16k H100s, 54 days).")
@click.option("--step-s", default=None, type=click.FloatRange(min=0.5), help="Every run's steady step time.")
@click.option("--no-scenarios", is_flag=True, help="No guaranteed lost checkpoint, straggler and stalled save.")
@click.option("--adversarial", is_flag=True, help="Scripted scheduler ends, decoys, partial per-rank timings, clock "
              "skew and a missing node log, with the decoys listed apart in truth.json.")
@click.option("--cases", is_flag=True, help="With --adversarial: also the root-cause cases (a rank that hangs first, "
              "a storage target several hosts report, operator maintenance, a sticky GPU fault, a row remap left "
              "pending or reset, a gloo hang, silent data corruption, a rollback and a checkpoint with incomplete "
              "shards).")
@click.option("--telemetry", is_flag=True, help="dcgm-exporter scrapes for the job's hosts: each straggler's slow "
              "GPU throttling (truth: gpu_throttle on that GPU), a hot GPU that does not throttle as a decoy, and each "
              "noticeable job-wide slowdown a bulk NFS transfer by a host outside the job (truth: filesystem_io on "
              "the first host it reached, with outside_host).")
@click.option("--gzip", is_flag=True, help="Compress the training logs and per-rank step files.")
@click.option("--force", is_flag=True, help="Replace --out even if clusterlab did not make it.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def simulate(out: Path, scenario: str, seed: int, providers: int, clusters_per_provider: int, nodes_per_cluster: int,
             days: float, gpus_per_node: int, failure_scale: float, step_s: float | None, no_scenarios: bool,
             adversarial: bool, cases: bool, telemetry: bool, gzip: bool, force: bool, as_json: bool) -> None:
    """Write a synthetic fleet's evidence bundle, in real log formats, with truth.json."""
    # (imported here: the simulator is a tenth of a second that no other command needs)
    from clusterlab.simulator.bundle import simulate as _simulate
    from clusterlab.simulator.demo import write_demo
    from clusterlab.simulator.sink import OutDirError, check_out_dir, mark_out_dir
    from clusterlab.simulator.telemetry import add_telemetry

    if cases and not adversarial:
        click.echo("error: --cases needs --adversarial (the cases are scripted into its runs)", err=True)
        raise click.exceptions.Exit(EXIT_BAD_INPUT)
    try:
        check_out_dir(out, force)
    except OutDirError as e:
        click.echo(f"error: {e}", err=True)
        raise click.exceptions.Exit(EXIT_BAD_INPUT) from None
    if scenario == "demo":
        res = write_demo(out)
    else:
        res = _simulate(out, seed=seed, providers=providers, clusters_per_provider=clusters_per_provider,
                        nodes_per_cluster=nodes_per_cluster, days=days, gpus_per_node=gpus_per_node, gzip=gzip,
                        failure_scale=failure_scale, step_s=step_s, scenarios=not no_scenarios,
                        adversarial=adversarial, cases=cases)
        if telemetry:
            add_telemetry(out, seed)
    mark_out_dir(out)
    doc = {"out": str(res.path), "files": res.files, "bytes": res.bytes, "text_bytes": res.text_bytes,
           "runs": res.runs, "attempts": res.attempts,
           "incidents": res.incidents, "rank_step_records": res.rank_step_records, "seconds": round(res.seconds, 2)}
    if as_json:
        click.echo(json.dumps(doc))
    else:
        click.echo(f"wrote {res.files} files, {res.bytes / 1e6:.1f} MB, {res.runs} runs, {res.attempts} attempts, "
                   f"{res.incidents} incidents to {res.path} in {res.seconds:.1f} s (truth: {res.truth})")


if __name__ == "__main__":
    simulate()

"""`simulate()`: a synthetic fleet written as an evidence bundle, with its truth."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path

from clusterlab.simulator import adversarial as adv
from clusterlab.simulator import failures, nodes, rank_steps, scheduler, timeline, trainlog, truth
from clusterlab.simulator.failure_model import FailureModel, llama3_rates
from clusterlab.simulator.fleet import Config, clusters, inventory_toml
from clusterlab.simulator.sink import Sink
from clusterlab.simulator.stamps import from_ms
from clusterlab.simulator.timeline import SEQ, Attempt, Run


@dataclass(frozen=True)
class SimulationResult:
    """What `simulate` wrote."""

    path: Path
    files: int
    bytes: int  # on disk
    text_bytes: int  # before compression (equal to `bytes` without gzip)
    runs: int
    attempts: int
    incidents: int
    rank_step_records: int
    seconds: float

    @property
    def truth(self) -> Path:
        """The bundle's truth.json."""
        return self.path / "truth.json"


def simulate(out: Path | str, seed: int = 0, providers: int = 2, clusters_per_provider: int = 2,
             nodes_per_cluster: int = 16, days: float = 1.0, gpus_per_node: int = 8, gzip: bool = False,
             failure_scale: float = 1.0, step_s: float | None = None, save_every_s: float = 1800.0,
             scenarios: bool = True, rates: dict[str, float] | None = None,
             adversarial: bool = False, cases: bool = False) -> SimulationResult:
    """Write a simulated fleet's evidence bundle (and truth.json) to `out`, replacing what is there.

    failure_scale multiplies the per-GPU-hour failure rates (a small fleet over a day sees few
    failures at 1.0); rates replaces them (taxonomy mode -> interruptions per GPU-hour; default: the
    Llama 3 mix, `failure_model.llama3_rates()`); step_s fixes every run's steady step time;
    scenarios guarantees a lost checkpoint, a straggler and a stalled save where the fleet has room;
    adversarial adds scripted scheduler ends, decoys, partial per-rank timings, clock skew and a
    missing node log (`clusterlab.simulator.adversarial`), with the decoys listed apart in truth.json;
    cases (with adversarial) scripts the root-cause cases of issue 29 too (`adversarial.CASES`).
    """
    unknown = set(rates or {}) - set(llama3_rates())
    if unknown:
        known = ", ".join(sorted(llama3_rates()))
        raise ValueError(f"no simulated failure mode {sorted(unknown)[0]!r}; known: {known}")
    if not 1 <= gpus_per_node <= 8:
        raise ValueError("gpus_per_node must be 1 to 8")
    if days <= 0 or nodes_per_cluster < 1 or providers < 1 or clusters_per_provider < 1:
        raise ValueError("days, nodes, providers and clusters must be positive")
    began = time.perf_counter()
    cfg = Config(seed=seed, providers=providers, clusters_per_provider=clusters_per_provider,
                 nodes_per_cluster=nodes_per_cluster, days=days, gpus_per_node=gpus_per_node, gzip=gzip,
                 failure_scale=failure_scale, step_s=step_s, save_every_s=save_every_s, scenarios=scenarios,
                 adversarial=adversarial, cases=adversarial and cases,
                 model=FailureModel(rates=dict(rates) if rates is not None else llama3_rates(), scale=failure_scale))
    fleet = clusters(cfg)
    runs = [timeline.build(cfg, c) for c in fleet]
    sink = Sink(Path(out), gzip_big=gzip)
    sink.text("inventory.toml", inventory_toml(cfg, fleet))
    benign: list[dict] = []
    mess = truth.Mess()  # what the adversarial family did to the evidence (stays empty otherwise)
    evidence_files: dict[str, list[str]] = {}
    records = 0
    rows: list[str] = []
    for cluster, run in zip(fleet, runs, strict=True):
        for att in run.attempts:
            att.job_id = str((cluster.index + 1) * 10_000 + att.k)
        sink.text(f"runs/{run.name}/run.toml", run_toml(run))
        skew = adv.skews(cfg, cluster) if cfg.adversarial else {}
        ev, n, fakes = _write_run(sink, cfg, run, evidence_files, skew, mess)
        records += n
        kernel = _kernel_events(run, ev)
        missing = (adv.missing_logs(cluster, kernel, random.Random(f"{seed}:{cluster.name}:missing"))
                   if cfg.adversarial else set())
        extra, b = nodes.decoys(cfg, cluster, run, random.Random(f"{seed}:{cluster.name}:decoys"))
        if cfg.adversarial:
            blip, rows_b = adv.spare_blip(cfg, cluster, run, random.Random(f"{seed}:{cluster.name}:blip"))
            for host, items in blip.items():
                extra.setdefault(host, []).extend(items)
            for host, ms, msg in fakes:
                extra.setdefault(host, []).append((ms, msg))
            mess.add_cluster(run, b, rows_b, skew, missing)
            for key, paths in evidence_files.items():  # a log that is not there shows nothing
                evidence_files[key] = [x for x in paths if x.split("/")[:2] not in [["nodes", h] for h in missing]]
        for host, items in extra.items():
            kernel.setdefault(host, []).extend(items)
        benign += b
        nodes.write(sink, cfg, cluster, kernel, random.Random(f"{seed}:{cluster.name}:nodes"), skew, missing)
        scheduler.slurmctld(sink, cfg, cluster, run, ev, random.Random(f"{seed}:{cluster.name}:slurmctld"))
        rows += scheduler.sacct_rows(cluster, run, ev)
    scheduler.sacct(sink, rows)
    text, n_inc = truth.document(cfg, fleet, runs, benign, evidence_files, mess)
    sink.text("truth.json", text)
    last = max(a.end_ms for r in runs for a in r.attempts) if any(r.attempts for r in runs) else cfg.window_ms[1]
    size = sink.finish(from_ms(last + 3_600_000).timestamp())
    attempts = sum(len(r.attempts) for r in runs)
    return SimulationResult(Path(out), len(sink.paths), size, sink.text_bytes, len(runs), attempts, n_inc, records,
                            time.perf_counter() - began)


def run_toml(run: Run) -> str:
    """Facts about the run that its logs do not state reliably."""
    name, params, layers, hidden = run.shape
    limit = f" --time={run.limit_ms // 60_000}" if run.limit_ms else ""  # minutes
    return "\n".join([
        f"# {name} pre-training on {run.cluster.name} (simulated)", f'cluster = "{run.cluster.name}"',
        f"gpus = {run.gpus}", f"tokens_per_step = {run.tokens_per_step}", f"params = {params}",
        f"layers = {layers}", f"hidden = {hidden}", f"seq_len = {SEQ}", f'checkpoint_dir = "{trainlog.ckpt_dir(run)}"',
        'launcher = "slurm"', f'launch_command = "sbatch --job-name={run.name} --nodes={run.cluster.run_nodes} '
        f'--gpus-per-node={run.cluster.gpus_per_node} --exclusive --partition=gpu{limit} train.sbatch"', ""])


def _write_run(sink: Sink, cfg: Config, run: Run, files: dict[str, list[str]], skew: dict[str, int],
               mess: truth.Mess) -> tuple[dict[int, failures.Evidence], int, list[tuple[str, int, str]]]:
    """Every attempt's console and per-rank step files; the evidence their endings left elsewhere,
    and the decoys' kernel lines (adversarial)."""
    out: dict[int, failures.Evidence] = {}
    records, saved, prev_rollback = 0, 0, False
    fakes: list[tuple[str, int, str]] = []
    for att in run.attempts:
        r = random.Random(f"{cfg.seed}:{run.name}:{att.k}:log")
        procs, agents = trainlog.procs_for(run, att, r)
        if prev_rollback:  # the team went back on purpose: the saves after its step are abandoned, not lost
            saved = min(saved, att.resumed_from)
        lost = saved if att.resumed_from < saved else None
        saved = max(saved, att.last_save() or 0)
        prev_rollback = att.ending.case == "rollback"
        base = f"runs/{run.name}/attempt-{att.k}"
        lines: dict[int, list[str]] = {}
        if cfg.adversarial:
            att.coverage = adv.coverage(run, att, random.Random(f"{cfg.seed}:{run.name}:{att.k}:cover"))
            kern, lines, rows = adv.attempt_decoys(run, att, procs,
                                                           random.Random(f"{cfg.seed}:{run.name}:{att.k}:decoy"))
            fakes += kern
            mess.decoys += rows
        with sink.open(f"{base}/train.log", big=True) as log:
            log.write(trainlog.startup(run, att, procs, agents, r, lost, shards=cfg.cases).render())
            trainlog.training(log, run, att, r, junk=run.cluster.index == 0 and att.k == 1, extra=lines)
            end, ev = failures.ending(run, att, procs, agents, r, f"{cfg.seed}:{run.name}")
            log.write(end.render())
        out[att.k] = ev
        lo, hi, written = att.coverage or (0, len(att.steps), tuple(range(len(att.hosts))))
        for node in written if hi > lo else ():
            with sink.open(f"{base}/steps/{att.hosts[node]}.jsonl", big=True) as f:
                records += rank_steps.write_node(f, run, att, node, cfg.seed, lo, hi, skew.get(att.hosts[node], 0))
        _evidence_paths(files, run, att, ev, sink, base)
    return out, records, fakes


def _evidence_paths(files: dict[str, list[str]], run: Run, att: Attempt, ev: failures.Evidence, sink: Sink,
                    base: str) -> None:
    """Which files show each incident (for truth.json's `evidence`)."""
    log = f"{base}/train.log" + (".gz" if sink.gzip_big else "")
    node = "kern.log" if nodes.style(run.cluster) == "journal" else "dmesg"
    e = att.ending
    paths = [log] + [f"nodes/{h}/{node}" for h in sorted({h for h, _, _ in ev.kernel})]
    if ev.ctld:
        paths.append(f"scheduler/{run.cluster.name}/slurmctld.log")
    files[f"{run.name}:{att.k}:{adv.truth_mode(e)}"] = paths
    if att.stragglers:
        files[f"{run.name}:{att.k}:straggler"] = [f"{base}/steps/{s.host}.jsonl" + (".gz" if sink.gzip_big else "")
                                                  for s in att.stragglers]
    stalls = sorted({sv.stall_host for sv in att.saves if sv.stall_host and sv.complete})
    if stalls:
        files[f"{run.name}:{att.k}:filesystem_io"] = [log] + [f"nodes/{h}/{node}" for h in stalls]


def _kernel_events(run: Run, ev: dict[int, failures.Evidence]) -> dict[str, list[tuple[int, str]]]:
    """Kernel lines per host: the failures' root causes and the stalled saves' filesystem errors."""
    out = nodes.stall_lines(run)
    for e in ev.values():
        for host, ms, msg in e.kernel:
            out.setdefault(host, []).append((ms, msg))
    return out


"""The timeline of one cluster's training run: launches, steps, saves, episodes and what ended each.

Everything is in integer epoch milliseconds and drawn from one seeded generator per cluster, so
the writers print exactly these numbers and the truth is computed from them.
"""

from __future__ import annotations

import numpy as np

from clusterlab.simulator import adversarial, endings
from clusterlab.simulator.failure_model import HARDWARE
from clusterlab.simulator.fleet import Cluster, Config, clusters
from clusterlab.simulator.runs import Attempt, Ending, Run, Save, Straggler
from clusterlab.simulator.steps import Episode, StepArrays, StepModel, add_saves, apply, draw, restamp

MIN_STEPS = 20  # every launch trains at least this many steps before anything can end it
PEAK_BF16 = 989e12  # H100 SXM dense bf16 FLOP/s
# (name, parameters, layers, hidden): the model each cluster's run trains, in turn
MODELS = (("llama8b", 8_030_261_248, 32, 4096), ("llama13b", 13_015_864_320, 40, 5120),
          ("llama34b", 33_743_970_304, 48, 8192))
SEQ = 4096


def plan_run(cfg: Config, cluster: Cluster, rng: np.random.Generator) -> Run:
    """The run's model, batch and step time (tokens chosen so that MFU is 38-45 %)."""
    shape = MODELS[cluster.index % len(MODELS)]
    step_ms = int(round(1000 * (cfg.step_s or rng.uniform(5.0, 9.0))))
    gpus = cluster.run_nodes * cluster.gpus_per_node
    flops_per_token = 6 * shape[1] + 12 * shape[2] * shape[3] * SEQ
    tokens = step_ms / 1000 * gpus * PEAK_BF16 * rng.uniform(0.38, 0.45) / flops_per_token
    gbs = max(gpus, int(round(tokens / SEQ / gpus)) * gpus)
    comm = int(round(step_ms * rng.uniform(0.10, 0.16)))
    data = int(rng.integers(1, 4))
    model = StepModel(compute_ms=step_ms - comm - data, data_ms=data, comm_ms=comm)
    save_every = max(10, int(round(cfg.save_every_s / (step_ms / 1000) / 10)) * 10)
    run = Run(f"pretrain-{cluster.name}", cluster, model, save_every, gbs * SEQ, shape)
    run.hang_ms = int(cfg.hang_timeout_s * 1000) if cfg.hang_timeout_s else None
    if cfg.adversarial:
        run.log_every = 1  # every step's own interval in the log: the ledger can be exact where ranks are silent
        # the second cluster's runs print like Megatron-DeepSpeed: one iteration line in ten with its time
        run.stamp_every = 10 if cluster.index % 4 == 1 else 1
        run.limit_ms = adversarial.time_limit_ms(cfg)
    return run


def episodes(cfg: Config, cluster: Cluster, rng: np.random.Generator) -> list[Episode]:
    """Stragglers, slowdowns and data stalls over the whole window, in time order."""
    lo, hi = cfg.window_ms
    p = cluster.profile
    out = []
    for kind, rate, steps, value in (
            ("straggler", p.stragglers_per_node_day * cluster.run_nodes, (30, 300), (1.2, 1.5)),
            ("slowdown", p.slowdowns_per_day, (50, 400), (1.05, 1.15)),
            ("data_stall", p.data_stalls_per_day, (3, 30), (500.0, 6000.0))):
        for _ in range(rng.poisson(rate * cfg.days)):
            out.append(Episode(kind, int(rng.integers(lo, hi)), int(rng.integers(*steps)), float(rng.uniform(*value)),
                               float(rng.random())))
    if cfg.scenarios and cluster.index == 0:
        out.append(Episode("straggler", lo + (hi - lo) // 5, 120, 1.3, 0.5))
    return sorted(out, key=lambda e: (e.at_ms, e.kind))


def start(cfg: Config, cluster: Cluster
          ) -> tuple[np.random.Generator, Run, list[Episode], dict[str, float], dict[str, int], int]:
    """What every way of building a cluster's run begins with: its generator, plan, slow episodes, failure
    rates, when each node is in service again, and the first launch's time."""
    rng = np.random.default_rng([cfg.seed, cluster.index, 1])
    run = plan_run(cfg, cluster, rng)
    eps = episodes(cfg, cluster, rng)
    rates = cfg.model.cluster_rates(cluster.profile)
    back = dict.fromkeys(cluster.hosts, 0)
    return rng, run, eps, rates, back, cfg.window_ms[0] + int(rng.integers(60_000, 900_000))


def build(cfg: Config, cluster: Cluster) -> Run:
    """The whole run on one cluster, launch after launch until the window closes."""
    rng, run, eps, rates, back, t = start(cfg, cluster)
    lo, hi = cfg.window_ms
    available: list[Save] = []  # durable checkpoints
    lose = cfg.scenarios and _first_bad(cfg, cluster)  # the provider will lose a checkpoint here
    run.stall_pending = cfg.scenarios and cluster.index == min(1, cfg.providers * cfg.clusters_per_provider - 1)
    k, sticky, extra = 1, None, 0  # extra: the launches the script does not count (a sticky fault's second)
    while True:
        hosts = tuple(sorted(h for h in cluster.hosts if back[h] <= t)[: cluster.run_nodes])
        if len(hosts) < cluster.run_nodes:
            t = sorted(back.values())[cluster.run_nodes - 1]
            continue
        if lose and len(available) >= 2:
            available.pop().deleted = True  # the newest checkpoint is gone when the relaunch looks for it
            lose = False
        resume = available[-1].step if available else 0
        att = _attempt(cfg, run, k, hosts, t, resume, rates, eps, rng, (lo + (hi - lo) * 9 // 20) if lose else None,
                       sticky if sticky in hosts else None, k - extra)
        extra += sticky in hosts
        sticky = None
        if att is None:
            break
        run.attempts.append(att)
        available += [s for s in att.saves if s.complete]
        if att.ending.case == "rollback" and len(available) >= 2:
            available.pop()  # the team goes back past the newest save (not lost: abandoned, still on disk)
        if (att.ending.kill or att.ending.mode) == "time_limit" and att.ending.trigger_ms >= hi:
            break  # the campaign's window is over
        if att.ending.case == "sticky":  # nobody drained the node: the next launch lands on its faulty GPU
            sticky = att.ending.host
        elif att.ending.mode in HARDWARE and att.ending.host:
            back[att.ending.host] = att.end_ms + int(rng.uniform(*cluster.profile.repair_h) * 3_600_000)
            run.repairs.append((att.ending.host, att.end_ms, back[att.ending.host]))
        t = att.end_ms + int(rng.uniform(*cluster.profile.restart_s) * 1000)
        k += 1
    return run


def _first_bad(cfg: Config, cluster: Cluster) -> bool:
    """Whether this is the fleet's first bad cluster (the one that loses a checkpoint)."""
    return next((c.index for c in clusters(cfg) if c.profile.name == "bad"), -1) == cluster.index


def _attempt(cfg: Config, run: Run, k: int, hosts: tuple[str, ...], start: int, resume: int,
             rates: dict[str, float], eps: list[Episode], rng: np.random.Generator,
             forced_at: int | None, sticky: str | None = None, slot: int | None = None) -> Attempt | None:
    """One launch: start-up, steps until its failure or the window's end, and the ending (`sticky`: the host
    whose GPU memory failed under the launch before, not drained: this launch dies of it in its first step; `slot`:
    its place in the adversarial script, k less the sticky launches before it, which the script does not count)."""
    lo, hi = cfg.window_ms
    m = run.model
    load = int(rng.uniform(15_000, 40_000)) if resume else 0
    startup = int(rng.uniform(55_000, 110_000)) + load
    first_start = start + startup
    earliest = first_start + MIN_STEPS * 3 * m.step_ms
    if earliest >= hi:
        return None
    total = sum(rates.values()) * run.gpus / 3_600_000  # failures per ms
    fail = start + int(rng.exponential(1 / total)) if total > 0 else None
    modes = sorted(m for m in rates if rates[m] > 0)
    mode = str(rng.choice(modes, p=np.array([rates[m] for m in modes]) / sum(rates.values()))) if modes else ""
    if forced_at is not None and forced_at > earliest and (fail is None or fail > forced_at):
        fail, mode = forced_at, "gpu_fell_off_bus"
    if len(hosts) == 1 and mode in endings.LINK:
        mode = "gpu_hw_other"  # a one-node run has no peer to lose: what breaks is the node's GPU
    script = adversarial.scripted(run, slot or k, cfg.seed, cfg.cases) if cfg.adversarial else None
    limit_at = adversarial.job_start_ms(start) + run.limit_ms if run.limit_ms else None
    if script is not None:
        # a scripted ending replaces the random failure; it comes well before the job's time limit
        fail, mode = adversarial.scripted_fail(script, start, limit_at, rng)
    if sticky is not None:  # its first allocations hit the faulty rows: one step logged, then the crash
        script, fail, mode = None, first_start + 3 * m.step_ms, "gpu_memory_ecc"
    elif fail is not None:
        fail = max(fail, earliest)
    if limit_at is not None and limit_at <= earliest:
        limit_at = None
    if limit_at is not None and (fail is None or fail >= limit_at) and limit_at < hi:
        fail, mode = limit_at, "time_limit"
    horizon = fail if fail is not None and fail < hi else hi
    steps, saves = _steps(cfg, run, resume + 1, first_start, horizon, hosts, rng)
    if sticky is not None:  # killed in its second step, whatever the first one's warm-up took
        fail = horizon = int(steps.end[0]) + int(0.3 * m.step_ms)
    att = Attempt(run.name, k, hosts, start, startup, load, resume, steps, saves, _ending_placeholder())
    _apply_episodes(att, run, eps, first_start, horizon)
    att.saves = _saves(att, horizon)
    if any(sv.stall_host and sv.complete for sv in att.saves):
        run.stall_pending = False
    run.normal_saves += sum(1 for sv in att.saves if sv.complete and not sv.stall_host)
    if fail is None or fail >= hi:
        root = (hi // 1000 + 1) * 1000  # Slurm's time limit is checked on a whole second
        att.ending = _ending(run, att, "time_limit", root, None, rng)
    else:
        if mode == "filesystem_io":
            # NOTE: a filesystem that fails while a save is writing failed under that save, the heaviest write the
            # job makes: the outage is dated at the save's start (the story of the outsiders' campaign2 and of the
            # blind lightning_slurm), so the time after it is hang, not save work thrown away
            fail = next((sv.start_ms + 200 for sv in att.saves if not sv.complete and sv.start_ms <= fail), fail)
        att.ending = _ending(run, att, mode, fail, sticky or hosts[int(rng.integers(len(hosts)))], rng)
        att.ending.case = "sticky_init" if sticky else None
    if script is not None:
        adversarial.shape_ending(script, run, att, limit_at, rng)
    return att


def _ending_placeholder() -> Ending:
    """An ending to fill in once the steps are known."""
    return Ending("unknown", None, None, 0, 0, 0)


def _steps(cfg: Config, run: Run, first_step: int, first_start: int, horizon: int, hosts: tuple[str, ...],
           rng: np.random.Generator) -> tuple[StepArrays, list[Save]]:
    """Jittered steps with their saves (some of which stall) up to the horizon."""
    m = run.model
    n = int((horizon - first_start) / (0.85 * m.step_ms)) + 40
    s = draw(m, first_step, n, rng)
    p = run.cluster.profile
    slots = int((s.step % run.save_every == 0).sum())
    dur = np.rint(rng.uniform(*p.save_s, slots) * 1000).astype(np.int64)
    stall = rng.random(slots) < p.stall_per_save
    if run.stall_pending:  # the scenario's stalled save: the first one allowed
        stall[:] = np.arange(slots) == max(0, 3 - run.normal_saves)
    # a stall stands out only against normal saves: none before the run has made three
    normal = run.normal_saves + np.cumsum(np.concatenate([[0], ~stall[:-1]])) if slots else np.zeros(0)
    stall &= normal >= 3
    dur[stall] = np.rint(rng.uniform(*p.stall_s, int(stall.sum())) * 1000).astype(np.int64)
    add_saves(s, run.save_every, dur)
    restamp(s, m, first_start)
    stall_steps = set(s.step[s.step % run.save_every == 0][stall].tolist())
    return s, [Save(int(st), 0, 0, False, hosts[int(rng.integers(len(hosts)))] if st in stall_steps else None)
               for st in sorted(stall_steps)]


def _apply_episodes(att: Attempt, run: Run, eps: list[Episode], first_start: int, horizon: int) -> None:
    """Apply the episodes that start inside this launch, then cut the steps at the horizon."""
    s = att.steps
    applied = []
    for ep in eps:
        if first_start <= ep.at_ms < horizon:
            got = apply(s, ep, run.model, first_start, len(att.hosts))
            if got:
                applied.append((ep, got))
    n = int(np.searchsorted(s.end, horizon, side="right"))
    att.steps = s.cut(n)
    for ep, (i, j) in applied:
        j = min(j, n)
        if ep.kind != "straggler":
            if i < n:
                att.slowdowns.append((ep.kind, int(s.step[i]), int(s.step[j - 1]), ep.value))
        elif j - i >= MIN_STEPS:
            att.stragglers.append(Straggler(att.hosts[int(s.slow[i])], int(s.step[i]), int(s.step[j - 1]),
                                            int(s.end[i - 1]), int(s.end[j - 1]), ep.value))
        elif i < n:
            # cut short by the failure: too few slow steps to pin on a host, so every rank waits
            # alike (the time stays, as a slowdown); `s` and `att.steps` share their arrays
            s.slow[i:j] = -1
            s.factor[i:j] = 1.0


def _saves(att: Attempt, horizon: int) -> list[Save]:
    """The saves after kept steps: complete when they finished before the horizon."""
    s = att.steps
    stall_hosts = {sv.step: sv.stall_host for sv in att.saves}
    out = []
    for i in np.nonzero(s.save_after > 0)[0]:
        start = int(s.end[i])
        end = start + int(s.save_after[i])
        step = int(s.step[i])
        out.append(Save(step, start, end, end <= horizon, stall_hosts.get(step)))
    return out


def _ending(run: Run, att: Attempt, mode: str, root: int, host: str | None, rng: np.random.Generator) -> Ending:
    """What ended the launch: its cause, the culprit rank, and when the job noticed and exited."""
    gpn = run.cluster.gpus_per_node
    if mode in ("preemption", "manual_stop"):
        root = (root // 1000 + 1) * 1000
    culprit = None if endings.family(mode) == "scheduler" else att.hosts.index(host)
    rank = None if culprit is None else culprit * gpn + int(rng.integers(gpn))
    last_end = int(att.steps.end[-1])
    base = max(root, last_end + 50) if endings.family(mode) == "hang" else root
    trigger = base + endings.trigger_delay_ms(mode, run.hang_ms) + int(rng.integers(5, 120))
    if endings.family(mode) == "scheduler":
        trigger = root
    exit_ms = endings.exit_ms(mode, trigger, len(att.hosts), culprit)
    # a time limit, a person's stop: no single host is to blame. A hang with no deeper cause still has the rank
    # that stopped first (it alone is missing from the others' watchdog timeouts): its host is the suspect
    blamed = None if mode in ("time_limit", "manual_stop") else host if culprit is not None else att.hosts[0]
    return Ending(mode, blamed, rank, root, trigger, exit_ms)

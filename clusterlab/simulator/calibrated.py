"""A fleet failure model fitted to a real fault history: class mix, heterogeneous per-node rates, repair times.

`fit` reads fault episodes (`Lab.episodes()` of an ingested trace, e.g. InfiniteHBD-Trace) and keeps:

- the class mix: each fault class's share of the episodes (`Level / Class` where the source gives a level),
  and the taxonomy mode each class is mostly seen as;
- per-node rates: a node's rate is drawn from a gamma distribution (shape `shape`, mean `mean_faults` over
  `days`), so its count is negative binomial. The shape comes from the counts' mean m and variance v (the fleet's
  nodes that never faulted counted as zeros): shape = m^2 / (v - m). A small shape is a heavy tail of repeat
  offenders; an infinite one, every node alike (Poisson);
- repair times: log-normal, fitted to the episodes' positive durations, with the share that lasted no time.

`sample` draws a fleet's fault history from the fit; `rates_per_gpu_hour` turns it into the per-mode rates that
`clusterlab.simulator.simulate(rates=...)` takes; `campaign` runs a training campaign on the whole model (each node
its own rate, the culprit of a failure drawn by those rates, repairs drawn from the fit), as
`simulator.policy.campaign` does on the even Llama 3 rates, for the what-if's validation. Every fit names its
`source`; `infinitehbd()` is InfiniteHBD-Trace's, kept for where the trace is not at hand.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from clusterlab.simulator import endings
from clusterlab.simulator.failure_model import HARDWARE, FailureModel, llama3_rates
from clusterlab.simulator.fleet import Config, clusters
from clusterlab.simulator.runs import Attempt, Run
from clusterlab.simulator.timeline import _attempt, start

INFINITEHBD = "InfiniteHBD-Trace (github.com/stepfun-ai/InfiniteHBD-Trace @7aacdc8, Apache-2.0; arXiv 2502.03885)"


@dataclass(frozen=True)
class FleetFit:
    """A fleet's failure model as fitted to one fault history."""

    source: str
    fleet_size: int
    days: float
    classes: dict[str, float]  # fault class -> share of the episodes
    modes: dict[str, dict[str, float]]  # fault class -> taxonomy mode -> its share of the class's episodes
    mean_faults: float  # episodes per node over `days`
    shape: float  # gamma shape of the per-node rates (math.inf: every node alike)
    repair_mu: float  # log-normal repair time: mean and sd of ln(hours) (from their median and quartiles)
    repair_sigma: float
    repair_zero: float  # share of episodes that lasted no time

    def rates_per_gpu_hour(self, gpus_per_node: int = 8) -> dict[str, float]:
        """Episodes per GPU-hour by taxonomy mode (modes the simulator does not draw folded into gpu_hw_other)."""
        known = set(llama3_rates())
        per = self.mean_faults * self.fleet_size / (self.fleet_size * gpus_per_node * self.days * 24)
        out: dict[str, float] = {}
        for cls, share in self.classes.items():
            for mode, part in self.modes[cls].items():
                mode = mode if mode in known else "gpu_hw_other"
                out[mode] = out.get(mode, 0.0) + per * share * part
        return out


# InfiniteHBD-Trace as `fit` reads it (ingested with --epoch 2024-03-30): its 584 episodes by taxonomy mode, the
# span and the fitted shape and repair times. The simulator needs no more than the modes' shares; the classes are
# the trace's (tests/test_fleet_calibration.py fits the trace again and checks these).
INFINITEHBD_MODES = {"node_failure": 280, "network": 73, "host_hw": 69, "gpu_hw_other": 64, "gpu_memory_ecc": 61,
                     "pcie_error": 26, "gpu_fell_off_bus": 6, "filesystem_io": 3, "gpu_throttle": 2}
INFINITEHBD_FIT = {"fleet_size": 400, "days": 345.0843, "shape": 0.9294497, "repair_mu": 3.0984422,
                   "repair_sigma": 2.5374728, "repair_zero": 14 / 584}


def infinitehbd() -> FleetFit:
    """InfiniteHBD-Trace's fit, from the figures above: one class per taxonomy mode (the same rates by mode)."""
    total = sum(INFINITEHBD_MODES.values())
    return FleetFit(source=INFINITEHBD, classes={m: n / total for m, n in INFINITEHBD_MODES.items()},
                    modes={m: {m: 1.0} for m in INFINITEHBD_MODES},
                    mean_faults=total / INFINITEHBD_FIT["fleet_size"], **INFINITEHBD_FIT)  # type: ignore[arg-type]


def class_key(frame: pl.DataFrame) -> pl.Expr:
    """`Level / Class` where the level is known, else the class."""
    cls = pl.col("fault_class").fill_null("unknown")
    if "level" not in frame.columns:
        return cls
    return pl.when(pl.col("level").is_not_null()).then(pl.format("{} / {}", "level", cls)).otherwise(cls)


def fit(episodes: pl.DataFrame, fleet_size: int, source: str, days: float | None = None) -> FleetFit:
    """The failure model of a fault history of `fleet_size` nodes (those never in it never faulted)."""
    eps = episodes.filter(pl.col("ts").is_not_null()).with_columns(_cls=class_key(episodes))
    if not eps.height:
        raise ValueError("no fault episodes to fit")
    if days is None:
        last = eps.select(pl.max_horizontal(pl.col("end_ts").max(), pl.col("ts").max())).item()
        days = (last - eps["ts"].min()).total_seconds() / 86_400
    # NOTE: sorted: `sample` draws classes by their order here, so a seed gives the same fleet every time
    mix = eps.group_by("_cls").len().with_columns(share=pl.col("len") / eps.height).sort("_cls")
    modes: dict[str, dict[str, float]] = {}
    for r in (eps.group_by("_cls", "failure_mode").len().with_columns(part=pl.col("len") / pl.col("len").sum()
                                                                     .over("_cls")).sort("_cls", "failure_mode")
              .iter_rows(named=True)):
        modes.setdefault(r["_cls"], {})[r["failure_mode"] or "node_failure"] = r["part"]
    counts = eps.group_by("host").len()["len"].to_numpy().astype(float)
    if len(counts) > fleet_size:
        raise ValueError(f"{len(counts)} hosts faulted in a fleet of {fleet_size}")
    counts = np.concatenate([counts, np.zeros(fleet_size - len(counts))])
    m, v = float(counts.mean()), float(counts.var())
    hours = eps.filter(pl.col("end_ts").is_not_null()).select(
        h=(pl.col("end_ts") - pl.col("ts")).dt.total_microseconds() / 3.6e9)["h"].to_numpy()
    # NOTE: fitted by its median and interquartile range, not the mean and sd of the logs: repair times are
    # skewed even in log space (a few cables waited months), and the median is what the fleet mostly sees
    pos = np.log(hours[hours > 0])
    q25, q50, q75 = np.quantile(pos, [0.25, 0.5, 0.75]) if len(pos) else (0.0, 0.0, 0.0)
    return FleetFit(
        source=source, fleet_size=fleet_size, days=float(days),
        classes=dict(zip(mix["_cls"].to_list(), mix["share"].to_list(), strict=True)),
        modes=modes,
        mean_faults=m, shape=m * m / (v - m) if v > m else math.inf,
        repair_mu=float(q50), repair_sigma=float((q75 - q25) / 1.349),
        repair_zero=float((hours <= 0).mean()) if len(hours) else 0.0,
    )


def sample(f: FleetFit, rng: np.random.Generator, fleet_size: int | None = None,
           days: float | None = None) -> pl.DataFrame:
    """A fleet's fault history drawn from the fit: host, start and end (days), fault class, failure mode."""
    n, span = fleet_size or f.fleet_size, days or f.days
    mean = f.mean_faults * span / f.days
    rates = (rng.gamma(f.shape, mean / f.shape, n) if math.isfinite(f.shape) else np.full(n, mean))
    counts = rng.poisson(rates)
    total = int(counts.sum())
    classes = list(f.classes)
    cls = rng.choice(len(classes), size=total, p=np.array([f.classes[c] for c in classes]))
    repair = np.where(rng.random(total) < f.repair_zero, 0.0,
                      np.exp(rng.normal(f.repair_mu, f.repair_sigma, total))) / 24
    start = rng.uniform(0, span, total)
    mode = [_pick(f.modes[classes[i]], u) for i, u in zip(cls, rng.random(total), strict=True)]
    return pl.DataFrame({
        "host": np.repeat([f"node-{i:04d}" for i in range(n)], counts),
        "start_day": start, "end_day": start + repair,
        "fault_class": [classes[i] for i in cls], "failure_mode": mode,
    }, schema={"host": pl.String, "start_day": pl.Float64, "end_day": pl.Float64, "fault_class": pl.String,
               "failure_mode": pl.String})


def _pick(shares: dict[str, float], u: float) -> str:
    """The mode whose cumulative share first passes `u`."""
    acc = 0.0
    for mode, part in shares.items():
        acc += part
        if u < acc:
            return mode
    return next(reversed(shares))


def ks_2samp(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """The two-sample Kolmogorov-Smirnov statistic and its asymptotic p-value (conservative for counts, which tie)."""
    a, b = np.sort(np.asarray(a, float)), np.sort(np.asarray(b, float))
    grid = np.concatenate([a, b])
    d = float(np.max(np.abs(np.searchsorted(a, grid, side="right") / len(a)
                            - np.searchsorted(b, grid, side="right") / len(b))))
    en = math.sqrt(len(a) * len(b) / (len(a) + len(b)))
    lam = (en + 0.12 + 0.11 / en) * d
    return d, _kolmogorov_q(lam)


def _kolmogorov_q(lam: float) -> float:
    """P(K > lam) of the Kolmogorov distribution, by the series that converges fast on each side of 1.18."""
    if lam <= 0:
        return 1.0
    if lam < 1.18:
        y = math.exp(-math.pi ** 2 / (8 * lam * lam))
        cdf = math.sqrt(2 * math.pi) / lam * sum(y ** ((2 * j - 1) ** 2) for j in range(1, 20))
        return float(min(max(1.0 - cdf, 0.0), 1.0))
    p = 2 * sum((-1) ** (j - 1) * math.exp(-2 * j * j * lam * lam) for j in range(1, 101))
    return float(min(max(p, 0.0), 1.0))


def node_weights(f: FleetFit, hosts: Sequence[str], rng: np.random.Generator) -> dict[str, float]:
    """Each node's failure rate against the fleet's mean: a gamma draw of shape `f.shape` and mean 1 (every node 1
    where the fit found no spread)."""
    if not math.isfinite(f.shape):
        return dict.fromkeys(hosts, 1.0)
    return dict(zip(hosts, rng.gamma(f.shape, 1 / f.shape, len(hosts)).tolist(), strict=True))


def repair_ms(f: FleetFit, rng: np.random.Generator) -> int:
    """One repair's length in ms, drawn from the fit (none for the share that lasted no time)."""
    u, z = rng.random(), rng.normal(f.repair_mu, f.repair_sigma)
    return 0 if u < f.repair_zero else int(math.exp(z) * 3_600_000)


def campaign(cfg: Config, f: FleetFit, scale: float = 1.0, cluster_index: int = 0) -> Run:
    """One cluster's run on the fit's failure model, with common random numbers across policies (as
    `simulator.policy.campaign`, which runs the even Llama 3 rates; `cfg.model` is not read).

    Each node keeps one rate for the campaign (`node_weights`, times the fit's rates by mode at `scale`, times the
    cluster's quality): a launch fails at the sum of its nodes' rates, in the fit's mode mix, and the node to blame
    is drawn by their rates, so the heavy tail fails again and again. A failed node is out for a repair drawn from
    the fit; the launch after waits for enough nodes. The weights, culprits and repairs come from generators of
    their own (seed, cluster, launch), so a policy that changes what a launch draws changes none of them."""
    cluster = clusters(cfg)[cluster_index]
    cfg = dataclasses.replace(cfg, model=FailureModel(rates=f.rates_per_gpu_hour(cluster.gpus_per_node), scale=scale))
    _, run, eps, rates, back, t = start(cfg, cluster)
    weight = node_weights(f, cluster.hosts, np.random.default_rng([cfg.seed, cluster.index, 3]))
    hi = cfg.window_ms[1]
    available: list[int] = []  # steps of durable checkpoints
    for k in itertools.count(1):
        hosts = tuple(sorted(h for h in cluster.hosts if back[h] <= t)[: cluster.run_nodes])
        if len(hosts) < cluster.run_nodes:
            t = sorted(back.values())[cluster.run_nodes - 1]
            hosts = tuple(sorted(h for h in cluster.hosts if back[h] <= t)[: cluster.run_nodes])
        mean = sum(weight[h] for h in hosts) / len(hosts)
        att_rng = np.random.default_rng([cfg.seed, cluster.index, 2, k])
        att = _attempt(cfg, run, k, hosts, t, available[-1] if available else 0,
                       {m: r * mean for m, r in rates.items()}, eps, att_rng, None)
        if att is None:
            break
        _blame_by_rate(att, weight, np.random.default_rng([cfg.seed, cluster.index, 4, k]), cluster.gpus_per_node)
        run.attempts.append(att)
        available += [sv.step for sv in att.saves if sv.complete]
        if att.ending.mode == "time_limit" and att.ending.trigger_ms >= hi:
            break  # the campaign's window is over
        if att.ending.mode in HARDWARE and att.ending.host:
            back[att.ending.host] = att.end_ms + repair_ms(f, np.random.default_rng([cfg.seed, cluster.index, 5, k]))
            run.repairs.append((att.ending.host, att.end_ms, back[att.ending.host]))
        t = att.end_ms + int(att_rng.uniform(*cluster.profile.restart_s) * 1000)
    return run


def _blame_by_rate(att: Attempt, weight: dict[str, float], rng: np.random.Generator, gpus_per_node: int) -> None:
    """The failed node of a launch drawn by the nodes' rates (the timeline draws it evenly); the rank moves with it
    to the same GPU of the new node. A scheduler's end has no node to blame."""
    e = att.ending
    if e.host is None or e.rank is None or endings.family(e.mode) == "scheduler":
        return
    w = np.array([weight[h] for h in att.hosts])
    host = att.hosts[int(rng.choice(len(att.hosts), p=w / w.sum()))]
    rank = att.hosts.index(host) * gpus_per_node + e.rank % gpus_per_node
    att.ending = dataclasses.replace(e, host=host, rank=rank)

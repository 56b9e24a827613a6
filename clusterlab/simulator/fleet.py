"""The simulated fleet: providers, clusters, nodes, and the training run each cluster hosts."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from clusterlab.simulator.failure_model import ClusterProfile, FailureModel, profile_for

PROVIDERS = ("acme", "borealis", "cirrus", "dynamo", "ember", "fjord", "granite", "helix")
PRICES = (2.35, 1.95, 2.10, 2.60, 1.80, 2.25, 2.05, 2.45)  # $ per GPU-hour
# H100 SXM PCI buses of an HGX board, one per local rank
H100_BUS = ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")
WINDOW_START = dt.datetime(2026, 6, 1, 0, 0, 0, tzinfo=dt.UTC)  # a Monday


@dataclass(frozen=True)
class Config:
    """Everything a simulation depends on (the same config always gives the same bundle)."""

    seed: int = 0
    providers: int = 2
    clusters_per_provider: int = 2
    nodes_per_cluster: int = 16
    days: float = 1.0
    gpus_per_node: int = 8
    gzip: bool = False
    failure_scale: float = 1.0
    step_s: float | None = None  # the runs' steady step time; None: 5-9 s, by cluster
    save_every_s: float = 1800.0  # about how often the runs checkpoint
    hang_timeout_s: float | None = None  # a hang detector's timeout (simulator/policy.py); None: NCCL's watchdog
    scenarios: bool = True  # guarantee one lost checkpoint, one straggler and one stalled save
    adversarial: bool = False  # scripted scheduler ends, decoys, partial timings, skew, missing logs (adversarial.py)
    cases: bool = False  # with adversarial: the root-cause cases of issue 29 scripted too (adversarial.CASES)
    model: FailureModel = field(default_factory=FailureModel)

    @property
    def window_ms(self) -> tuple[int, int]:
        """The campaign window, epoch ms."""
        start = int(WINDOW_START.timestamp() * 1000)
        return start, start + int(round(self.days * 86_400_000))


@dataclass(frozen=True)
class Cluster:
    """One cluster: its provider, quality and nodes; `index` is its position in the whole fleet."""

    name: str
    provider: str
    index: int
    profile: ClusterProfile
    hosts: tuple[str, ...]
    gpus_per_node: int

    @property
    def run_nodes(self) -> int:
        """Nodes the run uses; the rest are spares that replace drained nodes."""
        return max(1, len(self.hosts) - max(1, len(self.hosts) // 8)) if len(self.hosts) > 1 else 1

    @property
    def hostlist(self) -> str:
        """The cluster's nodes as a Slurm hostlist."""
        width = len(self.hosts[0].rsplit("-", 1)[1])
        return f"{self.hosts[0].rsplit('-', 1)[0]}-[{1:0{width}d}-{len(self.hosts):0{width}d}]"

    def ip(self, host: str) -> str:
        """The node's bootstrap (bond0) address."""
        n = self.hosts.index(host) + 1
        return f"10.{20 + self.index}.{n // 250}.{n % 250 + 1}"


def clusters(cfg: Config) -> list[Cluster]:
    """The fleet's clusters in order: provider by provider."""
    if cfg.providers > len(PROVIDERS):
        raise ValueError(f"at most {len(PROVIDERS)} providers")
    out = []
    for p in range(cfg.providers):
        for c in range(cfg.clusters_per_provider):
            name = f"{PROVIDERS[p]}-{c + 1}"
            prefix = f"{PROVIDERS[p][:3]}{c + 1}"
            hosts = tuple(f"{prefix}-{n:03d}" for n in range(1, cfg.nodes_per_cluster + 1))
            out.append(Cluster(name, PROVIDERS[p], len(out), profile_for(p, c, cfg.clusters_per_provider), hosts,
                               cfg.gpus_per_node))
    return out


def inventory_toml(cfg: Config, fleet: list[Cluster]) -> str:
    """inventory.toml for the fleet."""
    lines = ["# The simulated fleet: providers, their clusters and nodes (Slurm hostlists).", ""]
    for p in range(cfg.providers):
        lines += [f"[providers.{PROVIDERS[p]}]", f"usd_per_gpu_hour = {PRICES[p]:.2f}",
                  f'support = "simulated provider {p + 1}"', ""]
    for c in fleet:
        lines += [f"[clusters.{c.name}]", f'provider = "{c.provider}"', 'gpu = "H100-SXM"',
                  f"gpus_per_node = {c.gpus_per_node}", 'interconnect = "InfiniBand NDR"',
                  f'nodes = "{c.hostlist}"', f"contracted_nodes = {len(c.hosts)}",
                  f"# quality: {c.profile.name}", ""]
    return "\n".join(lines)

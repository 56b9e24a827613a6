"""Failure rates per GPU-hour by failure mode, and how a cluster's quality scales them.

The defaults reproduce the root-cause mix that Meta published for the 54-day Llama 3 405B
pre-training snapshot on 16,384 H100 GPUs (The Llama 3 Herd of Models, arXiv:2407.21783, Table 5):
419 unexpected interruptions, i.e. one per 50,677 GPU-hours. Each of the paper's root-cause
components is mapped onto clusterlab's taxonomy (`clusterlab.taxonomy`); where one component
shows up in the logs in more than one way, it is split by the shares given here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LLAMA3_GPUS = 16_384
LLAMA3_DAYS = 54
LLAMA3_GPU_HOURS = LLAMA3_GPUS * LLAMA3_DAYS * 24


@dataclass(frozen=True)
class RootCause:
    """One row of the published table and the taxonomy modes it appears as in evidence."""

    component: str
    interruptions: int
    modes: tuple[tuple[str, float], ...]  # (taxonomy id, share of this component)


# The paper's rows, in its order. The splits are ours: a "faulty GPU" is seen as Xid 79 (fell off
# the bus), another Xid (GSP, engine halt) or an NVLink Xid; a software bug as an exception in the
# training code or an application CUDA error; unplanned host maintenance as the provider taking
# the nodes back (a preemption); silent data corruption as the NaN that a numerics check catches.
LLAMA3_TABLE: tuple[RootCause, ...] = (
    RootCause("Faulty GPU", 148, (("gpu_fell_off_bus", 0.5), ("gpu_hw_other", 0.3), ("nvlink_error", 0.2))),
    RootCause("GPU HBM3 Memory", 72, (("gpu_memory_ecc", 1.0),)),
    RootCause("Software Bug", 54, (("user_code_error", 0.6), ("cuda_error", 0.4))),
    RootCause("Network Switch/Cable", 35, (("network", 1.0),)),
    RootCause("Host Maintenance", 32, (("preemption", 1.0),)),
    RootCause("GPU SRAM Memory", 19, (("gpu_memory_ecc", 1.0),)),
    RootCause("GPU System Processor", 17, (("gpu_hw_other", 1.0),)),
    RootCause("NIC", 7, (("network", 1.0),)),
    RootCause("NCCL Watchdog Timeouts", 7, (("nccl_timeout", 1.0),)),
    RootCause("Silent Data Corruption", 6, (("loss_divergence", 1.0),)),
    RootCause("GPU Thermal Interface + Sensor", 6, (("gpu_hw_other", 1.0),)),
    RootCause("SSD", 3, (("host_hw", 1.0),)),
    RootCause("Power Supply", 3, (("node_failure", 1.0),)),
    RootCause("Server Chassis", 2, (("node_failure", 1.0),)),
    RootCause("IO Expansion Board", 2, (("pcie_error", 1.0),)),
    RootCause("Dependency", 2, (("filesystem_io", 1.0),)),
    RootCause("CPU", 2, (("host_hw", 1.0),)),
    RootCause("System Memory", 2, (("host_hw", 1.0),)),
)
LLAMA3_INTERRUPTIONS = sum(r.interruptions for r in LLAMA3_TABLE)  # 419

# Modes whose host is taken out of service (drained) until repaired.
HARDWARE = frozenset({"gpu_fell_off_bus", "gpu_hw_other", "nvlink_error", "gpu_memory_ecc", "network",
                      "host_hw", "node_failure", "pcie_error"})
# Network-side modes a bad fabric makes more frequent.
FABRIC = frozenset({"network", "nccl_timeout"})


def llama3_rates() -> dict[str, float]:
    """Interruptions per GPU-hour, by taxonomy mode, as the Llama 3 snapshot measured them."""
    rates: dict[str, float] = {}
    for row in LLAMA3_TABLE:
        for mode, share in row.modes:
            rates[mode] = rates.get(mode, 0.0) + row.interruptions * share / LLAMA3_GPU_HOURS
    return rates


@dataclass(frozen=True)
class ClusterProfile:
    """How one cluster departs from the published fleet: failure, fabric and filesystem quality."""

    name: str  # good | bad
    failure_factor: float = 1.0  # all interruption rates
    fabric_factor: float = 1.0  # network and NCCL hangs, on top
    save_s: tuple[float, float] = (14.0, 24.0)  # a checkpoint save's usual duration
    stall_per_save: float = 0.0  # chance that a save stalls on the filesystem
    stall_s: tuple[float, float] = (150.0, 420.0)
    stragglers_per_node_day: float = 0.05  # a GPU throttling for a while
    slowdowns_per_day: float = 0.5  # fabric or filesystem contention slowing every rank
    data_stalls_per_day: float = 1.0  # the data loader waiting on storage
    restart_s: tuple[float, float] = (240.0, 900.0)  # failure noticed to relaunch (automation)
    repair_h: tuple[float, float] = (2.0, 8.0)  # a drained node back in service


GOOD = ClusterProfile("good")
BAD = ClusterProfile("bad", failure_factor=4.0, fabric_factor=3.0, save_s=(28.0, 55.0), stall_per_save=0.08,
                     stragglers_per_node_day=0.25, slowdowns_per_day=2.0, data_stalls_per_day=4.0,
                     restart_s=(480.0, 1800.0), repair_h=(6.0, 24.0))


@dataclass(frozen=True)
class FailureModel:
    """Per-mode rates (per GPU-hour) for a whole fleet, scaled per cluster by its profile."""

    rates: dict[str, float] = field(default_factory=llama3_rates)
    scale: float = 1.0  # all rates: >1 compresses a long campaign's failures into a short simulation

    def cluster_rates(self, profile: ClusterProfile) -> dict[str, float]:
        """This cluster's rate of each mode, per GPU-hour."""
        out = {}
        for mode, rate in self.rates.items():
            fabric = profile.fabric_factor if mode in FABRIC else 1.0
            out[mode] = rate * self.scale * profile.failure_factor * fabric
        return out


def profile_for(provider_index: int, cluster_index: int, clusters_per_provider: int) -> ClusterProfile:
    """The quality of a cluster: each provider's last cluster is bad, and so is every cluster of
    every second provider (a good and a bad provider, and a good and a bad cluster within one)."""
    if provider_index % 2 == 1:
        return BAD
    return BAD if clusters_per_provider > 1 and cluster_index == clusters_per_provider - 1 else GOOD

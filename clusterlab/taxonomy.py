"""Failure-mode taxonomy: stable identifiers, blame, recommended action, and the NVIDIA Xid table."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl


@dataclass(frozen=True)
class FailureMode:
    id: str
    blame: str  # provider | user | unknown
    action: str  # what to do with the host involved
    description: str


_MODES = [
    FailureMode("gpu_fell_off_bus", "provider", "drain node", "GPU lost from the PCIe bus"),
    FailureMode("gpu_memory_ecc", "provider", "reset GPU", "uncorrectable GPU memory (HBM) error"),
    FailureMode("gpu_hw_other", "provider", "reset GPU", "other GPU hardware or firmware fault"),
    FailureMode("nvlink_error", "provider", "reset GPU", "NVLink / NVSwitch error"),
    FailureMode("pcie_error", "provider", "drain node", "PCIe bus error (AER)"),
    FailureMode("network", "provider", "drain node", "InfiniBand / RoCE link, NIC or switch fault"),
    FailureMode("host_hw", "provider", "drain node", "host hardware fault (CPU, DIMM, machine check)"),
    FailureMode("filesystem_io", "provider", "none", "shared filesystem timeout or I/O error"),
    FailureMode("node_failure", "provider", "drain node", "node lost with no finer evidence"),
    FailureMode("checkpoint_lost", "provider", "none", "a checkpoint recorded as saved is missing or corrupt"),
    FailureMode("preemption", "provider", "none", "provider maintenance or reclaim"),
    # NOTE: not in DESIGN.md's list: a host slower than its peers for a stretch of steps (thermal
    # throttling, a down-trained PCIe link, a bad DIMM) costs GPU-hours without failing anything.
    FailureMode("straggler", "provider", "run preflight; drain if it repeats", "host slower than its peers"),
    FailureMode("nccl_timeout", "unknown", "none", "collective hang with no deeper cause found"),
    FailureMode("cuda_oom", "user", "none", "CUDA out of memory"),
    FailureMode("host_oom", "user", "none", "host out of memory (Linux OOM killer)"),
    FailureMode("cuda_error", "user", "none", "application-side CUDA error (illegal address, ...)"),
    FailureMode("loss_divergence", "user", "none", "loss became NaN/inf or diverged"),
    FailureMode("user_code_error", "user", "none", "exception in the training code"),
    FailureMode("time_limit", "user", "none", "job reached its scheduler time limit"),
    FailureMode("manual_stop", "user", "none", "job cancelled by a person"),
    FailureMode("unknown", "unknown", "none", "no evidence of a cause"),
    # NOTE: a straggler or slow stretch whose telemetry shows why: heat, the power brake or HW slowdown throttled
    # one GPU's clocks (clusterlab.diagnose.telemetry_incidents). Last, so that every other mode keeps its plot colour.
    FailureMode("gpu_throttle", "provider", "check the node's cooling and power; drain if it repeats",
                "GPU clocks throttled (thermal, power brake or HW slowdown)"),
    # NOTE: one rank's numbers go non-finite while its peers' stay finite on the same step: a GPU computing wrong
    # values (Llama 3's report counts silent data corruption at 1.4 % of its interruptions), not the user's
    # model (clusterlab.diagnose.sdc).
    FailureMode("silent_data_corruption", "provider", "drain node; run the GPU's diagnostics",
                "one rank's loss or gradients went non-finite while its peers' stayed finite"),
]

MODES: dict[str, FailureMode] = {m.id: m for m in _MODES}


def mode(mode_id: str) -> FailureMode:
    """The failure mode with this identifier (KeyError for an unknown one)."""
    return MODES[mode_id]


@dataclass(frozen=True)
class Xid:
    code: int
    failure_mode: str | None  # None: a notice, no fault
    action: str  # NVIDIA's guidance, shortened
    description: str
    root_cause: bool = True  # False: a follow-on or informational Xid, never a root cause alone


# Facts from NVIDIA's Xid catalogue (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html: each
# code's mnemonic, description and "resolution bucket") and its GPU debug guidelines. The action is the
# catalogue's immediate resolution, shortened: RESET_GPU -> reset GPU; RESTART_BM (bare metal) -> drain
# node; RESTART_APP, IGNORE, CHECK_APP/CUDA -> none. Xids the catalogue files under the application
# (8, 13, 31, 32, 43, 69) blame the user; IGNORE / informational ones (38, 45, 63, 92, 121, 137, 154) are never
# a root cause alone: they follow or restate another error.
_XIDS = [
    # NOTE: the catalogue's ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT: RESTART_APP, as 43 (a kernel that ran past the
    # watchdog: "the launch timed out and was terminated")
    Xid(8, "cuda_error", "none", "GPU stopped processing (channel idle timeout)"),
    Xid(13, "cuda_error", "none", "graphics engine exception (usually application error)"),
    Xid(31, "cuda_error", "none", "GPU memory page fault (usually illegal address in the application)"),
    Xid(32, "cuda_error", "none", "invalid or corrupted push buffer stream (catalogue: check the application)"),
    Xid(38, "gpu_hw_other", "none", "driver firmware error (FECS watchdog timeout)", root_cause=False),
    Xid(43, "cuda_error", "none", "GPU stopped processing (application fault)"),
    # NOTE: what the driver logs for each channel of a process that was killed (a cancel, a crash elsewhere, an
    # earlier fault): no fault of its own. Where it names the Xid that caused it, it carries that one's mode.
    Xid(45, None, "none", "preemptive cleanup after earlier errors", root_cause=False),
    Xid(48, "gpu_memory_ecc", "reset GPU", "double-bit ECC error"),
    Xid(56, "gpu_hw_other", "none", "display engine error"),
    Xid(61, "gpu_hw_other", "reset GPU", "internal micro-controller breakpoint/warning"),
    Xid(62, "gpu_hw_other", "reset GPU", "internal micro-controller halt (PMU)"),
    Xid(63, "gpu_memory_ecc", "none", "ECC page retirement or row remapping recorded", root_cause=False),
    # NOTE: catalogue: RESET_GPU, then CONTACT_SUPPORT; a remap that failed is the RMA case of
    # NVIDIA's memory error management guide, so the host is drained rather than reused after a reset.
    Xid(64, "gpu_memory_ecc", "drain node", "ECC page retirement or row remapping failure"),
    Xid(69, "cuda_error", "none", "graphics engine class error (catalogue: check the application)"),
    Xid(74, "nvlink_error", "reset GPU", "NVLink error"),
    Xid(79, "gpu_fell_off_bus", "drain node", "GPU has fallen off the bus"),
    Xid(92, "gpu_memory_ecc", "none", "high single-bit ECC error rate", root_cause=False),
    # NOTE: catalogue: RESTART_APP for a contained error; the row it marks for remapping (Xid 63) is
    # activated by a GPU reset, which is why the GPU is reset before it is used again.
    Xid(94, "gpu_memory_ecc", "reset GPU", "contained ECC error"),
    Xid(95, "gpu_memory_ecc", "reset GPU", "uncontained ECC error"),
    Xid(109, "gpu_hw_other", "reset GPU", "context switch timeout"),
    Xid(110, "gpu_hw_other", "reset GPU", "security fault error"),
    Xid(119, "gpu_hw_other", "reset GPU", "GSP RPC timeout"),
    Xid(120, "gpu_hw_other", "reset GPU", "GSP error"),
    Xid(121, "gpu_hw_other", "none", "C2C link error", root_cause=False),
    Xid(122, "gpu_hw_other", "reset GPU", "SPI PMU RPC read failure"),
    Xid(123, "gpu_hw_other", "reset GPU", "SPI PMU RPC write failure"),
    Xid(124, "gpu_hw_other", "reset GPU", "SPI PMU RPC erase failure"),
    Xid(136, "nvlink_error", "reset GPU", "NVLink link training (ALI) failed"),
    Xid(137, "nvlink_error", "none", "NVLink privilege error", root_cause=False),
    Xid(140, "gpu_memory_ecc", "reset GPU", "unrecovered ECC error"),
    Xid(143, "gpu_hw_other", "reset GPU", "GPU initialisation failure"),
    Xid(144, "nvlink_error", "reset GPU", "NVLink SAW error"),
    Xid(145, "nvlink_error", "reset GPU", "NVLink RLW error"),
    Xid(146, "nvlink_error", "reset GPU", "NVLink TLW error"),
    Xid(147, "nvlink_error", "reset GPU", "NVLink TREX error"),
    Xid(148, "nvlink_error", "reset GPU", "NVLink NVLPW_CTRL error"),
    Xid(149, "nvlink_error", "reset GPU", "NVLink NETIR error"),
    Xid(150, "nvlink_error", "reset GPU", "NVLink MSE error"),
    Xid(151, "gpu_hw_other", "reset GPU", "key rotation error (confidential computing; catalogue: restart the VM)"),
    Xid(154, "gpu_hw_other", "reset GPU", "GPU recovery action changed", root_cause=False),
    Xid(155, "nvlink_error", "reset GPU", "NVLink software-defined error"),
    Xid(158, "gpu_hw_other", "reset GPU", "GPU fatal timeout"),
]

XIDS: dict[int, Xid] = {x.code: x for x in _XIDS}


def xid(code: int) -> Xid:
    """What an Xid code means; codes not in the table are generic GPU faults needing a reset."""
    return XIDS.get(code) or Xid(code, "gpu_hw_other", "reset GPU", f"Xid {code}")


def xid_frame(codes: Iterable[int | None]) -> pl.DataFrame:
    """One row per distinct Xid of `codes` (nulls dropped): `xid` (Int32), `failure_mode`, `action`, `root_cause`,
    `description`, to join a collector's rows by their code (one lookup per distinct code, not per row)."""
    infos = [xid(int(c)) for c in sorted({c for c in codes if c is not None})]
    return pl.DataFrame({"xid": [x.code for x in infos], "failure_mode": [x.failure_mode for x in infos],
                         "action": [x.action for x in infos], "root_cause": [x.root_cause for x in infos],
                         "description": [x.description for x in infos]},
                        schema={"xid": pl.Int32, "failure_mode": pl.String, "action": pl.String,
                                "root_cause": pl.Boolean, "description": pl.String})

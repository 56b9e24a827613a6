"""How each failure mode ends a launch, in time: when the job notices, and when its last line is printed.

Shared by the timeline (which needs each attempt's end) and the log writer (which prints the lines
at exactly those times), so the two cannot drift apart.
"""

from __future__ import annotations

# The job hangs until ProcessGroupNCCL's watchdog fires: a GPU gone, an NVLink or PCIe fault, a hang.
HANG = frozenset({"gpu_fell_off_bus", "gpu_hw_other", "nvlink_error", "pcie_error", "nccl_timeout"})
# A link or a whole node is gone: the peers' queue pairs retry, then fail with completion errors.
LINK = frozenset({"network", "node_failure"})
# One process dies at once (CUDA ECC error, SIGBUS, an exception, a NaN check, one GPU's NaN): its peers follow.
CRASH = frozenset({"gpu_memory_ecc", "host_hw", "user_code_error", "cuda_error", "loss_divergence", "filesystem_io",
                   "silent_data_corruption"})
# The scheduler ends the job: the provider reclaims the nodes, the time limit is reached, or a
# person cancels it (scancel; only scripted by the adversarial scenarios).
SCHEDULER = frozenset({"preemption", "time_limit", "manual_stop"})

WATCHDOG_MS = 600_000  # TORCH_NCCL default collective timeout: 10 minutes
IB_RETRY_MS = 31_000  # NCCL_IB_TIMEOUT=20 with 7 retries, before the completion error surfaces
UNKILLABLE_MS = 30_000  # torchrun's SIGTERM-to-SIGKILL wait for a process stuck on a lost GPU
# A soft NFS mount (timeo=600, retrans=3): "not responding, still trying" after the first major
# timeout, the read fails with EIO ("timed out") about three minutes after the server went away.
NFS_SOFT_MS = 180_000


def family(mode: str) -> str:
    """hang | link | crash | scheduler."""
    for name, modes in (("hang", HANG), ("link", LINK), ("crash", CRASH), ("scheduler", SCHEDULER)):
        if mode in modes:
            return name
    raise ValueError(f"no ending for failure mode {mode!r}")


def trigger_delay_ms(mode: str, hang_ms: int | None = None) -> int:
    """From the root cause to the moment the job starts dying (`hang_ms`: a hang detector's timeout)."""
    fam = family(mode)
    if fam == "hang":
        return hang_ms or WATCHDOG_MS
    if fam == "link":
        return IB_RETRY_MS
    return {"gpu_memory_ecc": 180, "host_hw": 12}.get(mode, 0)


def summary_times(mode: str, trigger_ms: int, n_hosts: int, culprit: int | None) -> list[int]:
    """Per host (by index): when its torchrun agent prints its last stamped line."""
    fam = family(mode)
    if fam == "scheduler":
        return [trigger_ms + 50 + 10 * n for n in range(n_hosts)]
    if fam == "hang":
        out = [trigger_ms + 1250 + 70 * n for n in range(n_hosts)]
        if mode == "gpu_fell_off_bus" and culprit is not None:
            out[culprit] += UNKILLABLE_MS  # the process on the lost GPU ignores SIGTERM
        return out
    out = [trigger_ms + 2800 + 100 * n for n in range(n_hosts)]
    if culprit is not None:
        out[culprit] = trigger_ms + 1900  # the host whose worker died reports first
    return out


def exit_ms(mode: str, trigger_ms: int, n_hosts: int, culprit: int | None) -> int:
    """The attempt's end: its last stamped log line."""
    return max(summary_times(mode, trigger_ms, n_hosts, culprit))


def job_start_ms(start_ms: int) -> int:
    """Slurm's start of the job: the batch script runs a few seconds before torchrun prints."""
    return (start_ms - 6000) // 1000 * 1000


def job_end_ms(exit_ms: int) -> int:
    """Slurm's end of the job: a moment after the last line, on a whole second."""
    return (exit_ms // 1000 + 2) * 1000

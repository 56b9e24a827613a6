"""Kernel log collector: dmesg (raw, -T, iso), journalctl -k and syslog → GPU, PCIe, NIC, memory and FS events.

One line of a kernel log is a time prefix (one of six spellings), for journal and syslog a host and
a `kernel:` tag, and the message. The message is classified by an ordered list of rules (the first
that matches wins); each rule family then extracts its fields into `detail` (a JSON object).
Everything is polars expressions over the batch: no Python loop over lines.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from clusterlab import taxonomy
from clusterlab.collectors import _kernel_time
from clusterlab.collectors._aer_flood import aer_flood
from clusterlab.collectors._base import (
    TABLE_COLUMNS,
    Context,
    Parsed,
    classify,
    extract_all,
    file_of_line,
    json_detail,
    search,
)

NAME = "kernel"
EXCLUSIVE = False
WARNINGS_PER_FILE = True  # its one warning (raw dmesg without a boot time) is each such file's: a group hands it on
# A hung-task report is a header line and, some lines later, its call trace: the trace frames that
# name a shared filesystem belong to the header before them, so a batch is not cut between the two.
BLOCK_START = r"INFO: task .*:\d+ blocked for more than "

# A block device failing reads or writes, in each kernel's wording: the request's error (`blk_update_request:`
# 3.17-5.15, `print_req_error:` 4.17-5.0, `end_request:` before 3.17, bare `I/O error, dev` since 5.16; besides
# "I/O error" the block layer says "critical medium error", "critical target error", "timeout error", ...), the page
# cache's (`Buffer I/O error on dev[ice]`), a filesystem's own report of the failed I/O (ext2-4, XFS), XFS shutting
# itself down (and its log force failing with EIO ever after), ext4 giving up on the device (any `EXT4-fs error
# (device X)`, its journal aborted, the remount read-only), and an NVMe controller that stops answering (a command
# timeout it resets or aborts for, the controller down, the drive removed).
_BLOCK_IO = (r"(?:blk_update_request|print_req_error|end_request): [\w ]*error, dev \S+, sector"
             r"|I/O error, dev \S+, sector|Buffer I/O error on dev"
             r"|(?:EXT[234]-fs (?:warning|error) \(device [^)]+\)|XFS \([^)]+\)): .*I/O error"
             r"|XFS \([^)]+\): (?:xfs_log_force: error -?5 returned|.*Shutting down filesystem"
             r"|Filesystem has been shut down)"
             r"|EXT[234]-fs error \(device |Aborting journal on device "
             r"|EXT[234]-fs \([^)]+\): Remounting filesystem read-only"
             r"|nvme nvme\d+: (?:I/O \d+ (?:\(.*?\) )?QID \d+ timeout, (?:reset controller|aborting)"
             r"|controller is down; will reset|Removing after probe failure|Device not ready; aborting reset)")
# Devices whose I/O errors are noise: a VM's absent floppy or CD drive probed at boot, a loop device's backing
# file gone.
_NOISY_BLOCK_DEV = r"^(?:fd|sr|loop)\d"

# A kernel fault's instruction pointer in a shared filesystem's client module (the oops's `RIP:` line)
_FS_RIP = (r"RIP: [0-9a-f]{4}:(?:\[<[0-9a-f]+>\] +\[<[0-9a-f]+>\] )?[\w.]+\+0x[0-9a-f]+/0x[0-9a-f]+ "
           r"\[(?:nfs|nfsv3|nfsv4|sunrpc|lustre|ptlrpc|lnet|obdclass|osc|mdc|lmv|lov|mgc|ldlm|fuse|ceph|libceph"
           r"|mmfs26|mmfslinux|beegfs|cifs|9p)\]")
# systemd giving up on a shared filesystem's client unit or mount (`Failed to start beegfs-client.service`)
_FS_CLIENT_FAILED = r"Failed to (?:start|mount) [\w@./-]*(?:beegfs|lustre|nfs|gpfs|mmfs|weka|ceph|cvmfs)"
# systemd-oomd, the userspace OOM killer, killing a cgroup (`Killed /system.slice/x.scope due to memory pressure for
# /system.slice being 74.88% > 60.00% ...`, `... due to memory used (...) / total (...) and swap used ...`), and systemd
# counting the unit's processes it took (`x.scope: systemd-oomd killed 41 process(es) in this unit.`), or the kernel's
# (`trainer.service: A process of this unit has been killed by the OOM killer.`, `Failed with result 'oom-kill'.`)
_USER_OOM_KILL = (r"Killed /\S+ due to (?:memory pressure|memory used|swap used)|systemd-oomd killed \d+ process"
                  r"|A process of this unit has been killed by the OOM killer|Failed with result 'oom-kill'")

# Lines of interest, whatever the time prefix. Every branch starts with a literal (or is one), so
# the engine's regex prefilter rejects ordinary lines (NCCL INFO, training steps) at memchr speed.
# AWS EFA's device not completing the driver's admin commands (`efa <bdf>: The device didn't send any completion for
# admin cmd MODIFY_QP(4) ...`, or completing them with no interrupt): the adapter stopped answering, as mlx5's timeout
_EFA_ADMIN_LOST = (r"efa \S+: The device (?:didn't send any completion|sent a completion but the driver didn't "
                   r"receive any MSI-X interrupt) for admin cmd")
PATTERN = "|".join([
    r"NVRM: Xid ",
    # NOTE: one `NVRM: .*` branch for all: separate ones cost the engine's prefilter half again on every line.
    r"NVRM: .*(?:fallen off the bus|NVLink.*(?i:fatal|error)|(?i:row remap|uncorrectable|double.bit)|\bDBE\b"
    r"|GSP Timeout|GSP RM heartbeat timed out|Heartbeat timed out|GSP RPC error prints|GSP-CrashCat Report"
    r"|RmInitAdapter failed|\[NV_ERR_(?:RESET_REQUIRED|GPU_IS_LOST)\]|kflcnCoreDump\w*_IMPL: "
    r"|RPC (?:event )?history \(CPU|RC watchdog: GPU is probably locked)",
    r"SXid \([^)]*\): \d+, (?:Fatal|FATAL|Non-fatal|Severity [01] |Data \{)",
    r"AER: (?:Multiple )?(?:Correct|Uncorrect)(?:ed|able) ",
    r"AER: (?:device recovery failed|can't recover)",
    r"PCIe Bus Error: severity=",
    r"Port module event",
    r"mlx5_core .*(?:health compromised|timeout\. Will cause a leak of a command resource|\) No done completion)",
    _EFA_ADMIN_LOST,
    r"NETDEV WATCHDOG: ",
    r": Link (?:up|down)\b",
    r": NIC Link is (?:Up|Down)\b",
    r": Port: \d+ Link [A-Z]",
    r"(?i:out of memory): Kill",
    r"Killed process \d+ \(",
    r"oom-kill:constraint=",
    r" invoked oom-killer: ",
    _USER_OOM_KILL,
    r"oom_reaper: reaped process \d+",
    r"Task in \S+ killed as a result of limit of ",
    r"INFO: task .*:\d+ blocked for more than ",
    r"task:\S+ +state:D ",
    r"\b(?:nfs|nfs4|lockd): server \S+ (?:not responding|OK\b)",
    r"LustreError: |LNetError: ",
    r"Lustre: .*(?:Connection to .* was lost|Connection restored to |Request sent has (?:timed out|failed due to)"
    r"|[Ss]ervice thread pid \d+ was inactive for )",
    r"LNet: .*(?:Timed out tx|Timed out RDMA|[Cc]losing conn|[Ss]ervice thread pid \d+ was inactive for )",
    _BLOCK_IO,
    r"\[Hardware Error\]: (?:Machine check events logged|CPU \d+: Machine Check|event severity: )",
    r"Uncorrected hardware memory error|Memory failure: 0x|EDAC (?:\S+ )?MC\d+: \d+ (?:CE|UE|Fatal) ",
    r"Kernel panic - not syncing: ",
    r"soft lockup - CPU#\d+ stuck|Watchdog detected hard LOCKUP on cpu \d+",
    r"ceph: (?:mds\d+ (?:reconnect denied|hung)\b| +dropping dirty)",
    r"BUG: workqueue lockup - pool ",
    r"INFO: rcu_\w+ (?:self-)?detected (?:stalls?|expedited stalls)",
    # call-trace frames in a shared filesystem's modules (or NFS functions): they say where a hung task waits
    r"\+0x[0-9a-f]+/0x[0-9a-f]+ \[(?:nfs|nfsv3|nfsv4|sunrpc|lustre|ptlrpc|lnet|obdclass|osc|mdc|lmv|lov|mgc|ldlm"
    r"|fuse|ceph|libceph|mmfs26|mmfslinux|beegfs|cifs|9p)\]"
    r"| nfs4?_\w+\+0x[0-9a-f]+/0x",
    # systemd failing a shared filesystem's client unit or mount (`Failed to start beegfs-client.service`)
    _FS_CLIENT_FAILED,
    # dmesg -H / -e: the minute a run of `[  +0.000049]` lines belongs to (their only clock); the month
    # names are literals, so the prefilter still skips ordinary lines (an anchored `[A-Z][a-z]{2}` does not)
    r"\[(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) ?\d{1,2} \d\d:\d\d\] ",
])

# A hung task is a filesystem stall when its line names NFS or Lustre (an `nfsiod`, a `ptlrpcd` thread)
# or its call trace waits in their code. Any other hung task is `unknown` (a warning): a task stuck in D
# state is a symptom (of a GPU driver wedged by an Xid, a slow local disk, a lock) and the line says
# nothing about which, but a node whose tasks hang has a fault worth a line on its timeline (issue 30).
_FS_TASK = r"(?i:nfs|lustre|ptlrpc|ldlm)"
_HUNG = r"INFO: task .*:\d+ blocked for more than \d+ seconds"
_TASK_STATE = r"^task:\S+ +state:D "
HEADER_LINES = 6  # hung_task.c: header, taint line, hint, then the `task:` line
# One call-trace frame: `[<ffffffffa05c3e5d>] ? rpc_wait_bit_killable+0x1e/0xa0 [sunrpc]` (older kernels print
# the address, `? ` marks a frame the unwinder is unsure of), and the module that holds the function.
_FRAME = r"^\s*(?:\[<[0-9a-f]+>\] )?(?:\? )?(?P<fn>[\w.]+)\+0x[0-9a-f]+/0x[0-9a-f]+(?: \[(?P<mod>\w+)\])?\s*$"
_NFS_MODULES = ["nfs", "nfsv3", "nfsv4", "sunrpc"]
_LUSTRE_MODULES = ["lustre", "ptlrpc", "lnet", "obdclass", "osc", "mdc", "lmv", "lov", "mgc", "ldlm"]
# NOTE: other mounts a training node reads data or writes checkpoints through (a FUSE mount of an object store or
# of a vendor's filesystem, Ceph, GPFS, BeeGFS, SMB, 9p): a task waiting in their code waits on that filesystem
_OTHER_FS_MODULES = {"fuse": "fuse", "ceph": "ceph", "libceph": "ceph", "mmfs26": "gpfs", "mmfslinux": "gpfs",
                     "beegfs": "beegfs", "cifs": "cifs", "9p": "9p"}
# A hung-task report's trace follows its header within a few dozen lines (hung_task.c: header, taint
# line, hint, `task:` line, `Call Trace:`, frames); a frame further away belongs to something else.
TRACE_LINES = 80


@dataclass(frozen=True)
class Rule:
    family: str  # which extractors and detail fields apply
    kind: str
    regex: str  # searched in the message (Rust regex syntax)
    failure_mode: str | None  # None: informational, or decided per line (xid, mce, hung task)
    severity: str | None


# Ordered: the first rule whose regex matches the message decides kind, failure mode and severity.
RULES: tuple[Rule, ...] = (
    Rule("xid", "xid", r"NVRM: Xid ", None, None),
    Rule("gpu", "gpu_fell_off_bus", r"NVRM: .*fallen off the bus", "gpu_fell_off_bus", "critical"),
    Rule("gpu", "nvlink_error", r"NVRM: .*NVLink.*(?i:fatal|error)", "nvlink_error", "error"),
    Rule("gpu", "row_remap_failure", r"NVRM: .*(?i:row remap).*(?i:fail)", "gpu_memory_ecc", "error"),
    Rule("gpu", "row_remap_pending", r"NVRM: .*(?i:row remap)", "gpu_memory_ecc", "warning"),
    Rule("gpu", "gpu_ecc_uncorrectable", r"NVRM: .*(?:(?i:uncorrectable|double.bit)|\bDBE\b)", "gpu_memory_ecc",
         "error"),
    # The GSP stopped answering: the banner before an Xid 119, or the heartbeat check that precedes one
    Rule("gpu", "gsp_timeout", r"NVRM: .*(?:_kgsp\w*: \*+ GSP Timeout \*|GSP RM heartbeat timed out"
         r"|_kgspIsHeartbeatTimedOut: Heartbeat timed out)", "gpu_hw_other", "error"),
    Rule("gpu", "gsp_crash", r"NVRM: .*GSP-CrashCat Report", "gpu_hw_other", "error"),
    # the driver dumps the GSP's falcon core and its RPC history when the GSP stopped answering (the dump
    # around an Xid 119 / 120, or all that is left of one when the Xid line itself was not kept)
    Rule("gpu", "gsp_core_dump", r"NVRM: .*kflcnCoreDump\w*_IMPL: ", "gpu_hw_other", "warning"),
    Rule("gpu", "gsp_rpc_history", r"NVRM: .*RPC (?:event )?history \(CPU", "gpu_hw_other", "warning"),
    Rule("gpu", "gsp_rpc_errors", r"NVRM: Rate limiting GSP RPC error prints", "gpu_hw_other", "warning"),
    # the driver could not initialise the GPU, or asserts the GPU needs a reset before it can be used again
    Rule("gpu", "gpu_init_failed", r"NVRM: .*RmInitAdapter failed", "gpu_hw_other", "error"),
    # the robust-channel watchdog went unanswered: the GPU is wedged
    Rule("gpu", "gpu_locked", r"NVRM: .*RC watchdog: GPU is probably locked", "gpu_hw_other", "error"),
    Rule("gpu", "gpu_reset_required", r"NVRM: .*\[NV_ERR_RESET_REQUIRED\]", "gpu_hw_other", "error"),
    # an RM call failing because the GPU is gone (NV_ERR_GPU_IS_LOST: "GPU lost from the bus")
    Rule("gpu", "gpu_lost", r"NVRM: .*\[NV_ERR_GPU_IS_LOST\]", "gpu_fell_off_bus", "critical"),
    Rule("sxid", "sxid", r"SXid \([^)]*\): \d+, (?:Fatal|FATAL)", "nvlink_error", "error"),
    Rule("sxid", "sxid", r"SXid \([^)]*\): \d+, Non-fatal", None, "warning"),
    # newer NVSwitch drivers print `Severity <n> Engine instance ..` (then a `Data {..}` line): the
    # driver's NVSWITCH_ERROR_SEVERITY_NONFATAL is 0, _FATAL is 1
    Rule("sxid", "sxid", r"SXid \([^)]*\): \d+, Severity 1 ", "nvlink_error", "error"),
    Rule("sxid", "sxid", r"SXid \([^)]*\): \d+, Severity 0 ", None, "warning"),
    # ... and its `Data {..}` line, read with the severity line of the same SXid (_sxid_data_alone)
    Rule("sxid", "sxid_data", r"SXid \([^)]*\): \d+, Data \{", "nvlink_error", "warning"),
    Rule("aer", "pcie_aer", r"AER: (?:Multiple )?Uncorrect(?:ed|able) \(Fatal\) ", "pcie_error", "critical"),
    Rule("aer", "pcie_aer", r"AER: (?:Multiple )?Uncorrect(?:ed|able) \(Non-Fatal\) ", "pcie_error", "error"),
    Rule("aer", "pcie_aer", r"AER: (?:Multiple )?Correct(?:ed|able) ", None, "warning"),
    Rule("aer", "pcie_bus_error", r"PCIe Bus Error: severity=Uncorrect(?:ed|able) \(Fatal\)", "pcie_error", "critical"),
    Rule("aer", "pcie_bus_error", r"PCIe Bus Error: severity=Uncorrect(?:ed|able) \(Non-Fatal\)", "pcie_error",
         "error"),
    Rule("aer", "pcie_bus_error", r"PCIe Bus Error: severity=Correct(?:ed|able)", None, "warning"),
    Rule("aer", "pcie_recovery_failed", r"AER: device recovery failed", "pcie_error", "error"),
    Rule("aer", "pcie_no_recovery", r"AER: can't recover", "pcie_error", "error"),
    Rule("link", "port_module_error", r"Port module event(?:\[error\])?: module \d+, Cable (?:error|unplugged|dis)",
         "network", "error"),
    Rule("link", "port_module", r"Port module event: module \d+, ", None, "info"),
    Rule("link", "nic_health", r"mlx5_core .*health compromised", "network", "error"),
    # the HCA's firmware no longer answers the driver's commands (a command's timeout, its missing completion)
    Rule("link", "nic_cmd_timeout", r"mlx5_core .*(?:timeout\. Will cause a leak of a command resource"
         r"|\) No done completion)", "network", "error"),
    Rule("link", "nic_cmd_timeout", _EFA_ADMIN_LOST, "network", "error"),  # ... as the EFA device's admin queue
    # NOTE: Ethernet drivers (ixgbe, i40e, ice, e1000e, bnxt_en) say "NIC Link is Down" / "NIC Link is Up <speed>"
    # the kernel's transmit watchdog: a NIC queue that sent nothing for seconds (`NETDEV WATCHDOG: eth0 (ixgbe):
    # transmit queue 3 timed out`; 6.x: `<drv> <bdf> <ifc>: NETDEV WATCHDOG: CPU: 37: transmit queue 11 timed out
    # 8704 ms`) is a hung NIC its driver resets: traffic over it stalled (a collective over it times out)
    Rule("link", "nic_tx_timeout", r"NETDEV WATCHDOG: .*transmit queue \d+ timed out", "network", "error"),
    Rule("link", "link_down", r": Link down\b|: Port: \d+ Link DOWN\b|: NIC Link is Down\b", "network", "error"),
    Rule("link", "link_up", r": Link up\b|: Port: \d+ Link ACTIVE\b|: NIC Link is Up\b", None, "info"),
    Rule("link", "link_state", r": Port: \d+ Link [A-Z]", None, "info"),
    Rule("oom", "oom_kill", r"(?i:out of memory): Kill(?:ed)? process \d+|^Killed process \d+ \(", "host_oom", "error"),
    Rule("oom", "oom_constraint", r"oom-kill:constraint=", "host_oom", "warning"),
    Rule("oom", "oom_invoked", r" invoked oom-killer: ", "host_oom", "warning"),
    # the userspace OOM killer's verdict (a program's line, read as the node's: see `foreign` in parse)
    Rule("oom", "oom_userspace_kill", _USER_OOM_KILL, "host_oom", "error"),
    # the reaper frees what the OOM killer's victim held: all that is left of a kill in a short excerpt
    Rule("oom", "oom_reaped", r"oom_reaper: reaped process \d+", "host_oom", "warning"),
    # cgroup v1's header of a memory-cgroup OOM kill (the `Killed process` line may be cut from an excerpt)
    Rule("oom", "oom_cgroup_limit", r"Task in \S+ killed as a result of limit of ", "host_oom", "warning"),
    # NOTE: a hung task's cause is decided per line (_hung_on_filesystem): a filesystem stall, else `unknown`
    Rule("hung", "hung_task", r"INFO: task .*:\d+ blocked for more than \d+ seconds", "unknown", "warning"),
    # a task in D state whose hung-task header was not kept (sysrq-w, or a paste starting at the task line)
    Rule("hung", "hung_task", r"^task:\S+ +state:D ", "unknown", "warning"),
    Rule("nfs", "nfs_not_responding", r"\b(?:nfs|nfs4|lockd): server \S+ not responding, timed out", "filesystem_io",
         "error"),
    Rule("nfs", "nfs_not_responding", r"\b(?:nfs|nfs4|lockd): server \S+ not responding", "filesystem_io", "warning"),
    Rule("nfs", "nfs_server_ok", r"\b(?:nfs|nfs4|lockd): server \S+ OK\b", None, "info"),
    Rule("lustre", "lustre_connection_lost", r"Lustre: .*Connection to .* was lost", "filesystem_io", "error"),
    Rule("lustre", "lustre_connection_restored", r"Lustre: .*Connection restored to ", None, "info"),
    Rule("lustre", "lustre_timeout", r"Lustre: .*Request sent has (?:timed out|failed due to)", "filesystem_io",
         "warning"),
    # Lustre's own watchdog on a service thread (`LNet: Service thread pid N was inactive for 200.09s. The thread
    # might be hung, or it might only be slow ...`, `Lustre: <svc>: service thread pid N was inactive for ...`): a
    # filesystem thread stuck or starved, the hung task of the filesystem (a warning: it may still resume)
    Rule("lustre", "lustre_thread_inactive", r"(?:LNet|Lustre): .*[Ss]ervice thread pid \d+ was inactive for ",
         "filesystem_io", "warning"),
    Rule("lustre", "lnet_timeout", r"LNet: .*(?:Timed out tx|Timed out RDMA|[Cc]losing conn)", "filesystem_io",
         "warning"),
    Rule("lustre", "lustre_error", r"LustreError: |LNetError: ", "filesystem_io", "error"),
    # NOTE: the node's disk or the filesystem on it (local scratch, a checkpoint being written): the nearest mode
    # is filesystem_io; a noisy device's errors are informational (_quiet_noisy_devices).
    Rule("block", "block_io_error", _BLOCK_IO, "filesystem_io", "error"),
    Rule("mce", "mce_panic", r"Kernel panic - not syncing: Fatal (?i:machine check)", "host_hw", "critical"),
    Rule("cpu", "kernel_panic", r"Kernel panic - not syncing: ", "node_failure", "critical"),
    Rule("mce", "mce_exception", r"\[Hardware Error\]: CPU \d+: Machine Check Exception: ", "host_hw", "critical"),
    Rule("mce", "mce_corrected", r"\[Hardware Error\]: CPU \d+: Machine Check: ", None, "warning"),
    Rule("mce", "mce_logged", r"\[Hardware Error\]: Machine check events logged", None, "warning"),
    Rule("mce", "hw_error_fatal", r"\[Hardware Error\]: event severity: fatal", "host_hw", "critical"),
    Rule("mce", "hw_error_recoverable", r"\[Hardware Error\]: event severity: recoverable", "host_hw", "error"),
    Rule("mce", "hw_error_corrected", r"\[Hardware Error\]: event severity: ", None, "warning"),
    Rule("mce", "memory_failure", r"Uncorrected hardware memory error|Memory failure: 0x", "host_hw", "error"),
    Rule("mce", "edac_uncorrected", r"EDAC (?:\S+ )?MC\d+: \d+ (?:UE|Fatal) ", "host_hw", "error"),
    Rule("mce", "edac_corrected", r"EDAC (?:\S+ )?MC\d+: \d+ CE ", None, "warning"),
    # NOTE: a CPU the watchdog finds stuck (a soft lockup: no scheduling for 20 s and more; a hard one: no
    # interrupts either) is, like a hung task, a node fault whose cause the line does not say: `unknown`, a warning
    Rule("cpu", "soft_lockup", r"soft lockup - CPU#\d+ stuck", "unknown", "warning"),
    Rule("cpu", "hard_lockup", r"Watchdog detected hard LOCKUP on cpu \d+", "unknown", "warning"),
    # the kernel's other lockup detectors, same verdict: the workqueue watchdog (a worker pool that ran nothing
    # for 30 s and more: workqueue.c's 'BUG: workqueue lockup - pool cpus=14 node=0 ... stuck for 360s!') and RCU's
    # stall detector ('rcu: INFO: rcu_sched self-detected stall on CPU'; kernels before 4.19 print no 'rcu: ',
    # 'INFO: rcu_preempt detected stalls on CPUs/tasks:')
    Rule("cpu", "workqueue_lockup", r"BUG: workqueue lockup - pool ", "unknown", "warning"),
    Rule("cpu", "rcu_stall", r"INFO: rcu_\w+ (?:self-)?detected (?:stalls?|expedited stalls)", "unknown", "warning"),
    # A kernel fault (an oops, a GPF, a BUG) whose instruction pointer is in a shared filesystem's client module
    # (`RIP: 0010:FhgfsOpsCommkit_communicate+0x3d6/0x1620 [beegfs]`, pre-4.x `RIP: 0010:[<addr>]  [<addr>] f+0x1/0x2
    # [lustre]`): that client is broken on the node, and so is its I/O. Its frames elsewhere say where, not what.
    Rule("fsclient", "fs_module_fault", _FS_RIP, "filesystem_io", "error"),
    # systemd giving up on a shared filesystem's client service or mount unit: the node runs without that filesystem
    Rule("fsclient", "fs_client_failed", _FS_CLIENT_FAILED, "filesystem_io", "error"),
    Rule("fsclient", "ceph_session_lost", r"\bceph: (?:mds\d+ (?:reconnect denied|hung)\b| +dropping dirty)",
         "filesystem_io", "error"),  # the MDS refused or lost a CephFS client's session (its dirty data dropped)
)

_BDF = r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?"


# Per family, the extracted columns that may hold the PCI address of the device at fault, best first
# (for AER, the device that sent the error message, else the port that reported it).
PCI_COLUMNS: dict[str, tuple[str, ...]] = {
    "xid": ("xbus",), "gpu": ("gbus",), "sxid": ("sbus",), "aer": ("asrc", "adev"), "link": ("ldev",),
}

# Per family, regexes whose named groups become columns of that family's lines.
EXTRACTORS: dict[str, list[str]] = {
    "xid": [
        r"NVRM: Xid \((?:PCI:)?(?P<xbus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})?[^)]*\): (?P<xcode>\d+)"
        r"(?:, *pid='?(?P<xpid>[^,']*)'?)?(?:, *name=(?P<xname>[^,]*))?(?:, *(?P<xmsg>.*))?",
        r"recovery action changed from [^(]*\([^)]*\) to \w+ \((?P<recovery>[^)]*)\)",
        r"(?i:link) (?P<nvlink>\d+)",
    ],
    "gpu": [rf"(?P<gbus>{_BDF})", r"NVRM: (?P<gmsg>.*)", r"NVRM: GPU(?P<gidx>\d+) "],
    "sxid": [rf"(?P<sdev>nvidia-nvswitch\d*): SXid \((?:PCI:)?(?P<sbus>{_BDF})\): (?P<sxid>\d+), (?P<ssev>[^,]+)"
             r"(?:, (?P<smsg>.*))?", r"Link (?P<slink>\d+)"],
    "aer": [
        rf"^(?P<adrv>[\w-]+) (?P<adev>{_BDF}): ",
        r"received(?::| from) (?:id=)?(?P<asrc>[0-9A-Fa-f:.]+)",
        r"severity=(?P<asev>[^,]+), type=(?P<atype>[^,]+)",
    ],
    "link": [
        rf"^(?P<ldrv>[\w-]+) (?P<ldev>{_BDF})",
        r"(?:(?P<lifc>[\w.@-]+): )(?:Port: (?P<lport>\d+) |NIC )?Link (?:is )?(?P<lstate>\w+)",
        r"module (?P<lmodule>\d+), (?P<lcable>Cable \w+)(?:, (?P<lcable_err>.+))?",
    ],
    "oom": [
        r"process (?P<opid>\d+) \((?P<ocomm>[^)]*)\)",
        r"constraint=(?P<oconstraint>[^,]+)",
        r"oom_memcg=(?P<omemcg>[^,]+)",
        r"task_memcg=(?P<otask_memcg>[^,]+)",
        r",task=(?P<otask>[^,]*),pid=(?P<opid2>\d+)",
        r"^(?P<ocomm2>\S+) invoked oom-killer",
        r"^Task in (?P<otask_memcg2>\S+) killed as a result of limit of (?P<omemcg2>\S+)",
        r"^Killed (?P<omemcg3>/\S+) due to ",
    ],
    "hung": [r"INFO: task (?P<htask>.+):(?P<hpid>\d+) blocked for more than (?P<hsecs>\d+) seconds",
             r"^task:(?P<htask2>\S+) +state:D .*\bpid: *(?P<hpid2>\d+)"],
    "nfs": [r"\b(?P<nprog>nfs|nfs4|lockd): server (?P<nserver>\S+) (?P<nstate>not responding, [\w ]+|OK)"],
    "lustre": [r"(?P<ltarget>[\w-]+-(?:OST|MDT|MGS)[0-9A-Fa-f]*)", r"(?P<lnid>[\w.:-]+@(?:o2ib|tcp|gni|kfi)\d*)",
               r"@@@ Request sent has [^\[]*\[sent (?P<lsent>\d{9,10})/"],  # (the request's send time: epoch s)
    "block": [r"(?:\bdev(?:ice)? |\(device |XFS \(|EXT[234]-fs \(|nvme )(?P<bdev>[\w.-]+)", r"sector (?P<bsector>\d+)"],
    "mce": [
        r"CPU (?P<mcpu>\d+): Machine Check(?: Exception)?: \w+ Bank (?P<mbank>\d+): (?P<mstatus>[0-9a-fA-F]+)",
        r"EDAC (?:\S+ )?MC(?P<emc>\d+): (?P<ecount>\d+) (?:CE|UE|Fatal) (?P<emsg>.*?)(?: on (?P<eloc>\S+))?"
        r"(?: \(|$)",
    ],
    "cpu": [r"CPU#(?P<ccpu>\d+) stuck for (?P<csecs>\d+)s! \[(?P<ctask>[^\]]*)\]", r"not syncing: (?P<cwhy>.*)",
            r"hard LOCKUP on cpu (?P<ccpu2>\d+)"],
    "fsclient": [r"RIP: [0-9a-f]{4}:(?:\S+ +\S+ )?(?P<ffn>[\w.]+)\+\S+ \[(?P<fmod>\w+)\]",
                 r"Failed to (?:start|mount) (?P<funit>\S+?)\.?(?: - |$)"],
}


def _int(name: str) -> pl.Expr:
    """An extracted number as an integer (null where the line printed something else)."""
    return pl.col(name).cast(pl.Int64, strict=False)


def _known(name: str) -> pl.Expr:
    """A process name or pid as the driver printed it, null where it printed `<unknown>` or `N/A`."""
    return pl.when(pl.col(name).str.contains(r"^(?:<.*>|N/A|)$")).then(None).otherwise(pl.col(name))


def _details() -> dict[str, dict[str, pl.Expr]]:
    """Per family, the `detail` JSON fields and how each is computed from the extracted columns."""
    return {
        "xid": {"pid": _int("xpid"), "process": _known("xname"), "message": pl.col("xmsg"),
                "action": pl.col("xaction"), "root_cause": pl.col("xroot"), "description": pl.col("xdesc"),
                "recovery_action": pl.col("recovery"), "link": _int("nvlink")},
        "gpu": {"message": pl.col("gmsg"), "gpu_index": _int("gidx")},
        "sxid": {"sxid": _int("sxid"), "sxid_severity": pl.col("ssev"), "device": pl.col("sdev"),
                 "message": pl.col("smsg"), "link": _int("slink")},
        "aer": {"driver": pl.col("adrv"), "device": pl.col("adev"), "source": pl.col("asrc"),
                "severity": pl.col("asev"), "error_type": pl.col("atype")},
        "link": {"driver": pl.col("ldrv"), "device": pl.col("ldev"), "interface": pl.col("lifc"),
                 "port": _int("lport"), "state": pl.col("lstate"), "module": _int("lmodule"),
                 "cable": pl.col("lcable"), "cable_error": pl.col("lcable_err")},
        "oom": {"pid": pl.coalesce(_int("opid"), _int("opid2")), "process": pl.coalesce("ocomm", "otask", "ocomm2"),
                "constraint": pl.col("oconstraint"), "memcg": pl.coalesce("omemcg", "omemcg2", "omemcg3"),
                "task_memcg": pl.coalesce("otask_memcg", "otask_memcg2")},
        "hung": {"task": pl.coalesce("htask", "htask2"), "pid": pl.coalesce(_int("hpid"), _int("hpid2")),
                 "blocked_s": _int("hsecs"),
                 "blocked_in": pl.col("blocked_in"), "frame": pl.col("hframe")},
        "nfs": {"program": pl.col("nprog"), "server": pl.col("nserver"), "state": pl.col("nstate")},
        "lustre": {"target": pl.col("ltarget"), "nid": pl.col("lnid"), "sent": _int("lsent")},
        "block": {"device": pl.col("bdev"), "sector": _int("bsector")},
        "mce": {"cpu": _int("mcpu"), "bank": _int("mbank"), "status": pl.col("mstatus"), "mc": _int("emc"),
                "count": _int("ecount"), "location": pl.col("eloc")},
        "cpu": {"cpu": pl.coalesce(_int("ccpu"), _int("ccpu2")), "stuck_s": _int("csecs"), "task": pl.col("ctask"),
                "reason": pl.col("cwhy")},
        "fsclient": {"function": pl.col("ffn"), "module": pl.col("fmod"), "unit": pl.col("funit")},
    }


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802  (a collector's contract names are capitals)
    """What parse() reads of the context: kernel logs agreeing on it may be parsed together."""
    return ctx.tz, ctx.boot_time, ctx.known_hosts  # (a file's year comes with its lines: FILE_YEAR_COLUMNS)


FILE_HOST_COLUMN = True  # parsed with other files, the lines carry their file's host (ctx.host) as `file_host`
FILE_YEAR_COLUMNS = True  # ... and their file's year context as YEAR_COLUMNS (`_base.yearless`)


def sniff(head: bytes, path: str) -> bool:
    """A kernel log: lines in one of the dmesg / journal / syslog spellings, or kernel events we read."""
    lines = [ln for ln in head.decode("utf-8", "replace").splitlines()[:400] if ln.strip()]
    kernel = 0
    for ln in lines:  # (three are enough: not every line of every file is matched, a sniff runs on each)
        kernel += _kernel_time.KERNEL_LINE.match(ln) is not None
        if kernel >= 3:
            return True
    if kernel and kernel == len(lines):
        return True
    return search(lines, PATTERN)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """Events from the kernel log lines of one batch."""
    out = Parsed()
    frame = _kernel_time.split_prefix(lines, ctx)
    frame = frame.with_columns(ts=_kernel_time.timestamp(ctx), host=_kernel_time.host(ctx))
    if ctx.boot_time is None:
        frame = _kernel_time.boot_from_own_lines(frame)
        raw = frame.filter(pl.col("up").is_not_null() & pl.col("ts").is_null())
        if raw.height:
            # NOTE: never refused: an Xid 79 is worth reporting without its time. The lines are kept undated
            # (ts empty, `dated` = undated) and dated after the ingest where the same boot's time is found
            # (clusterlab.ingest.boot: a boot_time file put beside it later, a journal of the same boot).
            # (one warning for each file of a group, at its first such line: the group sends them all back at once)
            firsts = raw.group_by(file_of_line().alias("_f")).agg(pl.col("line").min())["line"].sort()
            out.warnings += [f"line {n}: raw dmesg timestamps but no boot time: kept undated (put a boot_time file "
                             "beside the log, or the journal of the same boot)" for n in firsts.to_list()]
    # Lines another program wrote into the journal or syslog are not kernel events, even if they
    # quote one (a health daemon repeating an Xid would count it twice).
    # (systemd's own verdict on a filesystem client's unit is the node's, whichever program logs it)
    # (so is systemd-oomd's kill of a cgroup: the node's memory ran out, whichever daemon acted on it)
    foreign = frame["prog"].is_not_null() & ~frame["msg"].str.contains(f"{_FS_CLIENT_FAILED}|{_USER_OOM_KILL}")
    unread = [frame.filter(foreign)["line"]]
    # Call-trace frames are read into the hung task they belong to, never events of their own.
    frame = _attach_traces(frame.filter(~foreign))
    # The first rule whose regex matches the message decides family, kind, failure mode and severity.
    frame = classify(frame, RULES, col="msg", index="rule")
    # A dmesg -H minute line that says nothing else of interest was selected for its clock alone.
    unread.append(frame.filter(pl.col("rule").is_null() & pl.col("rel").is_null())["line"])
    # One pass per family over its own lines only: a family's regexes never see the others' lines.
    for (family,), part in sorted(frame.filter(pl.col("rule").is_not_null()).partition_by(
            "family", as_dict=True, maintain_order=True).items()):
        events, unreadable = _family_events(family, part)
        unread.append(unreadable)
        out.add("events", events)
    if "events" in out.tables:
        out.tables["events"] = out.tables["events"].sort("line")
    # by number, not only counted: files parsed together get their own counts (clusterlab.ingest.groups_text)
    out.unparsed_lines = pl.concat([u.cast(pl.Int64) for u in unread]).sort()
    out.unparsed = len(out.unparsed_lines)
    return out


def _attach_traces(frame: pl.DataFrame) -> pl.DataFrame:
    """The batch without its call-trace frames; each hung-task header gets `blocked_in` (nfs, lustre) and
    `hframe` (the first such function) from the shared-filesystem frames of its trace."""
    is_frame = (pl.col("msg").str.contains(r"\+0x[0-9a-f]+/0x[0-9a-f]+") & ~pl.col("msg").str.contains(_HUNG)
                & ~pl.col("msg").str.contains(_TASK_STATE) & ~pl.col("msg").str.contains(_FS_RIP))
    g = pl.col("msg").str.extract_groups(_FRAME)
    fn, mod = g.struct.field("fn"), g.struct.field("mod")
    fs = (pl.when(mod.is_in(_NFS_MODULES) | fn.str.contains(r"^nfs4?_")).then(pl.lit("nfs"))
          .when(mod.is_in(_LUSTRE_MODULES)).then(pl.lit("lustre"))
          .when(mod.is_in(list(_OTHER_FS_MODULES))).then(mod.replace_strict(_OTHER_FS_MODULES, default=None)))
    frames = frame.filter(is_frame).select("line", fs.alias("blocked_in"), fn.alias("hframe")).filter(
        pl.col("blocked_in").is_not_null())
    # NOTE: the `task:<name> state:D` line a hung-task header prints a few lines below it belongs to that
    # report; one with no header above it (sysrq-w, a paste that starts there) heads a report of its own.
    headers = frame.filter(pl.col("msg").str.contains(_HUNG)).select(pl.col("line").alias("hline"))
    states = frame.filter(pl.col("msg").str.contains(_TASK_STATE)).select("line")
    if states.height:
        near = states.sort("line").join_asof(headers.sort("hline"), left_on="line", right_on="hline",
                                             strategy="backward", tolerance=HEADER_LINES, check_sortedness=False)
        owned = near.filter(pl.col("hline").is_not_null())["line"]
        frame = frame.filter(~pl.col("line").is_in(owned.implode()))
        headers = pl.concat([headers, near.filter(pl.col("hline").is_null()).select(hline="line")])
    heads = headers
    per = pl.DataFrame(schema={"hline": pl.Int64, "blocked_in": pl.String, "hframe": pl.String})
    if frames.height and heads.height:
        # NOTE: each frame goes to the nearest header before it (the next report starts a new trace).
        got = frames.sort("line").join_asof(heads.sort("hline"), left_on="line", right_on="hline",
                                            strategy="backward", tolerance=TRACE_LINES, check_sortedness=False)
        per = got.filter(pl.col("hline").is_not_null()).group_by("hline").agg(
            pl.col("blocked_in").sort_by("line").first(), pl.col("hframe").sort_by("line").first())
    return frame.filter(~is_frame).join(per, left_on="line", right_on="hline", how="left", maintain_order="left")


def _family_events(family: str, part: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series]:
    """The events of one rule family's lines, and the lines that could not be read."""
    part = extract_all(part, EXTRACTORS[family], col="msg")
    unreadable = part["line"].clear()
    if family == "xid":  # an Xid line without its code (cut short, garbled) is kept as unrecognised
        unreadable = part.filter(pl.col("xcode").is_null())["line"]
        part = _apply_xid(part)
    elif family == "mce":
        part = _mce_uncorrected(part)
    elif family == "hung":
        part = _hung_on_filesystem(part)
    elif family == "aer":
        part = aer_flood(part)
    elif family == "block":
        part = _quiet_noisy_devices(part)
    elif family == "sxid":
        part = _sxid_data_alone(part)
    pci = [_bdf(pl.col(c)) for c in PCI_COLUMNS.get(family, ())]
    # Fields a line did not have are left out rather than written as null (none: `{}`).
    detail = json_detail(_details()[family]).fill_null("{}")
    events = part.select(
        pl.col("line").cast(pl.Int64), pl.col("ts").cast(TABLE_COLUMNS["events"]["ts"]), pl.col("host"),
        pl.col("kind"), pl.col("failure_mode"), pl.col("severity"),
        (pl.col("xid") if family == "xid" else pl.lit(None)).cast(pl.Int32, strict=False).alias("xid"),
        (pl.coalesce(pci) if pci else pl.lit(None, pl.String)).alias("pci_bus"),
        pl.col("text"), detail.alias("detail"),
    )
    return events, unreadable


def _apply_xid(part: pl.DataFrame) -> pl.DataFrame:
    """Failure mode, action and severity of Xid lines from the taxonomy (one lookup per distinct code)."""
    # NOTE: a follow-on Xid that names its cause (`45, ..., Ch 00000001 caused by previous Xid 149`) carries that
    # Xid's failure mode: it is often all that is left of an NVLink or ECC fault in a grep of the log.
    prev = pl.col("xmsg").str.extract(r"caused by previous Xid (\d+)")
    part = part.with_columns(xid=pl.col("xcode").cast(pl.Int32, strict=False), _prev=prev.cast(pl.Int32, strict=False))
    table = taxonomy.xid_frame(pl.concat([part["xid"], part["_prev"]])).select(
        "xid", xmode="failure_mode", xaction="action", xroot="root_cause", xdesc="description")
    # NOTE: the NVLink5 Xids (144-150) say themselves whether the link error was fatal; a `Nonfatal` one
    # was corrected by the link and only warns.
    nonfatal = pl.col("xid").is_between(144, 150) & pl.col("xmsg").str.contains(r"\bNonfatal\b").fill_null(False)
    unread = pl.col("xid").is_null()
    # NOTE: a follow-on Xid (45, 63, 154: never a root cause alone) is a warning whatever it asks for.
    severity = (pl.when(unread | ~pl.col("xroot") | nonfatal).then(pl.lit("warning"))
                .when(pl.col("xaction") == "drain node").then(pl.lit("critical"))
                .when(pl.col("xaction") == "reset GPU").then(pl.lit("error"))
                .otherwise(pl.lit("warning")))
    caused = ~pl.col("xroot").fill_null(True) & pl.col("_pmode").is_not_null()
    # NOTE: a non-fatal one is still evidence of the link's trouble: its mode, as a warning (root cause ranks a
    # warning of a hardware mode as a symptom, incidents.TIERS)
    mode = (pl.when(unread).then(pl.lit("unknown")).when(caused).then(pl.col("_pmode")).otherwise(pl.col("xmode")))
    causes = table.select(_prev="xid", _pmode="xmode")
    return (part.join(table, on="xid", how="left", maintain_order="left")
            .join(causes, on="_prev", how="left", maintain_order="left")
            .with_columns(failure_mode=mode, severity=severity,
                          kind=pl.when(unread).then(pl.lit("unrecognised")).otherwise(pl.col("kind")))
            .drop("_prev", "_pmode"))


def _mce_uncorrected(part: pl.DataFrame) -> pl.DataFrame:
    """A machine check whose MCi_STATUS has bit 61 (UC) set was not corrected: host hardware at fault."""
    status = pl.col("mstatus").str.to_lowercase()
    uc = ((pl.col("kind") == "mce_corrected") & (status.str.len_chars() == 16)
          & status.str.slice(0, 1).is_in(list("2367abef")))
    return part.with_columns(
        kind=pl.when(uc).then(pl.lit("mce_uncorrected")).otherwise(pl.col("kind")),
        failure_mode=pl.when(uc).then(pl.lit("host_hw")).otherwise(pl.col("failure_mode")),
        severity=pl.when(uc).then(pl.lit("error")).otherwise(pl.col("severity")),
    )


def _quiet_noisy_devices(part: pl.DataFrame) -> pl.DataFrame:
    """I/O errors of a VM's floppy or CD drive or of a loop device are informational, never a failure."""
    noisy = pl.col("bdev").str.contains(_NOISY_BLOCK_DEV).fill_null(False)
    return part.with_columns(
        failure_mode=pl.when(noisy).then(None).otherwise(pl.col("failure_mode")),
        severity=pl.when(noisy).then(pl.lit("info")).otherwise(pl.col("severity")),
    )


def _sxid_data_alone(part: pl.DataFrame) -> pl.DataFrame:
    """An SXid's `Data {..}` line belongs to the severity line of the same switch and code (before or after it:
    the order varies) and is no event of its own. One whose severity line the excerpt lacks still says an NVSwitch
    reported an NVLink error: kept as such, a warning, its severity unknown (the code alone does not say it: one
    SXid code is fatal on one port and non-fatal on another)."""
    is_data = pl.col("kind") == "sxid_data"
    paired = (~is_data).any().over(pl.col("sbus"), pl.col("sxid"))
    return part.filter(~(is_data & paired)).with_columns(ssev=pl.when(is_data).then(pl.lit("unknown"))
                                                          .otherwise(pl.col("ssev")))


def _hung_on_filesystem(part: pl.DataFrame) -> pl.DataFrame:
    """A hung task is a filesystem stall when its line or its trace names NFS or Lustre, else cause unknown."""
    fs = pl.col("msg").str.contains(_FS_TASK) | pl.col("blocked_in").is_not_null()
    return part.with_columns(
        failure_mode=pl.when(fs).then(pl.lit("filesystem_io")).otherwise(pl.col("failure_mode")),
        severity=pl.when(fs).then(pl.lit("error")).otherwise(pl.col("severity")),
    )


def _bdf(expr: pl.Expr) -> pl.Expr:
    """`0000:5d:00` (domain:bus:device, as Xid lines print it) from any spelling of a PCI address."""
    g = expr.str.to_lowercase().str.extract_groups(
        r"^(?:(?P<dom>[0-9a-f]{4,8}):)?(?P<bus>[0-9a-f]{2}):(?P<dev>[0-9a-f]{2})(?:\.[0-7])?$")
    dom = g.struct.field("dom").str.slice(-4).fill_null("0000")
    return pl.concat_str([dom, g.struct.field("bus"), g.struct.field("dev")], separator=":")

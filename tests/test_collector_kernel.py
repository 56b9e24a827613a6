"""The kernel log collector: time formats, hosts, and what each kind of kernel line becomes."""

from __future__ import annotations

import datetime as dt
import json
import re
import time

import polars as pl
import pytest

from clusterlab.collectors import _aer_flood, kernel
from clusterlab.collectors._base import Context, Parsed

BOOT = dt.datetime(2026, 11, 25, 6, 0, 0)


def parse(lines: list[str], **ctx) -> Parsed:
    """Parse `lines` as one batch (numbered from 1), as the engine would hand them over."""
    frame = pl.DataFrame({"line": pl.Series(range(1, len(lines) + 1), dtype=pl.Int64), "text": lines})
    return kernel.parse(frame, Context(path="test.log", **ctx))


def rows(lines: list[str], **ctx) -> list[dict]:
    parsed = parse(lines, **ctx)
    events = parsed.tables.get("events")
    return [] if events is None else events.to_dicts()


def one(line: str, **ctx) -> dict:
    got = rows([line], **ctx)
    assert len(got) == 1, got
    return got[0]


def detail(row: dict) -> dict:
    return json.loads(row["detail"])


# --- NVIDIA Xid --------------------------------------------------------------------------------

def test_xid79_is_gpu_fell_off_bus() -> None:
    r = one("[ 9000.612360] NVRM: Xid (PCI:0000:5d:00): 79, pid=1234, name=python, GPU has fallen off the bus.",
            boot_time=BOOT)
    assert (r["kind"], r["xid"], r["failure_mode"], r["severity"]) == ("xid", 79, "gpu_fell_off_bus", "critical")
    assert r["pci_bus"] == "0000:5d:00"
    assert r["ts"] == dt.datetime(2026, 11, 25, 8, 30, 0, 612360)
    d = detail(r)
    assert d["pid"] == 1234 and d["process"] == "python"
    assert d["message"] == "GPU has fallen off the bus."
    assert d["action"] == "drain node" and d["root_cause"] is True


def test_xid13_is_an_application_error_not_a_hardware_fault() -> None:
    r = one("NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on "
            "(GPC 7, TPC 7, SM 0): Illegal Instruction Parameter")
    assert (r["xid"], r["failure_mode"], r["severity"]) == (13, "cuda_error", "warning")
    assert "pid" not in detail(r) and "process" not in detail(r)


@pytest.mark.parametrize(("line", "code", "bus"), [
    ("NVRM: Xid (PCI:0000:18:00): 48, pid=77, DBE (double bit error) ECC error", 48, "0000:18:00"),
    ("NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.", 79, "0000:02:00"),
    ("NVRM: Xid (0000:03:00): 14, Channel 00000001", 14, "0000:03:00"),
    ("NVRM: Xid (PCI:0000:AF:00): 48, An uncorrectable double bit error (DBE) has been detected", 48, "0000:af:00"),
    ("NVRM: Xid (PCI:0000:17:00.0): 94, pid=1, Contained: SM (0x1). RST: No, D-RST: No", 94, "0000:17:00"),
    ("NVRM: Xid (PCI:0000:3b:00 GPU-I:00 GPU-CI:00): 63, pid=12, name=python, Retiring page", 63, "0000:3b:00"),
    ("NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
     154, "0008:01:00"),
    ("NVRM: Xid (PCI:0000:01:00): 62, 023f0f30 00000000 00000000 202c0ffe", 62, "0000:01:00"),
    ("NVRM: Xid (PCI:0000:65:00): 74, pid=<n/a>, name=<unknown>, NVLink: fatal error detected on link 2", 74,
     "0000:65:00"),
])
def test_xid_variants_give_code_and_normalised_bus(line: str, code: int, bus: str) -> None:
    r = one(line)
    assert (r["xid"], r["pci_bus"]) == (code, bus)


def test_xid_failure_mode_and_action_come_from_the_taxonomy() -> None:
    got = rows([f"NVRM: Xid (PCI:0000:5d:00): {c}, pid=1, name=python, something" for c in (48, 64, 74, 95, 119, 999)])
    for r in got:
        x = kernel.taxonomy.xid(r["xid"])
        assert r["failure_mode"] == x.failure_mode and detail(r)["action"] == x.action


def test_xid154_is_a_follow_on_warning_with_its_recovery_action() -> None:
    r = one("NVRM: Xid (PCI:0000:5d:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot "
            "Required)")
    assert r["severity"] == "warning"
    assert detail(r)["root_cause"] is False and detail(r)["recovery_action"] == "Node Reboot Required"


def test_xid74_keeps_the_nvlink_link_number() -> None:
    r = one("NVRM: Xid (PCI:0003:00:00): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error detected on "
            "link 14(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)")
    assert r["failure_mode"] == "nvlink_error" and detail(r)["link"] == 14


def test_truncated_xid_line_is_counted_unparsed_and_kept_as_unrecognised() -> None:
    parsed = parse(["[ 1.0] NVRM: Xid (PCI:0000:5d:00): 79, GPU has fallen off the bus.",
                    "[ 2.0] NVRM: Xid (PCI:0000:5d:0"], boot_time=BOOT)
    assert parsed.unparsed == 1
    good, cut = parsed.tables["events"].to_dicts()
    assert good["failure_mode"] == "gpu_fell_off_bus"
    assert (cut["kind"], cut["failure_mode"], cut["severity"], cut["xid"]) == ("unrecognised", "unknown", "warning",
                                                                             None)


def test_gpu_fallen_off_bus_without_xid_is_still_reported() -> None:
    r = one("NVRM: GPU 0000:5d:00.0: GPU has fallen off the bus.")
    assert (r["kind"], r["failure_mode"], r["pci_bus"], r["xid"]) == ("gpu_fell_off_bus", "gpu_fell_off_bus",
                                                                     "0000:5d:00", None)


# --- time formats ------------------------------------------------------------------------------

def test_raw_dmesg_adds_seconds_since_boot() -> None:
    r = one("[ 3600.123456] NVRM: Xid (PCI:0000:cb:00): 13, pid=1, name=x, Graphics Exception", boot_time=BOOT)
    assert r["ts"] == dt.datetime(2026, 11, 25, 7, 0, 0, 123456) and r["host"] is None


def test_raw_dmesg_without_boot_time_keeps_its_events_undated_and_warns() -> None:
    # The engine hands over only the lines PATTERN selected, numbered as in the file.
    xid = "NVRM: Xid (PCI:0000:18:00): 48, pid=1, name=x, DBE"
    frame = pl.DataFrame({"line": [17, 40], "text": [f"[  811.002211] {xid}", f"[  812.000000] {xid}"]})
    parsed = kernel.parse(frame, Context(path="dmesg.log"))
    assert parsed.refuse is None and parsed.warnings == [
        "line 17: raw dmesg timestamps but no boot time: kept undated (put a boot_time file beside the log, "
        "or the journal of the same boot)"]
    events = parsed.tables["events"]
    assert events["ts"].null_count() == 2 and events["failure_mode"].to_list() == ["gpu_memory_ecc"] * 2


def test_dmesg_T_local_time_converted_to_utc() -> None:
    # November in Chicago is UTC-6; the weekday printed is not checked (the 25th is a Wednesday).
    r = one("[Tue Nov 25 03:14:07 2026] Out of memory: Killed process 48211 (python3) total-vm:1kB",
            tz="America/Chicago")
    assert r["ts"] == dt.datetime(2026, 11, 25, 9, 14, 7)


def test_dmesg_T_space_padded_day() -> None:
    r = one("[Wed Aug  5 03:12:01 2026] NVRM: Xid (PCI:0000:65:00): 74, NVLink: fatal error detected on link 2",
            tz="Europe/Berlin")
    assert r["ts"] == dt.datetime(2026, 8, 5, 1, 12, 1)


@pytest.mark.parametrize(("prefix", "ts"), [
    ("2026-11-25T10:00:01,123456+00:00", dt.datetime(2026, 11, 25, 10, 0, 1, 123456)),
    ("2026-11-25T11:00:01,123456+01:00", dt.datetime(2026, 11, 25, 10, 0, 1, 123456)),
    ("kern  :err   : 2026-11-25T05:00:01,500000-05:00", dt.datetime(2026, 11, 25, 10, 0, 1, 500000)),
])
def test_dmesg_iso_offset_applied(prefix: str, ts: dt.datetime) -> None:
    r = one(f"{prefix} EDAC MC0: 1 UE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (channel:1 slot:0)")
    assert r["ts"] == ts
    assert r["host"] is None  # `EDAC MC0:` is the message, not a host and a program


@pytest.mark.parametrize(("prefix", "ts"), [
    ("2026-11-25T10:00:01+0000", dt.datetime(2026, 11, 25, 10, 0, 1)),  # short-iso
    ("2026-11-25T10:00:01.123456+0000", dt.datetime(2026, 11, 25, 10, 0, 1, 123456)),  # short-iso-precise
    ("2026-11-25T19:00:01+09:00", dt.datetime(2026, 11, 25, 10, 0, 1)),  # newer systemd
    ("2026-11-25T10:00:01.123456+00:00", dt.datetime(2026, 11, 25, 10, 0, 1, 123456)),  # RFC 3339 syslog
    ("2026-11-25T10:00:01.5Z", dt.datetime(2026, 11, 25, 10, 0, 1, 500000)),
])
def test_journal_and_rfc3339_syslog_take_time_and_host_from_the_line(prefix: str, ts: dt.datetime) -> None:
    r = one(f"{prefix} gpu-042 kernel: nfs: server nfs01 not responding, still trying", host="other")
    assert (r["ts"], r["host"]) == (ts, "gpu-042")


def test_classic_syslog_uses_context_year_and_timezone_and_ignores_uptime() -> None:
    r = one("Nov 25 19:04:12 gpu-003 kernel: [680361.100000] NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off "
            "the bus.", year=2025, tz="Asia/Tokyo", boot_time=BOOT)
    assert (r["ts"], r["host"], r["xid"]) == (dt.datetime(2025, 11, 25, 10, 4, 12), "gpu-003", 79)


def test_journal_short_precise_keeps_microseconds_in_local_time() -> None:
    r = one("Nov 25 19:04:12.250000 gpu-003 kernel: NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.",
            year=2026, tz="Asia/Tokyo")
    assert (r["ts"], r["host"]) == (dt.datetime(2026, 11, 25, 10, 4, 12, 250000), "gpu-003")


def test_fqdn_host_becomes_the_known_node_name() -> None:
    line = "2026-11-25T10:00:01+0000 gpu-007.acme.internal kernel: nfs: server nfs01 OK"
    assert one(line, known_hosts=frozenset({"gpu-007"}))["host"] == "gpu-007"
    assert one(line)["host"] == "gpu-007.acme.internal"


def test_line_without_time_keeps_null_time_for_the_engine_to_fill() -> None:
    r = one("NVRM: Xid (PCI:0000:5d:00): 79, pid=1, name=python, GPU has fallen off the bus.")
    assert r["ts"] is None and r["host"] is None


def test_other_program_quoting_an_xid_is_not_an_event() -> None:
    parsed = parse(["Nov 25 19:04:11 gpu-003 gpu-healthd[2211]: alert: NVRM: Xid (PCI:0000:02:00): 79, GPU has "
                    "fallen off the bus."])
    assert "events" not in parsed.tables and parsed.unparsed == 1


# --- other kernel events -----------------------------------------------------------------------

def test_aer_uncorrected_fatal_is_pcie_error_on_the_failing_device() -> None:
    r = one("pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:03:00.0")
    assert (r["kind"], r["failure_mode"], r["severity"], r["pci_bus"]) == ("pcie_aer", "pcie_error", "critical",
                                                                          "0000:03:00")


@pytest.mark.parametrize("line", [
    "pcieport 0000:00:1c.5: AER: Corrected error received: id=00e5",
    "pcieport 0000:00:1c.1: AER: Multiple Corrected error received: 0000:00:1c.1",
    "pcieport 0000:80:1b.4: AER: Correctable error message received from 0000:80:1b.4",
    "pcieport 0000:00:1d.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)",
])
def test_aer_corrected_errors_are_pcie_error_warnings(line: str) -> None:
    # a PCIe error the link coped with: root cause ranks it as a symptom (incidents.TIERS)
    r = one(line)
    assert (r["severity"], r["failure_mode"]) == ("warning", "pcie_error")
    assert r["pci_bus"] is not None and r["pci_bus"].startswith("0000:")


def test_aer_new_kernel_non_fatal_spelling() -> None:
    r = one("nvidia 0000:81:00.0: PCIe Bus Error: severity=Uncorrectable (Non-Fatal), type=Transaction Layer, "
            "(Requester ID)")
    assert (r["kind"], r["failure_mode"], r["severity"], r["pci_bus"]) == ("pcie_bus_error", "pcie_error", "error",
                                                                          "0000:81:00")
    assert detail(r)["error_type"] == "Transaction Layer"


@pytest.mark.parametrize(("line", "kind", "mode"), [
    ("mlx5_core 0000:3b:00.0 ens1f0np0: Link down", "link_down", "network"),
    ("mlx5_core 0000:3b:00.0 ens1f0np0: Link up", "link_up", None),
    ("mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link DOWN", "link_down", "network"),
    ("mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link ACTIVE", "link_up", None),
    ("mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link INIT", "link_state", None),
    ("mlx5_core 0000:9a:00.0 ibp154s0: Link down", "link_down", "network"),
    ("mlx5_core 0000:1a:00.0: Port module event: module 0, Cable unplugged", "port_module_error", "network"),
    ("mlx5_core 0000:9a:00.0: Port module event[error]: module 3, Cable error, High Temperature",
     "port_module_error", "network"),
    ("mlx5_core 0000:1a:00.0: Port module event: module 0, Cable plugged", "port_module", None),
])
def test_nic_link_state(line: str, kind: str, mode: str | None) -> None:
    r = one(line)
    assert (r["kind"], r["failure_mode"]) == (kind, mode)
    assert r["pci_bus"] == line.split()[1][:10]


def test_ib_link_down_names_interface_and_port() -> None:
    d = detail(one("mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link DOWN"))
    assert (d["interface"], d["port"], d["driver"]) == ("mlx5_5", 1, "mlx5_core")


@pytest.mark.parametrize("line", [
    "Out of memory: Killed process 1234 (python) total-vm:123456kB, anon-rss:1kB, file-rss:0kB, shmem-rss:0kB",
    "Memory cgroup out of memory: Killed process 1234 (python) total-vm:1kB, anon-rss:1kB, file-rss:0kB",
    "Out of memory: Kill process 1234 (python) score 912 or sacrifice child",
])
def test_oom_killer_is_host_oom_with_pid_and_process(line: str) -> None:
    r = one(line)
    assert (r["kind"], r["failure_mode"], r["severity"]) == ("oom_kill", "host_oom", "error")
    assert (detail(r)["pid"], detail(r)["process"]) == (1234, "python")


def test_oom_constraint_line_keeps_the_memory_cgroup() -> None:
    r = one("oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-1,"
            "oom_memcg=/slurm/uid_1000/job_4242,task_memcg=/slurm/uid_1000/job_4242/step_0,task=python3,pid=48211,"
            "uid=1000")
    d = detail(r)
    assert (r["kind"], r["failure_mode"]) == ("oom_constraint", "host_oom")
    assert (d["memcg"], d["pid"], d["process"]) == ("/slurm/uid_1000/job_4242", 48211, "python3")


@pytest.mark.parametrize(("line", "mode"), [
    ("INFO: task python:1234 blocked for more than 120 seconds.", "unknown"),
    ("INFO: task kworker/u130:2:1187 blocked for more than 122 seconds.", "unknown"),
    ("INFO: task nfsiod:612 blocked for more than 245 seconds.", "filesystem_io"),
    ("INFO: task ptlrpcd_01_00:2301 blocked for more than 120 seconds.", "filesystem_io"),
])
def test_hung_task_is_filesystem_io_only_when_the_line_names_nfs_or_lustre(line: str, mode: str) -> None:
    # (issue 30: a hung task carries a failure mode, `unknown` where nothing says why it hangs)
    r = one(line)
    assert (r["kind"], r["failure_mode"]) == ("hung_task", mode)
    assert detail(r)["task"] == line.split("task ")[1].rsplit(":", 1)[0]


def test_nfs_not_responding_then_ok() -> None:
    bad, worse, ok = rows(["nfs: server nfs01 not responding, still trying",
                           "nfs: server nfs01 not responding, timed out", "nfs: server nfs01 OK"])
    assert (bad["failure_mode"], bad["severity"], detail(bad)["server"]) == ("filesystem_io", "warning", "nfs01")
    assert (worse["failure_mode"], worse["severity"]) == ("filesystem_io", "error")
    assert (ok["kind"], ok["failure_mode"]) == ("nfs_server_ok", None)


def test_lustre_connection_lost_names_target_and_server() -> None:
    r = one("Lustre: scratch-OST0007-osc-ffff9a3c1e2f8000: Connection to scratch-OST0007 (at 10.40.0.17@o2ib) was "
            "lost; in progress operations using this service will wait for recovery to complete")
    assert (r["kind"], r["failure_mode"]) == ("lustre_connection_lost", "filesystem_io")
    assert detail(r) == {"target": "scratch-OST0007", "nid": "10.40.0.17@o2ib"}


@pytest.mark.parametrize(("line", "kind", "mode"), [
    ("EDAC MC3: 1 UE memory read error on CPU_SrcID#1_MC#1_Chan#2_DIMM#0 (channel:2 slot:0 page:0xb757589)",
     "edac_uncorrected", "host_hw"),
    ("EDAC MC0: 4 CE error on CPU#0Channel#2_DIMM#0 (channel:2 slot:0 page:0x0 offset:0x0 grain:8)",
     "edac_corrected", None),
    ("mce: [Hardware Error]: Machine check events logged", "mce_logged", None),
    ("mce: [Hardware Error]: CPU 44: Machine Check: 0 Bank 13: 8c00004000010090", "mce_corrected", None),
    ("mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 7: be00000000800400", "mce_uncorrected", "host_hw"),
    ("mce: [Hardware Error]: CPU 0: Machine Check Exception: 5 Bank 4: b200000000070f0f", "mce_exception", "host_hw"),
    ("Kernel panic - not syncing: Fatal machine check", "mce_panic", "host_hw"),
    ("Memory failure: 0x4a3f1f: recovery action for dirty LRU page: Recovered", "memory_failure", "host_hw"),
])
def test_machine_checks_are_host_hw_only_when_uncorrected(line: str, kind: str, mode: str | None) -> None:
    r = one(line)
    assert (r["kind"], r["failure_mode"]) == (kind, mode)


def test_edac_detail_names_the_dimm() -> None:
    d = detail(one("EDAC MC3: 1 UE memory read error on CPU_SrcID#1_MC#1_Chan#2_DIMM#0 (channel:2 slot:0)"))
    assert (d["mc"], d["count"], d["location"]) == (3, 1, "CPU_SrcID#1_MC#1_Chan#2_DIMM#0")


def test_nvswitch_sxid_fatal_is_nvlink_error_non_fatal_is_a_warning() -> None:
    fatal, minor, severity0 = rows([
        "nvidia-nvswitch1: SXid (PCI:0000:84:00.0): 12028, Fatal, Link 04 egress non-posted PRIV error (First)",
        "nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 44 Minion Link DLREQ interrupt",
        "nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Severity 0 Engine instance 44 Sub-engine instance 00",
    ])
    assert (fatal["kind"], fatal["failure_mode"], fatal["pci_bus"]) == ("sxid", "nvlink_error", "0000:84:00")
    assert detail(fatal)["sxid"] == 12028 and fatal["xid"] is None
    assert (minor["failure_mode"], minor["severity"]) == (None, "warning")
    assert (severity0["failure_mode"], severity0["severity"]) == (None, "warning")  # the driver's non-fatal


def test_detail_is_a_json_object_without_null_members() -> None:
    for r in rows(["mce: [Hardware Error]: Machine check events logged",
                   "NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus."]):
        d = detail(r)
        assert isinstance(d, dict) and None not in d.values()


# --- PATTERN and sniff -------------------------------------------------------------------------

EXAMPLES = [
    "NVRM: Xid (PCI:0000:5d:00): 79, pid=1234, name=python, GPU has fallen off the bus.",
    "NVRM: GPU 0000:5d:00.0: GPU has fallen off the bus.",
    "NVRM: GPU 0000:65:00.0: row remapping pending, reset the GPU to activate",
    "nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 24007, Fatal, Link 03 sourcetrack TCEN0 crumbstore ECC DBE Error",
    "pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:03:00.0",
    "pcieport 0000:5c:02.0: AER: device recovery failed",
    "mlx5_core 0000:3b:00.0 ens1f0np0: Link down",
    "mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link DOWN",
    "mlx5_core 0000:1a:00.0: Port module event: module 0, Cable unplugged",
    "Out of memory: Killed process 1234 (python) total-vm:1kB",
    "python3 invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0, oom_score_adj=0",
    "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,task=python,pid=1,uid=0",
    "INFO: task python:1234 blocked for more than 120 seconds.",
    "nfs: server nfs01 not responding, still trying",
    "LustreError: 11-0: scratch-OST0007-osc-ffff9a3c1e2f8000: operation ost_write to node 10.40.0.17@o2ib failed",
    "Lustre: scratch-OST0007-osc-ffff: Connection restored to scratch-OST0007 (at 10.40.0.17@o2ib)",
    "mce: [Hardware Error]: Machine check events logged",
    "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (channel:1 slot:0)",
    "mce: Uncorrected hardware memory error in user-access at 4a3f1f000",
    "Kernel panic - not syncing: hung_task: blocked tasks",
    "watchdog: BUG: soft lockup - CPU#12 stuck for 22s! [python:91300]",
]

NOT_KERNEL = [
    "gpu-001:1234:5678 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.0.0.1<0>",
    "gpu-001:1234:5678 [3] NCCL INFO Channel 00/32 :    0   1   2   3   4   5   6   7",
    "gpu-001:1234:5678 [3] NCCL INFO comm 0x5581 rank 3 nRanks 16 nNodes 2 localRanks 8 localRank 3 MNNVL 0",
    "gpu-001:1234:5690 [3] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<42387> with status=12 opcode=0",
    " [2026-11-25 10:00:01] iteration      100/  500000 | consumed samples:       102400 | elapsed time per "
    "iteration (ms): 1234.5 | learning rate: 3.000000E-04 | global batch size:  1024 | lm loss: 2.345678E+00 | "
    "loss scale: 1.0 | grad norm: 0.456 | number of skipped iterations:   0 | number of nan iterations:   0 |",
    "step: 1200  loss:  2.3456  memory: 61.20GiB(77.31%)  tps: 3,456  tflops: 312.45  mfu: 31.59%",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.1 GiB",
    "{'loss': 2.1234, 'grad_norm': 0.87, 'learning_rate': 2.9e-05, 'epoch': 0.12}",
]


def test_pattern_selects_every_example_and_each_is_classified() -> None:
    sel = pl.Series(EXAMPLES).str.contains(kernel.PATTERN)
    assert sel.all(), [e for e, s in zip(EXAMPLES, sel, strict=True) if not s]
    assert all(re.search(kernel.PATTERN, e) for e in EXAMPLES)  # Python's re reads it too
    parsed = parse(EXAMPLES)
    assert parsed.unparsed == 0 and parsed.tables["events"].height == len(EXAMPLES)


def test_pattern_ignores_nccl_and_training_lines() -> None:
    assert not pl.Series(NOT_KERNEL).str.contains(kernel.PATTERN).any()


def test_every_rule_regex_compiles_in_polars() -> None:
    s = pl.Series(EXAMPLES)
    for rule in kernel.RULES:
        s.str.contains(rule.regex)
    for regexes in kernel.EXTRACTORS.values():
        for rx in regexes:
            s.str.extract_groups(rx)


@pytest.mark.parametrize("head", [
    "[    0.000000] Linux version 5.15.0-105-generic\n[    0.000000] Command line: ro\n[    0.004000] x86/fpu: ok\n",
    "[Wed Nov 25 03:10:00 2026] audit: type=1400\n[Wed Nov 25 03:10:01 2026] usb 1-1: new device\n",
    "2026-11-25T10:00:00,000000+01:00 systemd[1]: Started Journal Service.\n",
    "-- Logs begin at Mon 2026-11-23 08:00:01 UTC. --\n2026-11-25T09:00:00+0000 gpu-042 kernel: e1000e: up\n"
    "2026-11-25T09:00:01+0000 gpu-042 kernel: x\n2026-11-25T09:00:02+0000 gpu-042 kernel: y\n",
    "Nov 25 18:59:58 gpu-003 systemd[1]: Starting apt\nNov 25 19:00:02 gpu-003 kernel: [680111.6] NVRM: Xid "
    "(PCI:0000:02:00): 31, pid=1, Ch 00000009\n",
    "2026-11-25T10:05:00.000001+00:00 gpu-005 kernel: pcieport 0000:80:1b.4: AER: Correctable error message "
    "received from 0000:80:1b.4\n",
])
def test_sniff_recognises_each_kernel_log_format(head: str) -> None:
    assert kernel.sniff(head.encode(), "whatever.txt")


def test_sniff_rejects_training_and_nccl_logs() -> None:
    head = "\n".join(NOT_KERNEL * 10).encode()
    assert not kernel.sniff(head, "nodes/gpu-001/dmesg.log")


def test_batch_of_many_lines_is_parsed_quickly() -> None:
    lines = EXAMPLES * 5000  # 105k matched lines: the parse must stay vectorised
    start = time.perf_counter()
    parsed = parse(lines, boot_time=BOOT)
    assert parsed.tables["events"].height == len(lines)
    assert time.perf_counter() - start < 20


# --- dmesg -H / -d spellings, GSP, hung-task traces, NVLink5 Xids ----------------------------------

def test_dmesg_H_delta_lines_take_their_minute_and_the_minute_line_is_no_unparsed_line() -> None:
    lines = ["[Nov24 08:00] usb 1-1: new high-speed USB device number 2 using xhci_hcd",
             "[  +0.000049] NVRM: Xid (PCI:0000:1b:00): 79, pid=1, name=python3, GPU has fallen off the bus.",
             "[Nov25 09:01] NVRM: Xid (PCI:0000:1b:00): 48, pid=1, name=python3, DBE",
             "[ +12.500000] nfs: server nfs01 not responding, still trying"]
    sel = pl.Series(lines).str.contains(kernel.PATTERN)
    assert sel.all()
    parsed = parse(lines, year=2026, tz="Europe/Berlin")
    assert parsed.unparsed == 0
    got = parsed.tables["events"].to_dicts()
    assert [r["ts"] for r in got] == [dt.datetime(2026, 11, 24, 7, 0), dt.datetime(2026, 11, 25, 8, 1),
                                      dt.datetime(2026, 11, 25, 8, 1)]


@pytest.mark.parametrize(("line", "ts"), [
    ("[ 3600.123456 <    0.000049>] NVRM: Xid (PCI:0000:07:00): 48, pid=1, name=x, DBE",
     dt.datetime(2026, 11, 25, 7, 0, 0, 123456)),
    ("[Wed Nov 25 07:00:01 2026 <    0.000031>] NVRM: Xid (PCI:0000:07:00): 48, pid=1, name=x, DBE",
     dt.datetime(2026, 11, 25, 7, 0, 1)),
    ("[<    0.000044>] NVRM: Xid (PCI:0000:07:00): 48, pid=1, name=x, DBE", None),
])
def test_dmesg_d_spellings(line: str, ts: dt.datetime | None) -> None:
    r = one(line, boot_time=BOOT)
    assert (r["xid"], r["ts"]) == (48, ts)


@pytest.mark.parametrize("head", [
    "[Nov24 08:00] Linux version 6.8.0\n[  +0.000000] Command line: ro\n[  +0.004000] x86/fpu: ok\n",
    "[    0.000000 <    0.000000>] Linux version 6.8.0\n[    0.000012 <    0.000012>] Command line: ro\n",
])
def test_sniff_recognises_dmesg_H_and_d(head: str) -> None:
    assert kernel.sniff(head.encode(), "x.txt")


@pytest.mark.parametrize(("line", "kind"), [
    ("NVRM: _kgspLogXid119: ********************************* GSP Timeout **********************************",
     "gsp_timeout"),
    ("NVRM: GPU6 _kgspLogRpcTimeout: ********************************* GSP Timeout *******************", "gsp_timeout"),
    ("NVRM: GPU0 _kgspRpcRecvPoll: GSP RM heartbeat timed out", "gsp_timeout"),
    ("NVRM: GPU3 _kgspIsHeartbeatTimedOut: Heartbeat timed out, currentTimeMs 1 heartbeat 2 diff 6070 timeout 5200",
     "gsp_timeout"),
    ("NVRM: kgspHealthCheck_TU102: ****************************** GSP-CrashCat Report ***************", "gsp_crash"),
    ("NVRM: Rate limiting GSP RPC error prints for GPU at PCI:0000:9b:00 (printing 1 of every 30).  The GPU likely "
     "needs to be reset.", "gsp_rpc_errors"),
    ("NVRM: GPU 0000:0a:00.0: RmInitAdapter failed! (0x24:0x72:1568)", "gpu_init_failed"),
    ("NVRM: nvAssertOkFailedNoLog: Assertion failed: Reset required [NV_ERR_RESET_REQUIRED] (0x00000062) returned "
     "from status @ kernel_channel.c:2874", "gpu_reset_required"),
])
def test_gsp_and_driver_state_lines_are_gpu_hw_other(line: str, kind: str) -> None:
    r = one(line)
    assert (r["kind"], r["failure_mode"]) == (kind, "gpu_hw_other")


def test_gsp_line_keeps_the_gpu_index() -> None:
    assert detail(one("NVRM: GPU3 _kgspRpcRecvPoll: GSP RM heartbeat timed out"))["gpu_index"] == 3


def test_nvlink5_xid_nonfatal_warns_fatal_is_nvlink_error() -> None:
    minor, fatal = rows([
        "NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000001)",
        "NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x025001c6 0x00000000 0x00000000)"])
    assert (minor["xid"], minor["failure_mode"], minor["severity"]) == (145, "nvlink_error", "warning")
    assert (fatal["xid"], fatal["failure_mode"], fatal["severity"]) == (149, "nvlink_error", "error")


HUNG = [
    "[Tue Nov 24 18:00:03 2026] INFO: task python:12345 blocked for more than 120 seconds.",
    "[Tue Nov 24 18:00:03 2026] task:python          state:D stack:    0 pid:12345 ppid:12001  flags:0x00004002",
    "[Tue Nov 24 18:00:03 2026] Call Trace:",
    "[Tue Nov 24 18:00:03 2026]  schedule+0x4e/0xb0",
    "[Tue Nov 24 18:00:03 2026]  nfs_wb_all+0x27/0x110 [nfs]",
    "[Tue Nov 24 18:00:03 2026]  nfs4_file_flush+0x76/0xa0 [nfsv4]",
]


def frame_of(lines: list[str], first: int = 1) -> pl.DataFrame:
    """The lines PATTERN selects, numbered from `first` as in the file."""
    f = pl.DataFrame({"line": pl.Series(range(first, first + len(lines)), dtype=pl.Int64), "text": lines})
    return f.filter(pl.col("text").str.contains(kernel.PATTERN))


def test_hung_task_trace_in_nfs_makes_it_a_filesystem_stall_and_frames_are_no_events() -> None:
    parsed = kernel.parse(frame_of(HUNG), Context(path="x"))
    (r,) = parsed.tables["events"].to_dicts()
    assert (r["kind"], r["failure_mode"], r["severity"]) == ("hung_task", "filesystem_io", "error")
    assert (detail(r)["blocked_in"], detail(r)["frame"]) == ("nfs", "nfs_wb_all")
    assert parsed.unparsed == 0


def test_hung_task_trace_in_lustre_modules_with_addresses() -> None:
    lines = ["[ 3240.690480] INFO: task pt_data_worker:40371 blocked for more than 120 seconds.",
             "[ 3240.711445]  [<ffffffffc1191a80>] ptlrpc_set_wait+0x480/0x790 [ptlrpc]",
             "[ 3240.716731]  [<ffffffffc13e2ce0>] ll_xattr_list+0x240/0x670 [lustre]"]
    (r,) = kernel.parse(frame_of(lines), Context(path="x", boot_time=BOOT)).tables["events"].to_dicts()
    assert (r["failure_mode"], detail(r)["blocked_in"], detail(r)["frame"]) == ("filesystem_io", "lustre",
                                                                               "ptlrpc_set_wait")


def test_each_trace_goes_to_the_report_before_it_and_not_too_far() -> None:
    first = ["[Tue Nov 24 20:00:03 2026] INFO: task jbd2/nvme0n1p2-:812 blocked for more than 122 seconds.",
             "[Tue Nov 24 20:00:03 2026]  jbd2_journal_commit_transaction+0x2b1/0x1a00 [jbd2]"]
    sel = pl.concat([frame_of(first), frame_of(HUNG, first=3)])
    jbd2, nfs = kernel.parse(sel, Context(path="x")).tables["events"].to_dicts()
    assert (jbd2["failure_mode"], nfs["failure_mode"]) == ("unknown", "filesystem_io")
    # an NFS frame far below a report (another dump's trace) is not that report's
    far = pl.concat([frame_of(HUNG[:1]), frame_of(HUNG[4:5], first=2 + kernel.TRACE_LINES)])
    (r,) = kernel.parse(far, Context(path="x")).tables["events"].to_dicts()
    assert r["failure_mode"] == "unknown"


def test_a_hung_task_report_is_held_back_whole_at_a_batch_end() -> None:
    from clusterlab.ingest.parse import BLOCK_LINES, hold_open_block
    noise = [f"[ {i}.000000] NVRM: Xid (PCI:0000:5d:00): 13, pid=1, name=x, Graphics Exception" for i in range(300)]
    batch = frame_of(noise + HUNG[:1] + HUNG[4:])
    head, held = hold_open_block(batch, kernel.BLOCK_START)
    assert held is not None and held.height == 3 and held["text"][0].endswith("blocked for more than 120 seconds.")
    assert head.height + held.height == batch.height and held.height <= BLOCK_LINES


# --- issue 30: shapes of real excerpts ---------------------------------------------------------------

def test_a_follow_on_xid_that_names_its_cause_takes_that_xids_mode() -> None:
    caused, bare = rows(["kernel: NVRM: Xid (PCI:0000:2a:00): 45, pid=901, name=python3, Ch 00000004 caused by "
                         "previous Xid 149",
                         "kernel: NVRM: Xid (PCI:0000:2a:00): 45, pid=901, name=python3, Ch 00000005"])
    assert (caused["failure_mode"], caused["severity"], caused["xid"]) == ("nvlink_error", "warning", 45)
    assert bare["failure_mode"] is None  # the channels of a killed process cleaned up: no fault on its own


def test_a_task_state_line_without_its_header_is_a_hung_task_and_with_it_is_not_counted_twice() -> None:
    alone = ["[  +0.000050] task:python3.11      state:D stack:    0 pid:40112 ppid: 40100 flags:0x00000002",
             "[  +0.000004]  uvm_ioctl+0x13e0/0x16f0 [nvidia_uvm]"]
    (r,) = kernel.parse(frame_of(alone), Context(path="x")).tables["events"].to_dicts()
    assert (r["kind"], r["failure_mode"], detail(r)["pid"]) == ("hung_task", "unknown", 40112)
    both = ["[ 90.1] INFO: task jbd2/sda1-8:161 blocked for more than 120 seconds.",
            "[ 90.2]       Not tainted 5.15.0 #1",
            '[ 90.3] "echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.',
            "[ 90.4] task:jbd2/sda1-8     state:D stack:    0 pid:  161 ppid:     2 flags:0x00004000"]
    (h,) = kernel.parse(frame_of(both), Context(path="x", boot_time=BOOT)).tables["events"].to_dicts()
    assert h["line"] == 1 and h["failure_mode"] == "unknown"


@pytest.mark.parametrize(("line", "kind", "mode"), [
    ("Lustre: 3311:0:(client.c:2141:ptlrpc_expire_one_request()) @@@ Request sent has failed due to network error: "
     "[sent 1794578360/real 1794578370]", "lustre_timeout", "filesystem_io"),
    ("LNet: 3290:0:(o2iblnd_cb.c:3174:kiblnd_check_conns()) Timed out tx for 10.12.40.3@o2ib: 1208 seconds",
     "lnet_timeout", "filesystem_io"),
    ("NVRM: GPU3 kflcnCoreDumpDestructive_IMPL: ICD: csr[100] = 0x0000000200000020", "gsp_core_dump", "gpu_hw_other"),
    ("NVRM: GPU3 RPC history (CPU -> GSP):", "gsp_rpc_history", "gpu_hw_other"),
    ("nvidia 0000:65:00.0: AER: can't recover (no error_detected callback)", "pcie_no_recovery", "pcie_error"),
    ("oom_reaper: reaped process 935 (python), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB", "oom_reaped",
     "host_oom"),
    ("NVRM: nvAssertOkFailedNoLog: Assertion failed: GPU lost from the bus [NV_ERR_GPU_IS_LOST] (0x0000000F) "
     "returned from pRmApi->Control @ kernel_channel.c:3576", "gpu_lost", "gpu_fell_off_bus"),
])
def test_real_excerpt_lines_of_issue_30(line: str, kind: str, mode: str) -> None:
    r = one(f"[ 12.5] {line}", boot_time=BOOT)
    assert (r["kind"], r["failure_mode"]) == (kind, mode)


def test_corrected_aer_errors_are_a_pcie_error_warning_and_an_error_when_one_device_floods_them() -> None:
    aer = "pcieport 0000:00:01.1: AER: Correctable error message received from 0000:00:01.1"
    lone = one(f"[ 1.0] {aer}", boot_time=BOOT)
    assert (lone["failure_mode"], lone["severity"]) == ("pcie_error", "warning")
    flood = rows([f"[ {i}.0] {aer}" for i in range(1, 1 + _aer_flood.AER_FLOOD)], boot_time=BOOT)
    assert {r["failure_mode"] for r in flood} == {"pcie_error"} and {r["severity"] for r in flood} == {"error"}


def test_corrected_aer_reports_hours_apart_are_a_healthy_links_noise_not_a_flood() -> None:
    """A NIC reporting one corrected error every few hours for days (header and bus-error line each time) is no
    flood, however many the file holds; a burst of them within minutes is, from its first report on."""
    def report(t: float, dev: str = "0000:bc:00.0") -> list[str]:
        return [f"[ {t:.1f}] pcieport 0000:bb:01.0: AER: Corrected error received: {dev}",
                f"[ {t:.1f}] mlx5_core {dev}: AER: PCIe Bus Error: severity=Corrected, type=Data Link Layer, "
                "(Transmitter ID)"]
    sparse = rows([ln for h in range(12) for ln in report(100.0 + h * 3 * 3600)], boot_time=BOOT)
    assert {r["failure_mode"] for r in sparse} == {"pcie_error"} and {r["severity"] for r in sparse} == {"warning"}
    burst = rows([ln for i in range(_aer_flood.AER_FLOOD) for ln in report(5000.0 + 40 * i)], boot_time=BOOT)
    assert {r["severity"] for r in burst} == {"error"}


def test_talosctl_dmesg_and_grep_prefixed_syslog_give_time_and_host() -> None:
    talos, grep = rows([
        "10.40.2.17: kern: warning: [2026-05-02T03:11:48.449771205Z]: NVRM: Xid (PCI:0000:b7:00): 62, 00002740",
        "messages:Aug 21 03:44:19 ip-10-0-91-12 kernel: INFO: task solver:55120 blocked for more than 120 seconds."])
    assert (talos["ts"], talos["host"]) == (dt.datetime(2026, 5, 2, 3, 11, 48, 449771), "10.40.2.17")
    assert (grep["ts"], grep["host"], grep["failure_mode"]) == (dt.datetime(2026, 8, 21, 3, 44, 19), "ip-10-0-91-12",
                                                                "unknown")
    assert kernel.sniff(b"10.4.2.7: kern:    info: [2026-05-02T03:11:48.4Z]: eth0: link up\n" * 3, "dmesg.txt")

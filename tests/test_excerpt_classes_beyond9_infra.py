"""The classes of defect the ninth round of real excerpts showed in the kernel and NCCL areas
(tests/real_excerpts/{kernel,nccl}_beyond9.toml), each stated on shapes of its own: the kernel's transmit watchdog
finding a NIC queue stuck (`NETDEV WATCHDOG: ... transmit queue N timed out`, any driver, any kernel's wording) is a
network fault; systemd-oomd, the userspace OOM killer, killing a cgroup is the node running out of memory although no
kernel line says so; an InfiniBand PortInfo dump (`ibportstate`, `smpquery portinfo`: the fabric's view of any port)
is read as ibstat's port states are, a port down or polling being a network fault and an active or disabled one
none."""

from __future__ import annotations

from pathlib import Path

import pytest
from excerpt_events import events as _events
from excerpt_events import modes as _modes


@pytest.mark.parametrize("text", [
    # before 6.x: dev_watchdog's WARNING banner, then 'NETDEV WATCHDOG: <ifc> (<driver>): transmit queue N timed out'
    "[ 3311.402817] ------------[ cut here ]------------\n"
    "[ 3311.402820] WARNING: CPU: 22 PID: 0 at net/sched/sch_generic.c:477 dev_watchdog+0x21d/0x230\n"
    "[ 3311.402822] NETDEV WATCHDOG: enp65s0f0 (ice): transmit queue 5 timed out\n",
    # 6.x: the driver's device and interface first, the CPU and the time the queue stood still after
    "Apr  9 21:04:55 cn-31 kernel: bnxt_en 0000:41:00.0 eno1np0: NETDEV WATCHDOG: CPU: 3: transmit queue 2 timed out "
    "5120 ms\nApr  9 21:04:55 cn-31 kernel: bnxt_en 0000:41:00.0 eno1np0: TX timeout detected, starting reset task!\n",
])
def test_a_nic_transmit_queue_the_watchdog_finds_stuck_is_a_network_fault(tmp_path: Path, text: str) -> None:
    assert _modes(tmp_path, text, "kern.log") == {"network"}


def test_netdev_state_changes_are_no_fault(tmp_path: Path) -> None:
    text = ("[   21.330114] IPv6: ADDRCONF(NETDEV_CHANGE): ib0: link becomes ready\n"
            "[   21.402771] bnxt_en 0000:41:00.0 eno1np0: NIC Link is Up, 25000 Mbps full duplex, Flow control: none\n"
            "[   21.402775] IPv6: ADDRCONF(NETDEV_UP): eno1np0: link is not ready\n")
    assert _modes(tmp_path, text, "kern.log") == set()


@pytest.mark.parametrize("text", [
    # the swap-based kill, in 'journalctl -o short-iso'
    "2025-08-14T02:11:40+0000 wk-12 systemd-oomd[933]: Killed /user.slice/user-4120.slice/user@4120.service/app.slice/"
    "run-p2210-i2211.scope due to memory used (502.9G) / total (503.6G) and swap used (7.6G) / total (8.0G) being more "
    "than 90.00%\n",
    # only systemd's count of what the kill took, the daemon's own line not kept
    "Aug 14 02:11:40 wk-12 systemd[1]: run-p2210-i2211.scope: systemd-oomd killed 12 process(es) in this unit.\n"
    "Aug 14 02:11:40 wk-12 systemd[1]: run-p2210-i2211.scope: Failed with result 'oom-kill'.\n",
])
def test_systemd_oomd_killing_a_cgroup_is_host_oom(tmp_path: Path, text: str) -> None:
    assert "host_oom" in _modes(tmp_path, text, "journal.log")


def test_systemd_oomd_chatter_without_a_kill_is_no_fault(tmp_path: Path) -> None:
    text = ("Aug 14 00:00:02 wk-12 systemd[1]: Started Userspace Out-Of-Memory (OOM) Killer.\n"
            "Aug 14 00:00:02 wk-12 systemd-oomd[933]: Swap is currently not detected; memory pressure usage will be "
            "degraded\n"
            "Aug 14 00:00:03 wk-12 kernel: [   12.004417] mlx5_core 0000:c4:00.0: firmware version: 22.36.1010\n")
    assert _modes(tmp_path, text, "journal.log") == set()


@pytest.mark.parametrize("text", [
    # smpquery over a directed route, the port retraining
    "# Port info: DR path slid 65535; dlid 65535; 0,1,12 port 7\n"
    "LinkState:.......................Down\nPhysLinkState:...................LinkErrorRecovery\n"
    "LinkWidthActive:.................4X\n",
    # ibportstate behind pdsh's node prefix, one port polling among active ones
    "mgmt2: PortInfo:\nmgmt2: # Port info: Lid 77 port 3\nmgmt2: LinkState:.......................Active\n"
    "mgmt2: PhysLinkState:...................LinkUp\nmgmt2: PortInfo:\nmgmt2: # Port info: Lid 77 port 4\n"
    "mgmt2: LinkState:.......................Down\nmgmt2: PhysLinkState:...................Polling\n",
])
def test_a_portinfo_dump_of_a_port_down_is_a_network_fault(tmp_path: Path, text: str) -> None:
    assert _modes(tmp_path, text, "portinfo.txt") == {"network"}


def test_portinfo_of_active_and_disabled_ports_is_no_fault(tmp_path: Path) -> None:
    text = ("# Port info: Lid 77 port 1\nLinkState:.......................Active\n"
            "PhysLinkState:...................LinkUp\n# MLNX ext Port info: Lid 77 port 1\n"
            "StateChangeEnable:...............0x00\n# Port info: Lid 77 port 2\n"
            "LinkState:.......................Down\nPhysLinkState:...................Disabled\n")
    assert [k for k, _ in _events(tmp_path, text, "portinfo.txt")] == ["ib_port_state", "ib_port_disabled"]
    assert _modes(tmp_path, text, "portinfo.txt") == set()

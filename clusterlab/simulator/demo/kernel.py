"""The nodes' kernel logs, each in the format its collection tool printed.

dmesg raw (with boot_time beside it), dmesg -T in local time, dmesg --time-format iso, journalctl -k
-o short-iso, and a classic syslog kern.log.
"""

from __future__ import annotations

import datetime as dt

from clusterlab.simulator.demo.files import Files
from clusterlab.simulator.demo.procs import procs_for
from clusterlab.simulator.demo.story import (
    A1_START,
    AER_HOST,
    EET,
    H100_BUS,
    IB_HCA,
    IB_HOST,
    IB_PCI,
    LUSTRE_HOST,
    M1_START,
    NFS_HOST,
    XID13_AT,
    XID13_HOST,
    XID_BUS,
    XID_HOST,
    XID_LOCAL_RANK,
    Story,
    rng,
)
from clusterlab.simulator.stamps import (
    UTC,
    after,
    dmesg_ctime,
    dmesg_iso,
    dmesg_raw,
    journal_iso,
    syslog_ts,
)

EAST003_BOOT = dt.datetime(2026, 11, 19, 14, 22, 7, tzinfo=UTC)


def write_nodes(files: Files, story: Story) -> None:
    """Each node's kernel log: the incidents' root causes, the decoys and everyday chatter."""
    r = rng("nodes")
    # east-003: raw dmesg (seconds since boot) and the boot time beside it
    x = story.t["xid"]
    dead = procs_for(story.llama[0], rng("llama-log:1"), H100_BUS)[0][2 * 8 + XID_LOCAL_RANK]
    boot = EAST003_BOOT
    lines = [(after(boot, 0.0), "Linux version 6.8.0-48-generic (buildd@lcy02-amd64-040) (x86_64-linux-gnu-gcc-13 "
                                "(Ubuntu 13.2.0-23ubuntu4) 13.2.0, GNU ld (GNU Binutils for Ubuntu) 2.42) #48-Ubuntu "
                                "SMP PREEMPT_DYNAMIC Fri Sep 27 14:04:52 UTC 2024 (Ubuntu 6.8.0-48.48-generic 6.8.12)"),
             (after(boot, 0.0), "Command line: BOOT_IMAGE=/vmlinuz-6.8.0-48-generic root=UUID=3b1f0a52-8d0e-4a53 ro "
                                "iommu=pt pci=realloc=off"),
             (after(boot, 18.41), "nvidia: loading out-of-tree module taints kernel."),
             (after(boot, 19.02), "nvidia-nvlink: Nvlink Core is being initialized, major device number 508"),
             (after(boot, 19.88), "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  550.127.05  Release Build  "
                                  "(dvs-builder@U16-I3-B03-4-3)  Tue Oct  8 03:22:07 UTC 2024"),
             (after(boot, 25.7), "mlx5_core 0000:18:00.0 mlx5_0: Port: 1 Link ACTIVE"),
             (after(A1_START, -3600 * 5 - 61.2), "perf: interrupt took too long (2503 > 2500), lowering "
                                                 "kernel.perf_event_max_sample_rate to 79750"),
             (x, f"NVRM: Xid (PCI:0000:{XID_BUS}:00): 79, pid={dead.pid}, name=python, GPU has fallen off the bus."),
             (after(x, 0.0004), f"NVRM: GPU 0000:{XID_BUS}:00.0: GPU has fallen off the bus."),
             (after(x, 0.0006), "NVRM: GPU Board Serial Number: 1654123018337"),
             (after(x, 0.0213), "NVRM: A GPU crash dump has been created. If possible, please run\n"
                                "NVRM: nvidia-bug-report.sh as root to collect this data before\n"
                                "NVRM: the NVIDIA kernel module is unloaded.")]
    for k in (1, 2, 3, 4):  # the hung-task detector, every 2 minutes while the process is stuck
        h = after(x, 122.9 * k + 0.4)
        lines.append((h, f"INFO: task python:{dead.pid} blocked for more than {122 * k} seconds.\n"
                         "      Tainted: P           OE      6.8.0-48-generic #48-Ubuntu\n"
                         '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.'))
    lines = [(after(t, r.uniform(0, 0.0009)) if 0 < (t - boot).total_seconds() < 100 else t, text) for t, text in lines]
    files.text(f"nodes/{XID_HOST}/dmesg", [
        "\n".join(dmesg_raw(t, boot) + " " + ln for ln in text.split("\n"))
        for t, text in sorted(lines, key=lambda x: x[0])])
    files.text(f"nodes/{XID_HOST}/boot_time", boot.strftime("%Y-%m-%dT%H:%M:%SZ"))

    # east-002: journalctl -k -o short-iso; the mlx5_2 port flaps
    ld = story.t["link_down"]
    kern = [(after(A1_START, -7200.0), "audit: type=1400 audit(1795485601.112:201): apparmor=\"STATUS\" "
                                       "operation=\"profile_replace\" profile=\"unconfined\" name=\"nvidia_modprobe\""),
            (after(A1_START, -7100.4), "IPv6: ADDRCONF(NETDEV_CHANGE): ib0: link becomes ready"),
            (after(A1_START, 3602.9), "perf: interrupt took too long (2511 > 2500), lowering "
                                      "kernel.perf_event_max_sample_rate to 79500"),
            (ld, f"mlx5_core {IB_PCI} {IB_HCA}: Port: 1 Link DOWN"),
            (after(ld, 44.8), f"mlx5_core {IB_PCI} {IB_HCA}: Port: 1 Link INIT"),
            (after(ld, 49.3), f"mlx5_core {IB_PCI} {IB_HCA}: Port: 1 Link ACTIVE"),
            (after(ld, 191.6), f"mlx5_core {IB_PCI} {IB_HCA}: Port: 1 Link DOWN"),
            (after(ld, 240.1), f"mlx5_core {IB_PCI} {IB_HCA}: Port: 1 Link INIT"),
            (after(ld, 244.7), f"mlx5_core {IB_PCI} {IB_HCA}: Port: 1 Link ACTIVE")]
    files.text(f"nodes/{IB_HOST}/kern.log", [f"{journal_iso(t)} {IB_HOST} kernel: {m}" for t, m in sorted(kern)])

    # east-004: dmesg --time-format iso; an OST stops answering during attempt 3's save
    lost, back = story.t["lustre_lost"], story.t["lustre_back"]
    osc, nid = "lustre-OST0007-osc-ffff8f3b41e3d000", "10.20.1.17@o2ib"
    sent = int(after(lost, -41).timestamp())
    lus = [(after(A1_START, -1200), "Lustre: Mounted lustre-client"),
           (lost, f"Lustre: 4187:0:(client.c:2338:ptlrpc_expire_one_request()) @@@ Request sent has timed out for "
                  f"slow reply: [sent {sent}/real {sent}]  req@000000009c1d2f3a x1815226532481234/t0(0) "
                  f"o4->{osc}@{nid}:6/4 lens 488/448 e 0 to 1 dl {sent + 41} ref 2 fl Rpc:XQr/0/ffffffff rc 0/-1 "
                  "job:'python.1001'"),
           (after(lost, 0.00005), f"Lustre: {osc}: Connection to lustre-OST0007 (at {nid}) was lost; in progress "
                                  "operations using this service will wait for recovery to complete"),
           (after(lost, 25.3), f"LustreError: 11-0: {osc}: operation ost_connect to node {nid} failed: rc = -16"),
           (after(lost, 75.9), f"LustreError: 11-0: {osc}: operation ost_connect to node {nid} failed: rc = -16"),
           (after(lost, 126.4), f"LustreError: 4190:0:(import.c:383:ptlrpc_invalidate_import()) {osc}: timeout "
                                "waiting for callback (1 != 0)"),
           (back, f"Lustre: {osc}: Connection restored to {nid} (at {nid})")]
    files.text(f"nodes/{LUSTRE_HOST}/dmesg", [f"{dmesg_iso(t)} {m}" for t, m in sorted(lus)])

    # bor-002: dmesg -T, printed in the node's local time (Europe/Helsinki)
    nl, nb = story.t["nfs_lost"], story.t["nfs_back"]
    nfs = [(after(M1_START, -3 * 86400), "NFS: Registering the id_resolver key type"),
           (after(M1_START, -3 * 86400 + 0.1), "Key type id_resolver registered"),
           (nl, "nfs: server nfs-bor not responding, still trying"),
           (after(nl, 0.0021), "nfs: server nfs-bor not responding, still trying"),
           (after(nl, 180.6), f"INFO: task python3:{61000 + r.randint(0, 900)} blocked for more than 120 seconds."),
           (nb, "nfs: server nfs-bor OK"),
           (after(nb, 0.0007), "nfs: server nfs-bor OK")]
    files.text(f"nodes/{NFS_HOST}/dmesg", [f"{dmesg_ctime(t.astimezone(EET))} {m}" for t, m in sorted(nfs)])

    # bor-004: another user's kernel hits Xid 13; no run of ours is on that node
    xt = XID13_AT
    x13 = [(after(xt, -86400), "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  550.127.05  Release Build"),
           (xt, "NVRM: Xid (PCI:0000:4c:00): 13, pid=88412, name=python3, Graphics SM Warp Exception on (GPC 1, TPC 0, "
                "SM 0): Out Of Range Address"),
           (after(xt, 0.00002), "NVRM: Xid (PCI:0000:4c:00): 13, pid=88412, name=python3, Graphics Exception: ESR "
                                "0x50e730=0x102000e 0x50e734=0x24 0x50e728=0xf81eb60 0x50e72c=0x1174")]
    files.text(f"nodes/{XID13_HOST}/dmesg", [f"{dmesg_ctime(t.astimezone(EET))} {m}" for t, m in sorted(x13)])

    # bor-001: journalctl -k -o short-iso with the local offset; one corrected (harmless) PCIe error
    m2 = story.mm[1]
    at = after(m2.steps[len(m2.steps) // 2].end, 0.7).astimezone(EET)
    aer = [(after(at, -5000), "EDAC MC0: Giving out device to module i10nm_edac controller Intel_10nm Socket#0 IMC#0"),
           (at, "pcieport 0000:80:01.1: AER: Corrected error message received from 0000:83:00.0"),
           (at, "nvidia 0000:83:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)"),
           (at, "nvidia 0000:83:00.0:   device [10de:2335] error status/mask=00000001/0000e000"),
           (at, "nvidia 0000:83:00.0:    [ 0] RxErr                  (First)")]
    files.text(f"nodes/{AER_HOST}/kern.log", [f"{journal_iso(t)} {AER_HOST} kernel: {m}" for t, m in aer])

    # west-01: classic syslog kern.log, nothing to do with any run
    w = dt.datetime(2026, 11, 24, 8, 0, 1, tzinfo=UTC)
    boring = ["[UFW BLOCK] IN=eno1 OUT= MAC=3c:ec:ef:12:34:56:00:1c:73:aa:bb:cc:08:00 SRC=10.11.0.250 DST=10.11.0.1 "
              "LEN=60 TOS=0x00 PREC=0x00 TTL=64 ID=41233 DF PROTO=TCP SPT=51544 DPT=9100 WINDOW=64240 RES=0x00 "
              "SYN URGP=0",
              "EXT4-fs (nvme0n1p2): re-mounted. Opts: errors=remount-ro",
              "perf: interrupt took too long (3141 > 3126), lowering kernel.perf_event_max_sample_rate to 63500",
              "audit: type=1400 audit(1795507201.553:312): apparmor=\"DENIED\" operation=\"open\" "
              "profile=\"snap.lxd.daemon\" name=\"/proc/1/environ\" pid=2212 comm=\"snap-confine\" "
              "requested_mask=\"r\"",
              "IPv4: martian source 10.11.0.255 from 10.11.0.77, on dev eno1",
              "IPv6: ADDRCONF(NETDEV_CHANGE): ib0: link becomes ready"]
    up = 3412876.12
    west = []
    for i in range(24):
        t = after(w, i * 3517 + r.uniform(0, 900))
        west.append(f"{syslog_ts(t)} west-01 kernel: [{up + (t - w).total_seconds():.6f}] {boring[i % len(boring)]}")
    files.text("nodes/west-01/kern.log", west)

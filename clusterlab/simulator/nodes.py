"""Per-node kernel logs, each cluster in the spelling its collection tool prints, with decoys.

A node's log holds its boot lines, routine chatter, the root causes of the failures it had
(`failures.Evidence.kernel`), the filesystem client's complaints during stalled saves, and
harmless noise: an Xid 13 in another user's job on a spare node, a corrected PCIe error.
"""

from __future__ import annotations

import datetime as dt
import random

from clusterlab.simulator.fleet import Cluster, Config
from clusterlab.simulator.sink import Sink
from clusterlab.simulator.stamps import UTC, dmesg_ctime, dmesg_iso, dmesg_raw, from_ms
from clusterlab.simulator.timeline import Run

STYLES = ("raw", "iso", "journal", "ctime")  # dmesg; dmesg --time-format iso; journalctl -k; dmesg -T
CHATTER = (
    "perf: interrupt took too long (2503 > 2500), lowering kernel.perf_event_max_sample_rate to 79750",
    "IPv6: ADDRCONF(NETDEV_CHANGE): ib0: link becomes ready",
    'audit: type=1400 audit(1780000000.112:201): apparmor="STATUS" operation="profile_replace" '
    'profile="unconfined" name="nvidia_modprobe"',
    "EXT4-fs (nvme0n1p2): re-mounted. Opts: errors=remount-ro",
    "[UFW BLOCK] IN=eno1 OUT= MAC=3c:ec:ef:12:34:56:00:1c:73:aa:bb:cc:08:00 SRC=10.99.0.250 DST=10.99.0.1 LEN=60 "
    "TOS=0x00 PREC=0x00 TTL=64 ID=41233 DF PROTO=TCP SPT=51544 DPT=9100 WINDOW=64240 RES=0x00 SYN URGP=0",
)
OSC = "lustre-OST0007-osc-ffff8f3b41e3d000"
NID = "10.40.1.17@o2ib"


def style(cluster: Cluster) -> str:
    """How this cluster's kernel logs were collected."""
    return STYLES[cluster.index % len(STYLES)]


def stall_lines(run: Run) -> dict[str, list[tuple[int, str]]]:
    """The filesystem client's lines on the host that reported each completed stalled save."""
    out: dict[str, list[tuple[int, str]]] = {}
    for att in run.attempts:
        for sv in att.saves:
            if not (sv.stall_host and sv.complete):
                continue
            lost, back = sv.start_ms + 6300, sv.end_ms - 4100
            sent = lost // 1000 - 41
            out.setdefault(sv.stall_host, []).extend([
                (lost, f"Lustre: 4187:0:(client.c:2338:ptlrpc_expire_one_request()) @@@ Request sent has timed out "
                       f"for slow reply: [sent {sent}/real {sent}]  req@000000009c1d2f3a x1815226532481234/t0(0) "
                       f"o4->{OSC}@{NID}:6/4 lens 488/448 e 0 to 1 dl {sent + 41} ref 2 fl Rpc:XQr/0/ffffffff "
                       "rc 0/-1 job:'python.1001'"),
                (lost, f"Lustre: {OSC}: Connection to lustre-OST0007 (at {NID}) was lost; in progress operations "
                       "using this service will wait for recovery to complete"),
                (lost + 25_300, f"LustreError: 11-0: {OSC}: operation ost_connect to node {NID} failed: rc = -16"),
                (back, f"Lustre: {OSC}: Connection restored to {NID} (at {NID})")])
    return out


def decoys(cfg: Config, cluster: Cluster, run: Run, r: random.Random) -> tuple[dict[str, list], list[dict]]:
    """Harmless kernel lines and what truth.json says about them."""
    lo, hi = cfg.window_ms
    lines: dict[str, list[tuple[int, str]]] = {}
    benign = []
    spare = cluster.hosts[-1]
    busy = [(a.start_ms, a.end_ms) for a in run.attempts if spare in a.hosts]
    for t in range(lo + 3_600_000, hi, 3_600_000):
        if len(cluster.hosts) > 1 and not any(s - 600_000 <= t <= e + 600_000 for s, e in busy):
            lines[spare] = [(t, "NVRM: Xid (PCI:0000:3a:00): 13, pid=88412, name=python3, Graphics SM Warp Exception "
                                "on (GPC 1, TPC 0, SM 0): Out Of Range Address"),
                            (t, "NVRM: Xid (PCI:0000:3a:00): 13, pid=88412, name=python3, Graphics Exception: ESR "
                                "0x50e730=0x102000e 0x50e734=0x24 0x50e728=0xf81eb60 0x50e72c=0x1174")]
            benign.append({"host": spare, "ts": t, "what": "Xid 13 in another user's job; no run of ours on the node"})
            break
    if not run.attempts:
        return lines, benign
    host = run.attempts[-1].hosts[0]
    at = (run.attempts[-1].start_ms + run.attempts[-1].end_ms) // 2
    lines.setdefault(host, []).extend([
        (at, "pcieport 0000:80:01.1: AER: Corrected error message received from 0000:83:00.0"),
        (at, "nvidia 0000:83:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)"),
        (at, "nvidia 0000:83:00.0:   device [10de:2330] error status/mask=00000001/0000e000")])
    benign.append({"host": host, "ts": at, "what": "corrected PCIe AER (RxErr); harmless"})
    return lines, benign


def _render(fmt: str, host: str, boot: dt.datetime, t: dt.datetime, msg: str) -> str:
    """One kernel message (possibly several lines), each line with the style's time prefix."""
    if fmt == "raw":
        pre = dmesg_raw(t, boot)
    elif fmt == "iso":
        pre = dmesg_iso(t)
    elif fmt == "journal":
        pre = f"{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond:06d}+0000 {host} kernel:"
    else:
        pre = dmesg_ctime(t)
    return "\n".join(f"{pre} {ln}" for ln in msg.split("\n"))


def write(sink: Sink, cfg: Config, cluster: Cluster, events: dict[str, list[tuple[int, str]]], r: random.Random,
          skew_ms: dict[str, int] | None = None, missing: set[str] | frozenset[str] = frozenset()) -> None:
    """One kernel log per node of the cluster (none for `missing`), each on its host's (skewed) clock."""
    lo, hi = cfg.window_ms
    fmt = style(cluster)
    skew_ms = skew_ms or {}
    for host in cluster.hosts:
        boot = from_ms(lo - r.randint(2, 20) * 86_400_000 - r.randint(0, 86_399) * 1000)
        items = [(boot.timestamp() * 1000 + 0.0, "Linux version 6.8.0-48-generic (buildd@lcy02-amd64-040) "
                                                 "#48-Ubuntu SMP PREEMPT_DYNAMIC Fri Sep 27 14:04:52 UTC 2024"),
                 (boot.timestamp() * 1000 + 19_880, "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  "
                                                    "550.127.05  Release Build"),
                 (boot.timestamp() * 1000 + 25_700, "mlx5_core 0000:0c:00.0 mlx5_0: Port: 1 Link ACTIVE")]
        t = lo + r.randint(0, 3_600_000)
        while t < hi:
            items.append((t, CHATTER[r.randrange(len(CHATTER))]))
            t += r.randint(5_400_000, 10_800_000)
        items += events.get(host, [])
        if host in missing:
            continue
        off = skew_ms.get(host, 0)
        if off:  # the node's clock is off: every stamp it prints, and the boot time it reports
            boot = from_ms(int(boot.timestamp() * 1000) + off)
            items = [(ms + off, msg) for ms, msg in items]
        lines = [_render(fmt, host, boot, from_ms(int(ms)), msg) for ms, msg in sorted(items, key=lambda x: x[0])]
        name = "kern.log" if fmt == "journal" else "dmesg"
        sink.text(f"nodes/{host}/{name}", "\n".join(lines) + "\n")
        if fmt == "raw":
            sink.text(f"nodes/{host}/boot_time", boot.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") + "\n")

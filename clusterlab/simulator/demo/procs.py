"""The demo's training processes and the NCCL / c10d blocks they print, from the simulator's textlog."""

from __future__ import annotations

import datetime as dt
import random

from clusterlab.simulator import textlog
from clusterlab.simulator.demo.story import NCCL_VERSION, SEED, Attempt, node_ip
from clusterlab.simulator.stamps import UTC
from clusterlab.simulator.textlog import Log, Proc


def procs_for(att: Attempt, r: random.Random, buses: tuple[str, ...]) -> tuple[list[Proc], dict[str, int]]:
    """Every training process of an attempt (8 a node) and each node's torchrun agent pid."""
    procs, agents = [], {}
    for n, host in enumerate(att.hosts):
        agent = r.randint(30000, 90000)
        agents[host] = agent
        for local in range(8):
            pid = agent + 57 + local
            procs.append(Proc(n * 8 + local, host, local, pid, pid + 623 + 9 * local, pid + 651 + 9 * local,
                              buses[local]))
    return procs, agents


def nccl_init(log: Log, procs: list[Proc], t0: dt.datetime, r: random.Random, *, nch: int = 16,
              group: list[int] | None = None) -> None:
    """The shared NCCL init block, with this bundle's addresses and NCCL version."""
    textlog.nccl_init(log, procs, t0, r, ip_of=node_ip, version=NCCL_VERSION, nch=nch, group=group)


def pg_abort(log: Log, t: dt.datetime, rank: int, pg: str, pg_rank: int, seq: int, reason: str, *,
             timeout: bool, tz: dt.tzinfo = UTC) -> None:
    """The shared watchdog abort block, its C++ frames seeded from this bundle's seed."""
    textlog.pg_abort(log, t, rank, pg, pg_rank, seq, reason, timeout=timeout, seed=SEED, tz=tz)

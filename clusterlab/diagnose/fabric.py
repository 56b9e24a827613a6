"""Whose link failed: one host's, or the fabric's, from the pairs the NCCL completion errors name.

A completion error names two hosts: the one that printed it and the peer it names. One host's failing HCA or cable
is at one end of every such pair (its own errors name its peers, its peers' errors name it). A switch that flaps
under several hosts gives errors between pairs that share no host: blaming the peer named most there picks one of
them by chance (a tie broken by name), while none of them is at fault; the fabric is (`DESIGN.md`: a shared service
reported by many hosts is blamed as that service).
"""

from __future__ import annotations

import polars as pl

from clusterlab.diagnose import incidents

FABRIC = "fabric"
# Pairs spread over at least this many reporting hosts, with no host at one end of all of them: the fabric
MIN_REPORTERS = 3


def endpoints(faults: pl.DataFrame, peer_tiers: tuple[int, ...] = incidents.PEER_TIERS) -> dict[tuple, str]:
    """Per (run, attempt): the one host at an end of every completion-error pair, or FABRIC where the pairs come
    from MIN_REPORTERS hosts or more and no host is in all of them; attempts with too few pairs to tell are left
    out (the peer named most decides there, as before)."""
    need = {"run", "attempt", "tier", "host", "peer_host"}
    if not faults.height or not need <= set(faults.columns):
        return {}
    pairs = (faults.filter(pl.col("tier").is_in(list(peer_tiers)), pl.col("host").is_not_null(),
                           pl.col("peer_host").is_not_null(),
                           pl.col("host") != pl.col("peer_host"))
             .select("run", "attempt", "host", "peer_host").unique())
    if not pairs.height:
        return {}
    out: dict[tuple, str] = {}
    for (run, attempt), g in pairs.group_by(["run", "attempt"]):  # NOTE: a few rows per attempt
        n = g.height
        ends = pl.concat([g.select(h="host"), g.select(h="peer_host")]).group_by("h").len()
        common = ends.filter(pl.col("len") == n)["h"].sort().to_list()
        reporters = g["host"].n_unique()
        if len(common) == 1 and n >= 2:
            out[(run, attempt)] = common[0]
        elif not common and reporters >= MIN_REPORTERS:
            out[(run, attempt)] = FABRIC
    return out


def penalty(tier: int | None, host: str | None) -> float:
    """How much less sure a verdict is: the fabric told from the error pairs alone (no switch or link line says it),
    a cause that carries no time at all (bounded by its attempt's span only)."""
    return (0.2 if host == FABRIC else 0.0) + (0.3 if tier == incidents.UNDATED_TIER else 0.0)

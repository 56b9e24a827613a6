"""Reading `inventory.toml` (the fleet) and `run.toml` (facts about a training run) into the store."""

from __future__ import annotations

import datetime as dt
import tomllib
from pathlib import Path

import duckdb

from clusterlab import hostlist
from clusterlab.reader import InputError

_RUN_KEYS = {
    "cluster": str, "gpus": int, "tokens_per_step": int, "flops_per_token": float, "params": int,
    "layers": int, "hidden": int, "seq_len": int, "checkpoint_dir": str, "launcher": str,
    "launch_command": str,
}


def _load(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise InputError(str(path), f"not valid TOML: {e}") from None
    except OSError as e:
        raise InputError(str(path), f"cannot read: {e.strerror}") from None


def _delivered(table: object, hosts: set[str]) -> dict[str, dt.date]:
    """`delivered = { "east-[013-016]" = 2026-11-25 }`: host -> the date the provider handed it over.

    Nodes not named were there from the contract's start; a node handed over after it is late.
    """
    if not isinstance(table, dict):
        raise ValueError("delivered must be a table of hostlist = date")
    out: dict[str, dt.date] = {}
    for expr, when in table.items():
        if isinstance(when, dt.datetime):
            when = when.date()
        if not isinstance(when, dt.date):
            raise ValueError(f"delivered {expr!r} must be a date (2026-11-25), got {when!r}")
        named = hostlist.expand(expr)
        if stray := sorted(set(named) - hosts):
            raise ValueError(f"delivered names hosts outside the cluster's nodes: {', '.join(stray[:5])}")
        out.update(dict.fromkeys(named, when))
    return out


def load_inventory(con: duckdb.DuckDBPyConnection, path: Path) -> dict[str, int]:
    """Upsert providers, clusters and nodes from an inventory file; returns counts."""
    doc = _load(path)
    providers = doc.get("providers", {})
    clusters = doc.get("clusters", {})
    node_rows: list[tuple[str, str, dt.date | None]] = []
    for name, c in clusters.items():
        if not isinstance(c, dict) or "provider" not in c:
            raise InputError(str(path), f"cluster {name!r} needs a provider")
        try:
            hosts = hostlist.expand(str(c.get("nodes", "")))
            delivered = _delivered(c.get("delivered", {}), set(hosts))
        except ValueError as e:
            raise InputError(str(path), f"cluster {name!r}: {e}") from None
        node_rows += [(h, name, delivered.get(h)) for h in hosts]
    con.execute("BEGIN")
    try:
        for name, p in providers.items():
            con.execute(
                "INSERT OR REPLACE INTO providers VALUES (?, ?, ?)",
                [name, p.get("usd_per_gpu_hour"), p.get("notes") or p.get("support")],
            )
        for name, c in clusters.items():
            start = c.get("contract_start")
            if isinstance(start, dt.datetime):
                start = start.date()
            con.execute(
                "INSERT OR REPLACE INTO clusters VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [name, c["provider"], c.get("gpu"), c.get("gpus_per_node"), c.get("interconnect"),
                 c.get("contracted_nodes"), start, c.get("timezone", "UTC"), c.get("nodes")],
            )
        if node_rows:
            con.executemany("INSERT OR REPLACE INTO nodes (host, cluster, delivered) VALUES (?, ?, ?)", node_rows)
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
    return {"providers": len(providers), "clusters": len(clusters), "nodes": len(node_rows)}


def load_run(con: duckdb.DuckDBPyConnection, path: Path, run: str) -> None:
    """Upsert one run's facts from its run.toml."""
    doc = _load(path)
    vals = {}
    for key, typ in _RUN_KEYS.items():
        if key in doc:
            try:
                vals[key] = typ(doc[key])
            except (TypeError, ValueError):
                raise InputError(str(path), f"{key} must be {typ.__name__}, got {doc[key]!r}") from None
    text = path.read_text(encoding="utf-8")
    cols = ["run", *_RUN_KEYS, "run_toml"]
    con.execute(
        f"INSERT OR REPLACE INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
        [run, *(vals.get(k) for k in _RUN_KEYS), text],
    )

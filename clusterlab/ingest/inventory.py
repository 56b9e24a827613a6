"""Reading `inventory.toml` (the fleet) and `run.toml` (facts about a training run) into the store."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl

from clusterlab import store
from clusterlab.ingest import metadata


def load_inventory(con: duckdb.DuckDBPyConnection, path: Path, notes: list[str] | None = None) -> dict[str, int]:
    """Upsert providers, clusters and nodes from an inventory file; returns counts.

    Every key is checked first (`metadata.read_inventory`): a bad value is an InputError and nothing is stored; an
    unknown key is ignored, with a line in `notes`.
    """
    inv = metadata.read_inventory(path)
    if notes is not None:
        notes.extend(inv.ignored)
    node_rows = [(h, c.name, c.delivered.get(h)) for c in inv.clusters for h in c.hosts]
    con.execute("BEGIN")
    try:
        for p in inv.providers:
            con.execute("INSERT OR REPLACE INTO providers VALUES (?, ?, ?)", [p.name, p.usd_per_gpu_hour, p.notes])
        for c in inv.clusters:
            con.execute(
                "INSERT OR REPLACE INTO clusters VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [c.name, c.provider, c.gpu, c.gpus_per_node, c.interconnect, c.contracted_nodes, c.contract_start,
                 c.timezone, c.nodes_expr],
            )
        if node_rows:
            # NOTE: one statement, not one per node (executemany costs milliseconds a row: seconds for a fleet);
            # a host listed twice keeps its last cluster, as row-by-row upserts did
            last = {h: (h, c, d) for h, c, d in node_rows}
            con.register("_nodes", store.ArrowStream(pl.DataFrame(list(last.values()), orient="row", schema={
                "host": pl.String, "cluster": pl.String, "delivered": pl.Date})))
            try:
                con.execute("INSERT OR REPLACE INTO nodes (host, cluster, delivered) SELECT * FROM _nodes")
            finally:
                con.unregister("_nodes")
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
    return {"providers": len(inv.providers), "clusters": len(inv.clusters), "nodes": len(node_rows)}


def load_run(con: duckdb.DuckDBPyConnection, path: Path, run: str, notes: list[str] | None = None) -> None:
    """Upsert one run's facts from its run.toml (every key checked: a bad value is an InputError; an unknown key is
    ignored, with a line in `notes`)."""
    vals, ignored = metadata.read_run(path)
    if notes is not None:
        notes.extend(ignored)
    text = path.read_text(encoding="utf-8")
    cols = ["run", *metadata.RUN_KEYS, "run_toml"]
    con.execute(
        f"INSERT OR REPLACE INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
        [run, *(vals.get(k) for k in metadata.RUN_KEYS), text],
    )

"""EFA's transport error, quoted by PyTorch: the AWS OFI plugin's completion error after "Last error:" is read like
IB's (a transport fault of the rank that quotes it, outranking the generic "remote process exited or there was a
network error" every rank prints), and takes the host of the exception it ends: only that exception's first line
carries the rank's prefix."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl

from clusterlab import Lab
from clusterlab.diagnose import incidents

QUOTE = ("[rank12]:[E0301 04:05:06.123456789 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank 12] "
         "Process group watchdog thread terminated with exception: NCCL error: remote process exited or there was "
         "a network error, NCCL version 2.23.4\n"
         "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.\n"
         "Last error:\n"
         "NET/OFI Request 0x7f3c2a001200 completed with error. RC: 5. Error: 13 (Unreachable remote). "
         "Completed length: 0\n")


def test_the_ofi_completion_error_pytorch_quotes_is_read(tmp_path: Path) -> None:
    path = tmp_path / "train-88.err"
    path.write_text(QUOTE)
    with Lab(":memory:") as lab:
        lab.ingest(path)
        kinds = lab.sql("SELECT kind, failure_mode FROM events WHERE source = 'nccl'").rows()
    assert kinds == [("ofi_completion_error", "network")]


def test_the_ofi_completion_error_ranks_with_ibs_above_the_generic_network_symptom() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE e (failure_mode VARCHAR, kind VARCHAR, source VARCHAR, detail VARCHAR)")
    con.execute("INSERT INTO e VALUES ('network', 'ofi_completion_error', 'nccl', NULL), "
                "('network', 'watchdog_terminated', 'torch', NULL)")
    tiers = dict(con.execute(f"SELECT kind, {incidents._tier_sql()} FROM e").fetchall())
    assert tiers["ofi_completion_error"] == incidents.PEER_TIER > tiers["watchdog_terminated"]


def test_a_quoted_warn_takes_the_host_of_the_exception_it_ends() -> None:
    rows = {"file": ["a.out", "a.out", "a.out", "b.out"], "line": [40, 43, 90, 3],
            "host": ["gpu-b07", None, None, None], "rank": [12, None, None, None],
            "detail": [None, '{"via":"last_error"}', '{"via":"last_error"}', '{"via":"last_error"}']}
    out = incidents._continued(pl.DataFrame(rows, schema_overrides={"rank": pl.Int32}))
    # the quote 3 lines below rank 12's exception is rank 12's; one far below any exception, or in another file,
    # stays unplaced
    assert out["host"].to_list() == ["gpu-b07", "gpu-b07", None, None]
    assert out["rank"].to_list() == [12, 12, None, None]

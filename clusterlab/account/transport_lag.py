"""How long after a peer dies NCCL's InfiniBand transport says so, by NCCL release.

A reliable-connection queue pair retries a send the dead peer never acknowledges NCCL_IB_RETRY_CNT times (7), each
after 4.096 us x 2^NCCL_IB_TIMEOUT, and then completes it with an error: the `NET/IB : Got completion from peer ...
status=12` warning (retry count exceeded) and the watchdog's `remote process exited or there was a network error`
that follow. A job trains without pause, so a send is under way when the peer dies: the error comes about the whole
retry budget after the death. NCCL's default NCCL_IB_TIMEOUT (NCCL_PARAM in src/transport/net_ib.cc) was 14 up to
2.13, 18 from 2.14.3 and 20 from 2.23.4: 0.5 s, 8.6 s and 34 s.
"""

from __future__ import annotations

import re

import duckdb

from clusterlab import store

RETRY_CNT = 7
# (first release, NCCL_IB_TIMEOUT default from it)
DEFAULTS = ((2, 23, 20), (2, 14, 18), (0, 0, 14))
# The longest the error can lag a death at a default setting (the recent releases')
LONGEST_S = (RETRY_CNT + 1) * 4.096e-6 * 2 ** DEFAULTS[0][2]


def lag_s(version: str | None) -> float | None:
    """Seconds from a peer's death to its partners' transport error under an NCCL `version` ("2.21.5",
    "2.18.3+cuda12.2") at its default timeout; None where the version is unknown."""
    m = re.match(r"(\d+)\.(\d+)", version or "")
    if not m:
        return None
    major, minor = int(m.group(1)), int(m.group(2))
    timeout = next(t for a, b, t in DEFAULTS if (major, minor) >= (a, b))
    return (RETRY_CNT + 1) * 4.096e-6 * 2 ** timeout


def run_lag_s(con: duckdb.DuckDBPyConnection, run: str) -> float:
    """The lag for the NCCL release a run's logs name (its latest, where they name several: a job upgraded mid-run is
    rare, an image with two is not); 0 where none does, and a peer's error then dates the death as printed."""
    got = store.frame(con, """
        SELECT value AS v FROM facts WHERE run = $run AND key = 'nccl_version'
        UNION ALL
        SELECT json_extract_string(detail, '$.nccl_version') FROM events
        WHERE run = $run AND detail IS NOT NULL AND json_extract_string(detail, '$.nccl_version') IS NOT NULL""",
                      {"run": run})
    lags = [x for x in (lag_s(v) for v in got["v"].to_list()) if x is not None]
    return max(lags, default=0.0)

"""A worker's exit that nothing else in its file explains: the mode the exit alone implies (issue 30).

torchrun reports a child that died (`ChildFailedError`'s summary, the agent's `failed (exitcode: N)` line) with
its exit code and no cause of its own. Where no other line of the same file names a cause, and the agent was not
killed from outside (its own death signal: Slurm's or a person's SIGTERM), the exit says where to look: SIGABRT is
how ProcessGroupNCCL's watchdog ends a rank after a collective timeout, SIGKILL the kernel's OOM killer, SIGBUS a
worker out of /dev/shm, exit 1 or a segfault the process's own code.

A pass over the stored events of whole files, after the collectors: what a file says elsewhere must not depend on
which batch of its lines the summary fell in. The inferred rows carry `"mode_from_exit": true` in their detail, so
that the pass can be run again as files grow. Root cause reads them, among a run's other evidence, as what they
were: exits of unknown cause (`diagnose.incidents.candidates`); the inference is what a file alone can say.
"""

from __future__ import annotations

import signal

import duckdb

_SIGNAL_MODES = {"SIGABRT": "nccl_timeout", "SIGKILL": "host_oom", "SIGBUS": "host_oom", "SIGSEGV": "user_code_error"}
EXIT_MODES = {-signal.Signals[name].value: mode for name, mode in _SIGNAL_MODES.items()}
KINDS = ("child_failed", "worker_failed", "launcher_exit")  # launcher_exit: DeepSpeed, mp.spawn, launch.py
_BY_SIGNAL = " ".join(f"WHEN x.code = {code} THEN '{mode}'" for code, mode in sorted(EXIT_MODES.items()))
_MARK = """CAST(json_merge_patch(coalesce(events.detail, '{}'), '{"mode_from_exit": %s}') AS VARCHAR)"""

_PASS = f"""
WITH exits AS (
    SELECT file_id, line, TRY_CAST(json_extract_string(detail, '$.exitcode') AS INTEGER) AS code,
           coalesce(json_extract_string(detail, '$.mode_from_exit') = 'true', false) AS inferred
    FROM events WHERE source = 'torch' AND kind IN {KINDS!r}
      AND (failure_mode = 'unknown' OR json_extract_string(detail, '$.mode_from_exit') = 'true')
),
explained AS (
    -- another line of the file names a cause, or the agent itself was told to stop
    SELECT DISTINCT e.file_id FROM events e SEMI JOIN exits x USING (file_id)
    WHERE (e.failure_mode IS NOT NULL AND e.failure_mode <> 'unknown'
           AND coalesce(json_extract_string(e.detail, '$.mode_from_exit') <> 'true', true))
       OR e.kind = 'agent_signal'
),
implied AS (
    SELECT x.file_id, x.line,
           CASE WHEN x.file_id IN (SELECT file_id FROM explained) THEN NULL
                WHEN x.code > 0 THEN 'user_code_error' {_BY_SIGNAL} END AS mode
    FROM exits x
)
UPDATE events SET
    failure_mode = coalesce(i.mode, 'unknown'),
    detail = CASE WHEN i.mode IS NULL THEN {_MARK % "null"} ELSE {_MARK % "true"} END
FROM implied i
WHERE events.file_id = i.file_id AND events.line = i.line AND events.source = 'torch' AND events.kind IN {KINDS!r}
  AND events.failure_mode IS DISTINCT FROM coalesce(i.mode, 'unknown')
"""


def infer(con: duckdb.DuckDBPyConnection) -> int:
    """Give every unexplained worker exit of the store the mode its exit implies; the rows changed."""
    if not con.execute(f"SELECT count(*) FROM events WHERE source = 'torch' AND kind IN {KINDS!r}").fetchall()[0][0]:
        return 0
    return con.execute(_PASS).fetchall()[0][0]

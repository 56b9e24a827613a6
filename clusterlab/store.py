"""The DuckDB schema, its migrations, and opening a database."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import duckdb
import polars as pl

from clusterlab.tables import (  # noqa: F401  (re-exported)
    DATED_TABLES,
    DATING,
    EVIDENCE_PREFIX,
    TABLE_COLUMNS,
    evidence_schema,
)

DEFAULT_DB = "clusterlab.duckdb"

_DUCK_TYPES = {
    pl.Int64: "BIGINT",
    pl.Int32: "INTEGER",
    pl.Float64: "DOUBLE",
    pl.String: "VARCHAR",
    pl.Boolean: "BOOLEAN",
    pl.Datetime("us"): "TIMESTAMP",
}

def _create_evidence(table: str) -> str:
    cols = ", ".join(f"{c} {_DUCK_TYPES[t]}" for c, t in evidence_schema(table).items())
    return f"CREATE TABLE {table} ({cols})"


_V1 = [
    "CREATE TABLE schema_version (version INTEGER, applied_at TIMESTAMP DEFAULT current_timestamp)",
    """CREATE TABLE providers (provider VARCHAR PRIMARY KEY, usd_per_gpu_hour DOUBLE, notes VARCHAR)""",
    """CREATE TABLE clusters (cluster VARCHAR PRIMARY KEY, provider VARCHAR, gpu VARCHAR,
        gpus_per_node INTEGER, interconnect VARCHAR, contracted_nodes INTEGER, contract_start DATE,
        timezone VARCHAR, nodes_expr VARCHAR)""",
    "CREATE TABLE nodes (host VARCHAR PRIMARY KEY, cluster VARCHAR)",
    """CREATE TABLE runs (run VARCHAR PRIMARY KEY, cluster VARCHAR, gpus INTEGER,
        tokens_per_step BIGINT, flops_per_token DOUBLE, params BIGINT, layers INTEGER,
        hidden INTEGER, seq_len INTEGER, checkpoint_dir VARCHAR, launcher VARCHAR,
        launch_command VARCHAR, run_toml VARCHAR)""",
    """CREATE TABLE attempts (run VARCHAR, attempt INTEGER, start_ts TIMESTAMP, end_ts TIMESTAMP,
        first_step_ts TIMESTAMP, first_step BIGINT, last_step BIGINT, hosts VARCHAR[],
        n_hosts INTEGER, PRIMARY KEY (run, attempt))""",
    """CREATE TABLE ingested_files (file_id BIGINT PRIMARY KEY, path VARCHAR, content_hash VARCHAR,
        raw_bytes BIGINT, text_bytes BIGINT, lines BIGINT, last_line_open BOOLEAN,
        last_line_start BIGINT, collectors VARCHAR[], run VARCHAR, attempt INTEGER, host VARCHAR,
        rows BIGINT, unparsed BIGINT, other_lines BIGINT, ingested_at TIMESTAMP)""",
    "CREATE SEQUENCE file_ids START 1",
    *(_create_evidence(t) for t in TABLE_COLUMNS),
    # The fleet as analyses want it: a host absent from the inventory is kept, under `unknown`.
    """CREATE VIEW inventory AS
        SELECT h.host, coalesce(n.cluster, 'unknown') AS cluster,
               coalesce(c.provider, 'unknown') AS provider, c.gpu, c.gpus_per_node,
               p.usd_per_gpu_hour
        FROM (SELECT host FROM nodes UNION SELECT DISTINCT host FROM events WHERE host IS NOT NULL
              UNION SELECT DISTINCT host FROM rank_steps WHERE host IS NOT NULL) h
        LEFT JOIN nodes n USING (host) LEFT JOIN clusters c ON c.cluster = n.cluster
        LEFT JOIN providers p ON p.provider = c.provider""",
]

_V2 = [
    """CREATE TABLE annotations (incident_id VARCHAR NOT NULL, failure_mode VARCHAR, host VARCHAR,
        blame VARCHAR, note VARCHAR, ticket VARCHAR, status VARCHAR, author VARCHAR,
        annotated_at TIMESTAMP DEFAULT current_timestamp)""",
]

# The relaunch driver's audit trail: one row per execution (or refused repeat) of a relaunch plan.
_V3 = [
    "CREATE SEQUENCE relaunch_ids START 1",
    """CREATE TABLE relaunches (relaunch_id BIGINT PRIMARY KEY DEFAULT nextval('relaunch_ids'),
        incident_id VARCHAR NOT NULL, run VARCHAR, backend VARCHAR, plan_json VARCHAR, command VARCHAR[],
        commands_json VARCHAR, started_at TIMESTAMP, finished_at TIMESTAMP, job_id VARCHAR, result VARCHAR,
        detail VARCHAR)""",
]

# When a node was handed over, where the inventory says (`delivered` in inventory.toml): late nodes.
_V4 = ["ALTER TABLE nodes ADD COLUMN delivered DATE"]

# The relaunch driver's claims: one row per incident whose launch stands or is under way. Its primary key is
# what lets exactly one of two executions running at once launch (relaunch/execute.py).
_V5 = [
    """CREATE TABLE relaunch_claims (incident_id VARCHAR PRIMARY KEY, relaunch_id BIGINT NOT NULL,
        claimed_at TIMESTAMP DEFAULT current_timestamp)""",
    """INSERT INTO relaunch_claims (incident_id, relaunch_id)
        SELECT incident_id, min(relaunch_id) FROM relaunches
        WHERE result NOT IN ('failed', 'refused', 'repeat') GROUP BY incident_id""",
]

# Lines that look like trouble (error, fatal, Traceback, timeout, ...) but that no collector's rule matched,
# kept (up to UNMATCHED_PER_FILE a file) so that `clusterlab unmatched` can show what was not understood.
_V6 = ["""CREATE TABLE unmatched_lines (file_id BIGINT, run VARCHAR, attempt INTEGER, host VARCHAR, line BIGINT,
        text VARCHAR)"""]

# Who holds a relaunch claim: a process killed between its claim and its record leaves the claim behind,
# and only the process id and host tell a dead holder from a launch still under way.
_V7 = ["ALTER TABLE relaunch_claims ADD COLUMN pid INTEGER", "ALTER TABLE relaunch_claims ADD COLUMN host VARCHAR"]

# `clusterlab watch`: each detection once (its key dedups alerts across restarts) and each watched run's live
# state, so that a watch stopped by SIGTERM resumes where it was and `metrics` and the notebook can read it.
_WATCH = [
    """CREATE TABLE watch_events (event_key VARCHAR PRIMARY KEY, run VARCHAR, attempt INTEGER, kind VARCHAR,
        detected_at TIMESTAMP, evidence_ts TIMESTAMP, host VARCHAR, failure_mode VARCHAR, incident_id VARCHAR,
        message VARCHAR, event_json VARCHAR)""",
    """CREATE TABLE watch_state (run VARCHAR PRIMARY KEY, updated_at TIMESTAMP, attempt INTEGER, last_step BIGINT,
        progress_seen_at TIMESTAMP, baseline_step_s DOUBLE, recent_step_s DOUBLE, goodput DOUBLE,
        state_json VARCHAR)""",
]

# Issue 20: the `telemetry` evidence table (DCGM, nvidia-smi, node exporter samples; a database created after it
# was added to TABLE_COLUMNS has it from _V1 already), and the provider's tickets, one row per step of each
# ticket's timeline (opened, acknowledged, answered, resolved, reopened), which the scorecard's support table reads.
_TELEMETRY = [
    _create_evidence("telemetry").replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1),
    """CREATE TABLE tickets (ticket VARCHAR NOT NULL, step VARCHAR NOT NULL, ts TIMESTAMP NOT NULL, provider VARCHAR,
        host VARCHAR, incident_id VARCHAR, answer VARCHAR, note VARCHAR, source VARCHAR,
        recorded_at TIMESTAMP DEFAULT current_timestamp, PRIMARY KEY (ticket, step, ts))""",
]

# Issue 19: the changes made to a cluster (a hot-fix, an upgrade, a node excluded), each with when it was made, so
# that `clusterlab change compare` can set the cluster's record before it against after it.
_CHANGES = [
    "CREATE SEQUENCE change_ids START 1",
    """CREATE TABLE changes (change_id BIGINT PRIMARY KEY DEFAULT nextval('change_ids'), cluster VARCHAR NOT NULL,
        ts TIMESTAMP NOT NULL, what VARCHAR NOT NULL, author VARCHAR,
        recorded_at TIMESTAMP DEFAULT current_timestamp)""",
]

# Issue 33: what the tables derived from the evidence (the attempts) were last built from, so that an ingest
# killed between storing its files and rebuilding them is found, and repaired, when the database is next opened.
_DERIVED = ["CREATE TABLE derived (name VARCHAR PRIMARY KEY, evidence VARCHAR, built_at TIMESTAMP)"]

# Issue 33: the watch's outbox: a detection is saved unsent and marked once alerted (or held back by the rate
# limit), so that a watch killed between the two alerts it on its next start. What was there before was sent.
_OUTBOX = ["ALTER TABLE watch_events ADD COLUMN sent_at TIMESTAMP", "UPDATE watch_events SET sent_at = detected_at"]

# Issue 28: how a row without its own stamp was dated (tables.DATING): the interval its time lies in. A database
# created after DATING was added has the columns from _V1 already.
_DATING = [f"ALTER TABLE {t} ADD COLUMN IF NOT EXISTS {c} {_DUCK_TYPES[ty]}" for t in DATED_TABLES
           for c, ty in DATING.items()]

# Issue 28: an array task's raw job id beside its `71400_3` (a database created after it was added has it).
_RAW_JOB_ID = ["ALTER TABLE jobs ADD COLUMN IF NOT EXISTS job_id_raw VARCHAR"]

# Issue 31: node fault episodes (tables.TABLE_COLUMNS["fault_episodes"]; a database created after it was added has
# the table from _V1 already).
_FAULT_EPISODES = [_create_evidence("fault_episodes").replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1)]

# Index i holds the statements that take a database from version i to version i + 1.
MIGRATIONS: list[list[str]] = [_V1, _V2, _V3, _V4, _V5, _V6, _V7, _WATCH, _TELEMETRY, _CHANGES, _DERIVED,
                               _OUTBOX, _DATING, _RAW_JOB_ID, _FAULT_EPISODES]
# tables whose rows belong to one ingested file (deleted with it, cut when it is re-read from a line)
FILE_TABLES = [*TABLE_COLUMNS, "unmatched_lines"]
SCHEMA_VERSION = len(MIGRATIONS)


# The job id in the name sbatch gives its output by default: `slurm-71400.out`, `slurm-71400_3.out` (arrays).
SLURM_OUTPUT_NAME = r"(?:^|/)slurm-(\d+(?:_\d+)?)\.(?:out|err)(?:\.gz)?$"
# ... and the names a team gives it (`#SBATCH --output=%x-%j.out`: `pretrain-71400.out`) or the folder it keeps a job's
# evidence in (`job-71400/`): a number the scheduler's own record must then confirm (its span holds the evidence)
JOB_IN_PATH = r"(?:^|/)job[-_]?(\d{2,})/|[-_](\d{3,})\.(?:out|err|log)(?:\.gz)?$"
# CTEs `named (run, attempt, job_id)`: the scheduler jobs each attempt's lines name (a job id fact or an
# event's detail); attempts that share a file (an in-job restart split one launch's logs) share its job.
NAMED_JOBS = f"""
    fa AS (SELECT DISTINCT run, file_id, attempt FROM events WHERE run IS NOT NULL
           UNION SELECT DISTINCT run, file_id, attempt FROM steps WHERE run IS NOT NULL),
    named0 AS (
        SELECT DISTINCT run, attempt, json_extract_string(detail, '$.job_id') AS job_id FROM events
        WHERE run IS NOT NULL AND json_extract_string(detail, '$.job_id') IS NOT NULL
        UNION SELECT DISTINCT run, attempt, value FROM facts WHERE run IS NOT NULL AND key = 'slurm_job_id'
        -- sbatch's own name for the output it writes (`slurm-%j.out`, `slurm-%A_%a.out`)
        UNION SELECT DISTINCT fa.run, fa.attempt, regexp_extract(f.path, '{SLURM_OUTPUT_NAME}', 1)
        FROM fa JOIN ingested_files f USING (file_id)
        WHERE regexp_matches(f.path, '{SLURM_OUTPUT_NAME}')
        UNION SELECT DISTINCT fa.run, fa.attempt, coalesce(nullif(regexp_extract(f.path, '{JOB_IN_PATH}', 1), ''),
                                                           regexp_extract(f.path, '{JOB_IN_PATH}', 2))
        FROM fa JOIN ingested_files f USING (file_id)
        WHERE regexp_matches(f.path, '{JOB_IN_PATH}')
    ),
    named AS (
        SELECT * FROM named0
        UNION SELECT x.run, x.attempt, n.job_id FROM named0 n JOIN fa y ON y.run = n.run AND y.attempt = n.attempt
              JOIN fa x ON x.run = y.run AND x.file_id = y.file_id AND x.attempt <> y.attempt
    )"""


def db_path(path: str | os.PathLike | None = None) -> str:
    """The database path: explicit, else $CLUSTERLAB_DB, else ./clusterlab.duckdb."""
    return str(path or os.environ.get("CLUSTERLAB_DB") or DEFAULT_DB)


def current_version(con: duckdb.DuckDBPyConnection) -> int:
    has = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_version'"
    ).fetchall()[0][0]
    if not has:
        return 0
    return con.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchall()[0][0]


def migrate(con: duckdb.DuckDBPyConnection) -> int:
    """Bring the schema up to SCHEMA_VERSION, every step in one transaction; returns the version."""
    version = current_version(con)
    if version > SCHEMA_VERSION:
        raise RuntimeError(
            f"database schema version {version} is newer than this clusterlab ({SCHEMA_VERSION})"
        )
    if version == SCHEMA_VERSION:
        return version
    # NOTE: one commit, not one per step: each commit of a file database waits for the disk (a new database's 15
    # steps took 0.1-0.2 s of a command's start); all steps or none, as one step was
    con.execute("BEGIN")
    try:
        for v in range(version, SCHEMA_VERSION):
            for stmt in MIGRATIONS[v]:
                con.execute(stmt)
            con.execute("INSERT INTO schema_version (version) VALUES (?)", [v + 1])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return SCHEMA_VERSION


class DatabaseLocked(RuntimeError):
    """Another process holds the database file: `path`, that process's `pid` (None when DuckDB did not say)."""

    def __init__(self, path: str, pid: int | None, writing: bool) -> None:
        self.path, self.pid, self.writing = path, pid, writing
        who = f" (pid {pid})" if pid is not None else ""
        what = "writing to" if writing else "reading"
        super().__init__(f"{path}: another clusterlab is {what} this database{who}")


_LOCK = re.compile(r"Could not set lock on file")
_LOCK_PID = re.compile(r"\(PID (\d+)\)")


def _locked(path: str, error: duckdb.IOException) -> DatabaseLocked | None:
    """DuckDB's lock error in clusterlab's words (None: another IO error)."""
    text = str(error)
    if not _LOCK.search(text):
        return None
    pid = _LOCK_PID.search(text)
    # NOTE: DuckDB adds "you would be able to open this database in read-only mode" when the holder only reads
    return DatabaseLocked(path, int(pid.group(1)) if pid else None, writing="read-only mode" not in text)


# NOTE: `clusterlab watch` holds the file only for a tick's write and marks the database it watches with
# `<db>.watching` (its pid); a connection that finds such a database locked waits this long before it gives up
# with DatabaseLocked. Without a live watch a lock is someone's long ingest: said at once, as before.
READ_WAIT_S = 10.0
WATCH_MARK = ".watching"


def watch_pid(path: str) -> int | None:
    """The pid of the live `clusterlab watch` writing to this database (None: none)."""
    try:
        pid = int(Path(path + WATCH_MARK).read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def connect(path: str | os.PathLike | None = None, read_only: bool = False,
            wait_s: float | None = None) -> duckdb.DuckDBPyConnection:
    """Open (creating and migrating if needed) a clusterlab database; ':memory:' works too; DatabaseLocked if held.

    A locked file is tried again for `wait_s` seconds (default: READ_WAIT_S while a watch writes to it, else none).
    """
    p = db_path(path)
    if p != ":memory:":
        Path(p).parent.mkdir(parents=True, exist_ok=True)
    if wait_s is None:
        wait_s = READ_WAIT_S if p != ":memory:" and watch_pid(p) is not None else 0.0
    deadline = time.monotonic() + wait_s
    pause = 0.02
    while True:
        try:
            con = duckdb.connect(p, read_only=read_only)
            break
        except duckdb.IOException as e:
            locked = _locked(p, e)
            if locked is None:
                raise
            if time.monotonic() + pause > deadline:
                raise locked from None
            time.sleep(pause)
            pause = min(pause * 2, 0.05)  # NOTE: short: a watch lets go of the file only between ticks
    if not read_only:
        migrate(con)
    return con


class ArrowStream:
    """A polars frame as DuckDB reads it without pyarrow: through the Arrow C stream interface. (Given the frame
    itself, DuckDB reads it through `to_arrow()`, which imports pyarrow and numpy: a tenth of a second of a small
    ingest.) Register it (`con.register`) or name a local holding it in the SQL."""

    __slots__ = ("frame",)

    def __init__(self, frame: pl.DataFrame) -> None:
        self.frame = frame

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self.frame.__arrow_c_stream__(requested_schema)


def frame(con: duckdb.DuckDBPyConnection, query: str, params: list | dict | None = None,
          **frames: pl.DataFrame) -> pl.DataFrame:
    """The result of a query as a polars frame; `frames` are visible to it under their names."""
    for name, f in frames.items():
        con.register(name, f.to_arrow())
    try:
        return pl.from_arrow(con.sql(query, params=params or None).to_arrow_table())
    finally:
        for name in frames:
            con.unregister(name)

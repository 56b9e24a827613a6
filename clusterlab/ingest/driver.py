"""Ingestion: evidence files in, typed rows in DuckDB; idempotent, crash-safe, parsed in parallel.

The driver walks the paths, decides for each file what to do from its content hash and what the database
already holds (nothing, read it, read what it gained, or read a new version beside the old one: a log rotated
or overwritten keeps what it said), parses the files that need it (in worker processes when there is enough
work, `ingest.parse`) and hands the rows to one writer (`ingest.write`), which commits many files per
transaction, each file's rows and record together.
"""

from __future__ import annotations

import datetime as dt
import gc
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import duckdb
import polars as pl

from clusterlab.collectors import _zone_sniff
from clusterlab.collectors._base import Context
from clusterlab.ingest import attempts, boot, bundle, cloud_hosts, era, exit_modes, inventory
from clusterlab.ingest.groups import parse_many
from clusterlab.ingest.parse import FilePlan, FileResult, ParsedFile
from clusterlab.ingest.pool import Workers, parse_all
from clusterlab.ingest.reader import InputError, content_hash
from clusterlab.ingest.write import Writer
from clusterlab.tables import TABLE_COLUMNS


@dataclass
class IngestSummary:
    files: list[FileResult] = field(default_factory=list)
    inventory: dict[str, int] = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # problems of the whole call, not of one file
    warnings: list[str] = field(default_factory=list)  # worth telling, not a failure (an unknown key, ignored)

    @property
    def rows(self) -> dict[str, int]:
        out: dict[str, int] = {t: 0 for t in TABLE_COLUMNS}
        for f in self.files:
            for t, n in f.rows.items():
                out[t] += n
        return out

    @property
    def errors(self) -> list[str]:
        return [m for f in self.files if f.status == "error" for m in f.messages]

    @property
    def problems(self) -> list[str]:
        """Every message worth a user's attention (errors and skipped lines)."""
        return [m for f in self.files for m in f.messages] + self.notes

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for f in self.files:
            out[f.status] = out.get(f.status, 0) + 1
        return out

    def to_dict(self) -> dict:
        return {
            "files": len(self.files),
            "by_status": self.counts(),
            "rows": self.rows,
            "unparsed_lines": sum(f.unparsed for f in self.files),
            "inventory": self.inventory,
            "runs": self.runs,
            "problems": self.problems,
            "skipped": self.skipped,
            "warnings": self.warnings,
        }

    @property
    def skipped(self) -> list[str]:
        """Each file a directory walk skipped, and why ("no collector recognises this content (...)")."""
        return [f.skipped_why for f in self.files if f.status == "skipped" and f.skipped_why]


def ingest(
    con: duckdb.DuckDBPyConnection,
    paths: list[str | Path],
    inventory_file: str | Path | None = None,
    run: str | None = None,
    host: str | None = None,
    year: int | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    workers: int | None = None,
    epoch: dt.datetime | None = None,
) -> IngestSummary:
    """Ingest files and directories; returns what was read, skipped and why.

    `workers`: parsing processes (default: the core count; 1 parses in this process). The rows stored never
    depend on it. `epoch`: day 0 of files that count relative days (a fault trace's `event_time`).
    """
    summary = IngestSummary()
    roots = [Path(p) for p in paths]
    with _fewer_collections(), Workers(workers) as pool, \
            tempfile.TemporaryDirectory(prefix="clusterlab-spill-") as spill:
        # NOTE: a database that holds no file yet reads every file found: its workers start during the walk
        # (a fleet's walk takes a second); elsewhere, once the files that changed are known to be worth them
        fresh = not con.execute("SELECT count(*) FROM ingested_files").fetchall()[0][0]
        tasks = walk_tasks(con, roots, Path(inventory_file) if inventory_file else None, run, host, year, summary,
                           found=pool.found if fresh else None, epoch=epoch)
        results = _ingest_tasks(con, tasks, Path(spill), workers, progress, pool=pool)
    summary.files += results
    # NOTE: these two passes run whatever this call stored: an ingest killed before them left their work undone,
    # and its rerun finds every file unchanged (each costs a count where it has nothing to read)
    inferred = exit_modes.infer(con)  # worker exits that nothing else in their file explains
    # raw dmesg lines kept undated: dated where their boot now has a time (a boot_time file put beside, a journal)
    dated = boot.date_raw_kernel_lines(con, [(bundle.real_path(t.path, t.link), c.boot_time)
                                             for t, c in tasks if c.boot_time])
    # a cloud's events about its VMs: the host of each instance id, a reclaim where the cloud says it took the VM back
    named = cloud_hosts.resolve(con)
    # the attempts are rebuilt from the whole store (0.3 s for a campaign's): only when the evidence they were built
    # from changed (a file stored, here or by a killed ingest: `stale`) or a pass above changed rows
    if inferred or dated or named or attempts.stale(con):
        attempts.refresh(con)
    note_nothing_found(summary, roots)
    return summary


@contextmanager
def _fewer_collections() -> Iterator[None]:
    """The garbage collector's first generation collected less often while ingesting (a fleet's files bring many
    short-lived objects and few cycles), as it was after."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], 50_000), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def walk_tasks(con: duckdb.DuckDBPyConnection, roots: list[Path], inventory_file: Path | None, run: str | None,
               host: str | None, year: int | None, summary: IngestSummary,
               found: Callable[[int | None], None] | None = None,
               epoch: dt.datetime | None = None) -> list[tuple[bundle.FileTask, Context]]:
    """The files to ingest and their contexts; loads the inventory and the runs' run.toml on the way.

    Problems (a bad inventory, an unreadable directory) go into `summary`. The Spark engine walks with it too.
    `found`: told each file's size (None: not known yet) as the walk finds it.
    """
    inv_files = [inventory_file] if inventory_file else []
    inv_files += [r / "inventory.toml" for r in roots if (r / "inventory.toml").is_file()]
    # a folder named below its bundle's root (`bundle/runs`): the bundle's inventory still says who the hosts are
    inv_files += [b / "inventory.toml" for r in roots if r.is_dir() and (b := bundle.root_of(r)) is not None
                  and (b / "inventory.toml").is_file()]
    load = _InventoryLoader(con, summary.warnings)
    for f in dict.fromkeys(inv_files):
        try:
            for k, n in load(f).items():
                summary.inventory[k] = summary.inventory.get(k, 0) + n
        except InputError as e:
            summary.files.append(FileResult(str(f), "error", messages=[str(e)]))
    known = frozenset(r[0] for r in con.execute("SELECT host FROM nodes").fetchall())
    walked = bundle.walk(roots, known, found)
    more = [f for f in walked.inventories if f not in inv_files]
    for f in more:
        try:
            load(f)
        except InputError as e:
            summary.files.append(FileResult(str(f), "error", messages=[str(e)]))
    if more:  # hosts the walk could not know yet: walk again (a root's own inventory was loaded before it)
        known = frozenset(r[0] for r in con.execute("SELECT host FROM nodes").fetchall())
        walked = bundle.walk(roots, known)
    # NOTE: every run.toml in one transaction: a commit each waited for the disk (a campaign has one per bundle);
    # a bad one is refused before its statement (InputError), so it leaves the others' as they are
    con.execute("BEGIN")
    try:
        for name, f in walked.runs.items():
            try:
                inventory.load_run(con, f, name, summary.warnings)
                summary.runs.append(name)
            except InputError as e:
                summary.files.append(FileResult(str(f), "error", messages=[str(e)]))
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    for disp, why in walked.unreadable:
        summary.files.append(FileResult(disp, "error", messages=[f"{disp}: {why}"]))
    zones = dict(con.execute(
        "SELECT n.host, coalesce(c.timezone, 'UTC') FROM nodes n JOIN clusters c USING (cluster)"
    ).fetchall())
    # NOTE: a cluster whose zone inventory.toml leaves out (UTC by default): the offset its nodes' journals print,
    # where they all agree on one that is not UTC (the nodes' own setting, which dmesg -T and the job's lines share)
    sniffed = {}
    # the job output of a run on the cluster (no host): where its script printed `date`, the zone's abbreviation
    run_cluster = dict(con.execute("SELECT run, cluster FROM runs").fetchall())
    for cluster, hosts in con.execute("SELECT c.cluster, list(n.host) FROM clusters c JOIN nodes n USING (cluster) "
                                      "WHERE coalesce(c.timezone, 'UTC') = 'UTC' GROUP BY ALL").fetchall():
        mine = set(hosts)
        jobs = (t.path for t in walked.files if t.host is None and t.run and run_cluster.get(t.run) == cluster)
        if (tz := _zone_sniff.zone_from_offsets((t.path for t in walked.files if t.host in mine), jobs)) \
                not in (None, "UTC"):
            sniffed[cluster] = tz
            zones.update(dict.fromkeys(hosts, tz))
    # NOTE: a file no host is known for (a run's rank-0 log or slurm-J.out, the controller's slurmctld.log, sacct)
    # prints the local time of the cluster it ran on: the run's cluster's zone, else the one zone that every
    # cluster of the inventory shares; read as UTC it lies an offset away from the same moment in the nodes' logs.
    run_zones = {r: sniffed.get(c, z or "UTC") for r, c, z in con.execute(
        "SELECT r.run, c.cluster, c.timezone FROM runs r JOIN clusters c USING (cluster)").fetchall()}
    shared = {sniffed.get(c, z or "UTC") for c, z in con.execute("SELECT cluster, timezone FROM clusters").fetchall()}
    zones[""] = shared.pop() if len(shared) == 1 else "UTC"
    # the year of yearless stamps: the evidence's own dated stamps under each named path, unless the caller gave one
    logged = [None] * len(walked.files) if year else era.eras(roots, walked.files)
    return [(task, _context(task, walked, zones, known, run, host, year, epoch, run_zones, when))
            for task, when in zip(walked.files, logged, strict=True)]


class _InventoryLoader:
    """`inventory.load_inventory`, skipping a file whose content is the one it loaded last (each bundle of a
    campaign carries the fleet's same inventory.toml: a load costs ~10 ms of upserts, and loading the same content
    twice in a row changes nothing; not any earlier one, which a different inventory since may have overridden)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, notes: list[str] | None = None) -> None:
        self.con, self.notes = con, notes
        self.last: tuple[bytes, dict[str, int]] | None = None

    def __call__(self, f: Path) -> dict[str, int]:
        try:
            data = f.read_bytes()
        except OSError:
            data = None  # (load_inventory says why)
        if data is not None and self.last is not None and self.last[0] == data:
            return dict(self.last[1])
        counts = inventory.load_inventory(self.con, f, self.notes)
        self.last = (data, dict(counts)) if data is not None else None
        return counts


def _context(task: bundle.FileTask, walked: bundle.Walk, zones: dict[str, str], known: frozenset[str],
             run: str | None, host: str | None, year: int | None, epoch: dt.datetime | None = None,
             run_zones: dict[str, str] | None = None, logged: dt.datetime | None = None) -> Context:
    boot = walked.boot_times.get(task.path.parent) if walked.boot_times else None
    stamp = task.mtime if task.mtime is not None else task.path.stat().st_mtime
    mtime = dt.datetime.fromtimestamp(stamp, dt.UTC).replace(tzinfo=None)
    tz = (zones.get(task.host or host or "") if task.host or host
          else (run_zones or {}).get(task.run or run or "", zones.get("", "UTC"))) or "UTC"
    return Context(
        path=task.display,
        host=task.host or host,
        run=task.run or run,
        attempt=task.attempt,
        year=year or (logged or mtime).year,
        mtime=None if year else mtime,
        era=logged,
        tz=tz,
        proc_tz=_zone_sniff.process_zone(_zone_sniff.file_head(task.path), tz)
        if not (task.host or host) and (task.run or run) and tz not in ("UTC", "Etc/UTC") else None,
        boot_time=bundle.read_boot_time(boot) if boot else None,
        known_hosts=known,
        epoch=epoch,
    )


def _ingest_tasks(con: duckdb.DuckDBPyConnection, tasks: list[tuple[bundle.FileTask, Context]], spill: Path,
                  workers: int | None, progress: Callable[[int, int, str], None] | None,
                  collectors: list[ModuleType] | None = None, pool: Workers | None = None) -> list[FileResult]:
    """Plan, parse and write `tasks`; the results in the tasks' order.

    Files are planned (hashed, given ids) a block at a time as the parsers ask for more, so parsing starts after
    the first block, not after every file of a fleet was hashed."""
    sizes = [t.size if t.size is not None else _size(t.path) for t, _ in tasks]
    total = sum(sizes)
    decided: list[FilePlan | FileResult] = []
    stored = stored_files(con)
    done = [0]  # bytes read: files found unchanged (hashed) or parsed

    def plans() -> Iterator[FilePlan]:
        for i in range(0, len(tasks), PLAN_BLOCK):
            block = plan_files(con, tasks[i:i + PLAN_BLOCK], spill, stored)
            decided.extend(block)
            sized = zip(block, sizes[i:i + PLAN_BLOCK], strict=True)
            done[0] += sum(n for d, n in sized if not isinstance(d, FilePlan))
            yield from (d for d in block if isinstance(d, FilePlan))

    parsed: list[FileResult] = []  # in the plans' order (workers hand results back in order)
    writer = Writer(con)
    try:
        for pf in _parsed(plans(), workers, collectors, pool):
            writer.add(pf)
            parsed.append(pf.result)
            done[0] += pf.plan.size
            if progress:
                progress(min(done[0], total), total, pf.plan.task.display)
    finally:
        writer.close()
    if progress:
        progress(total, total, "")
    results = iter(parsed)
    return [next(results) if isinstance(d, FilePlan) else d for d in decided]


PLAN_BLOCK = 512  # files hashed and given ids at a time


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0  # (its plan reports why it cannot be read)


def _parsed(plans: Iterator[FilePlan], workers: int | None, collectors: list[ModuleType] | None,
            pool: Workers | None) -> Iterator[ParsedFile]:
    if collectors is not None:  # a caller's own collectors (tests, golden files): parsed here
        return iter(parse_many(list(plans), collectors))
    return parse_all(plans, workers, pool)


# What the store holds of every file it read, one row each (the Spark driver plans with it too)
STORED_FILES = """SELECT file_id, path, content_hash, raw_bytes, text_bytes, lines, last_line_open, last_line_start,
                      run, attempt, host FROM ingested_files"""

Stored = tuple[dict[str, tuple], set[tuple]]  # each path's latest record, and the (hash, path), (hash, run, ...) seen


def stored_files(con: duckdb.DuckDBPyConnection) -> Stored:
    """What the database holds of every file: one query, not one per file."""
    latest: dict[str, tuple] = {}
    seen: set[tuple] = set()
    for row in con.execute(STORED_FILES).fetchall():
        file_id, path, digest, *_, run, attempt, host = row
        if path not in latest or latest[path][0] < file_id:
            latest[path] = row
        seen.add((digest, path))
        seen.add((digest, run, attempt, host))
    return latest, seen


def plan_files(con: duckdb.DuckDBPyConnection, tasks: list[tuple[bundle.FileTask, Context]],
               spill: Path | None, stored: Stored | None = None) -> list[FilePlan | FileResult]:
    """For each file: unchanged (a result), or what to read of it and under which id (a plan).

    `stored`: what `stored_files` says (read here where not given); the hashes are taken here.
    """
    latest, seen = stored if stored is not None else stored_files(con)
    out: list[FilePlan | FileResult] = []
    for task, ctx in tasks:
        try:
            size = task.path.stat().st_size  # (now, not when walked: the hash reads what is there now)
            where = bundle.real_path(task.path, task.link)
            prev = latest.get(where)
            whole, prefix = content_hash(task.path, prev[3] if prev and prev[3] <= size else None)
        except OSError as e:
            out.append(FileResult(task.display, "error", messages=[f"{task.display}: cannot read: {e.strerror or e}"]))
            continue
        if (whole, where) in seen or (whole, ctx.run, ctx.attempt, ctx.host) in seen:
            out.append(FileResult(task.display, "unchanged"))
            continue
        plan = FilePlan(task, ctx, file_id=-1, whole_hash=whole, size=size, spill_dir=spill, where=where)
        if prev is not None and prefix is not None and prefix == prev[2]:
            plan.status, plan.file_id = "appended", prev[0]
            # NOTE: an open last line may have been completed since: re-read it from its start.
            if prev[6]:
                plan.skip, plan.first, plan.reopen_from = prev[7], prev[5], prev[5]
            else:
                plan.skip, plan.first = prev[4], prev[5] + 1
            plan.clock = stored_clock(con, plan.file_id, plan.first)
        elif prev is not None:
            # NOTE: a change that is not an append is a new file, and what was stored stays: logrotate
            # (`create`, `copytruncate`) and a job log the next attempt overwrote put new lines where evidence was
            plan.status, plan.earlier = "changed", (prev[0],)
        if plan.status != "appended" and (base := bundle.rotation_base(where)) is not None:
            # `kern.log.1` holds what `kern.log` had, line for line (with what came after the last read)
            plan.earlier, plan.same_lines = tuple(sorted({*plan.earlier, *lineage(con, base)})), True
        out.append(plan)
    fresh = [p for p in out if isinstance(p, FilePlan) and p.file_id < 0]
    if fresh:
        ids = [r[0] for r in con.execute("SELECT nextval('file_ids') FROM range(?)", [len(fresh)]).fetchall()]
        for p, i in zip(fresh, sorted(ids), strict=True):
            p.file_id = i
    return out


def lineage(con: duckdb.DuckDBPyConnection, base: str) -> tuple[int, ...]:
    """Every stored version of a log and of its rotations (`base`, `base.1`, `base.2.gz`, ...)."""
    rows = con.execute("SELECT file_id, path FROM ingested_files WHERE path = $b OR starts_with(path, $b || '.') "
                       "OR starts_with(path, $b || '-')", {"b": base}).fetchall()
    return tuple(sorted(i for i, path in rows if path == base or bundle.rotation_base(path) == base))


def ingest_file(con: duckdb.DuckDBPyConnection, task: bundle.FileTask, ctx: Context,
                collectors: list[ModuleType]) -> FileResult:
    """Ingest one file in one transaction (with these collectors); a failure leaves the database as it was."""
    with tempfile.TemporaryDirectory(prefix="clusterlab-spill-") as spill:
        return _ingest_tasks(con, [(task, ctx)], Path(spill), 1, None, collectors)[0]


def stored_clock(con: duckdb.DuckDBPyConnection, file_id: int, before: int) -> pl.DataFrame | None:
    """The last stored (line, ts) of a file before line `before`: where its clock stood when a read ended."""
    # NOTE: a stored time is the line's own or the earlier stamp it took, so the last one is the
    # clock a clean read would have at that line: appended lines without a time of their own take it.
    union = " UNION ALL ".join(f"SELECT line, ts FROM {t} WHERE file_id = $f AND line < $b AND ts IS NOT NULL"
                               for t in TABLE_COLUMNS)
    got = con.execute(f"SELECT line, ts FROM ({union}) ORDER BY line DESC LIMIT 1", {"f": file_id, "b": before})
    row = got.fetchall()
    if not row:
        return None
    return pl.DataFrame({"line": [row[0][0]], "ts": [row[0][1]]}, schema={"line": pl.Int64, "ts": pl.Datetime("us")})


def note_nothing_found(summary: IngestSummary, roots: list[Path]) -> None:
    """Say so when the paths held no evidence at all (an empty or wrong directory is not a success)."""
    read = {"ingested", "appended", "changed", "unchanged"}
    if summary.problems or summary.inventory or summary.runs or any(f.status in read for f in summary.files):
        return
    where = ", ".join(str(r) for r in roots) or "the paths given"
    skipped = sum(f.status == "skipped" for f in summary.files)
    why = f"{skipped} files, none in a format clusterlab reads" if skipped else "no files"
    summary.notes.append(f"{where}: no evidence files found ({why})")



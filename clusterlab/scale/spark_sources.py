"""Evidence at URLs for the Spark engine (s3a://, gs://, abfss://, hdfs://, file://): listed and read through Spark.

Driver: each URL is listed through Spark (Hadoop's FileSystem for the root, the `binaryFile` source for what is
under it: paths, sizes and modification times, no bytes) and mirrored as a local tree of empty files with the
same names and times, plus the few files the walk itself reads (inventory.toml, run.toml, boot_time), copied.
`ingest.walk_tasks` walks that mirror as it walks a local bundle (the same layout rules, inventories, runs and
contexts); each task then names its URL. A file whose size and time are those listed when it was last read, and
whose hash then is one the manifest holds for its path (or its run, attempt and host), is unchanged without a
read. Every other file is a `Draft`: what an executor needs to plan it as `ingest.plan_files` would.

Executors: `sc.binaryFiles` hands each its files' bytes. `Spilled` writes them to an executor-local file named by
a hash of the URL, hashes it (`reader.content_hash`, as the DuckDB path does) and decides: unchanged, grown
(read from where the last read ended), changed or new. The plan then names the local file for reading and the
URL for every message and row, so the collectors run on it exactly as they run on a local file.
"""

from __future__ import annotations

import dataclasses
import os
import re
import urllib.parse
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from clusterlab.collectors._base import Context
from clusterlab.ingest.bundle import FileTask
from clusterlab.ingest.driver import STORED_FILES, stored_clock
from clusterlab.ingest.parse import FilePlan, FileResult
from clusterlab.ingest.reader import content_hash

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_NO_AUTHORITY = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):/(?!/)")  # Hadoop's `file:/tmp/x` for file:///tmp/x
# binaryFiles hands a file over as one JVM byte array (at most 2 GiB); bigger files are reported, not read
READ_LIMIT = (1 << 31) - (1 << 20)
LIST_THREADS = "32"  # Hadoop's input listing looks up each file a read names: in parallel unless set otherwise
READ_BY_WALK = frozenset({"inventory.toml", "run.toml", "boot_time"})  # the walk reads these on the driver
LISTING = "_listing.parquet"  # in the lake: (url, size, mtime) of each URL file when its bytes were last hashed


def is_url(path: str | os.PathLike) -> bool:
    """A path given as a URL (scheme://...), read through Spark; a pathlib.Path never is (it folds the //)."""
    return isinstance(path, str) and bool(_SCHEME.match(path))


def canonical(hadoop_path: str) -> str:
    """The URL a file is named by in rows and messages: Hadoop's string of its path, with `//` restored."""
    m = _NO_AUTHORITY.match(hadoop_path)
    return f"{m.group(1)}:///{hadoop_path[m.end():]}" if m else hadoop_path


def input_path(hadoop_path: str) -> str:
    """A path as a Hadoop input path that matches only itself (Hadoop globs every input path)."""
    # NOTE: FileInputFormat also splits its input at commas outside braces: a comma goes in braces, escaped
    return re.sub(r"([\\{}\[\]*?])", r"\\\1", hadoop_path).replace(",", "{\\,}")


@dataclass(frozen=True)
class Listed:
    key: str  # the file's path as Hadoop writes it: what binaryFiles names its bytes by
    url: str
    size: int
    mtime_ms: int


@dataclass
class Mirror:
    """URL roots mirrored as local trees for the walk, and how to name what the walk says by URL."""

    base: Path
    roots: list[Path] = field(default_factory=list)
    files: dict[Path, Listed] = field(default_factory=dict)  # a mirrored evidence file -> the file it stands for
    errors: list[FileResult] = field(default_factory=list)
    _absolute: list[tuple[str, str]] = field(default_factory=list)  # (mirror path, URL) of each root
    _relative: list[tuple[str, str]] = field(default_factory=list)  # (walk's display of a root, URL)

    def alias(self, local: Path, url: str) -> None:
        """Name the local copy of a file (an inventory given as a URL) by its URL in messages."""
        self._absolute.append((str(local), url))

    def named(self, text: str) -> str:
        """A path, display or message of the walk's with the mirror's paths replaced by their URLs."""
        for local, url in sorted(self._absolute, key=lambda pair: -len(pair[0])):  # url-10 before url-1
            text = text.replace(local, url)
        for local, url in self._relative:
            if text.startswith(local):
                return url + text[len(local):]
        return text

    def result(self, res: FileResult) -> FileResult:
        return dataclasses.replace(res, display=self.named(res.display), messages=[self.named(m) for m in res.messages],
                                   skipped_why=self.named(res.skipped_why) if res.skipped_why else None)


def _hadoop(spark):
    jvm = spark.sparkContext._jvm
    return jvm, spark.sparkContext._jsc.hadoopConfiguration()


def _java_why(e: Exception) -> str:
    """One line on why the JVM refused (no stack trace)."""
    java = getattr(e, "java_exception", None)
    if java is None:
        return str(e).splitlines()[0][:200]
    kind, text = java.getClass().getSimpleName(), str(java.getMessage() or "").splitlines()
    if kind == "FileNotFoundException":
        return "no such file or directory"
    if kind == "UnsupportedFileSystemException":
        return f"no Hadoop file system for this scheme here ({text[0][:120] if text else kind}): add its " \
               f"connector's jars to Spark (docs/scale.md)"
    return f"cannot read: {kind}: {text[0][:160] if text else ''}".rstrip(": ")


def mirror(spark, urls: list[str], base: Path) -> Mirror:
    """List each URL through Spark and mirror it under `base` (see the module's docstring)."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    jvm, conf = _hadoop(spark)
    out = Mirror(base)
    tag = uuid.uuid4().hex[:8]  # the mirror's folder names: no local root's display starts with them
    for i, url in enumerate(urls):
        try:
            path = jvm.org.apache.hadoop.fs.Path(url)
            fs = path.getFileSystem(conf)
            status = fs.getFileStatus(path)
            key = status.getPath().toString()
            listed = _listed_under(spark, fs, key) if status.isDirectory() else []
        except (Py4JJavaError, PySparkException) as e:
            out.errors.append(FileResult(url, "error", messages=[f"{url}: {_java_why(e)}"]))
            continue
        if not status.isDirectory():
            name = key.rsplit("/", 1)[-1]
            if name.startswith(("_", ".")):
                out.errors.append(FileResult(url, "error", messages=[
                    f"{canonical(key)}: not read: Hadoop's input formats hide names starting with '_' or '.'"]))
                continue
            listed = [Listed(key, canonical(key), status.getLen(), status.getModificationTime())]
            root = base / f"url-{i}-{tag}" / Path(*_components(canonical(key)))
            out._absolute.append((str(root), canonical(key)))
        else:
            root = base / f"url-{i}-{tag}"
            root.mkdir(parents=True)  # (an empty folder is walked as one: no evidence in it)
            out._absolute.append((str(root), canonical(key).rstrip("/")))
            out._relative.append((f"{root.name}/", canonical(key).rstrip("/") + "/"))
        out.roots.append(root)
        under = key.rstrip("/") + "/"  # (a bucket's root is written with its slash)
        for f in listed:
            rel = () if f.key == key else tuple(f.key.removeprefix(under).split("/"))
            if (rel and not f.key.startswith(under)) or not all(_plain(p) for p in rel):
                out.errors.append(FileResult(f.url, "error", messages=[f"{f.url}: a name clusterlab cannot read"]))
                continue
            local = root.joinpath(*rel)
            try:
                _place(fs, jvm, f, local)
            except (OSError, Py4JJavaError) as e:
                why = e.strerror if isinstance(e, OSError) else _java_why(e)
                out.errors.append(FileResult(f.url, "error", messages=[f"{f.url}: cannot read: {why}"]))
                continue
            out.files[local] = f
    return out


def _components(url: str) -> list[str]:
    """The authority and path components of a URL, as the parts a local path of the file would have."""
    rest = url.split("://", 1)[1]
    return [p for p in rest.split("/") if _plain(p)]


def _plain(part: str) -> bool:
    return part not in ("", ".", "..") and "\0" not in part and len(part.encode()) <= 255


def _listed_under(spark, fs, key: str) -> list[Listed]:
    """Every file under a directory (not its hidden ones): Spark lists them, in parallel where there are many."""
    # NOTE: the binaryFile source reads no bytes when its content column is not selected; recursiveFileLookup
    # keeps it from taking `run=x` folders for partitions
    frame = (spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(input_path(key))
             .selectExpr("path", "length", "unix_millis(modificationTime) AS mtime_ms"))
    out = [Listed(r["path"], canonical(r["path"]), int(r["length"]), int(r["mtime_ms"])) for r in frame.collect()]
    # NOTE: a scan leaves empty files out; its file index (percent-encoded URIs) has them, one lookup each
    rows = {f.url for f in out}
    jvm = spark.sparkContext._jvm
    for uri in frame.inputFiles():
        if urllib.parse.unquote(uri) not in rows:
            status = fs.getFileStatus(jvm.org.apache.hadoop.fs.Path(jvm.java.net.URI(uri)))
            path = status.getPath().toString()
            out.append(Listed(path, canonical(path), status.getLen(), status.getModificationTime()))
    return sorted(out, key=lambda f: f.key)


def _place(fs, jvm, f: Listed, local: Path) -> None:
    """The mirror's stand-in for `f`: its content if the walk reads it, else empty; its time, as listed."""
    local.parent.mkdir(parents=True, exist_ok=True)
    if local.name in READ_BY_WALK:
        dest = jvm.org.apache.hadoop.fs.Path(jvm.java.io.File(str(local)).toURI())
        fs.copyToLocalFile(False, jvm.org.apache.hadoop.fs.Path(f.key), dest, True)
    else:
        local.touch()
    os.utime(local, ns=(f.mtime_ms * 1_000_000, f.mtime_ms * 1_000_000))


def copy_file(spark, url: str, dest: Path) -> Path:
    """A single small file (an --inventory given as a URL) copied to `dest`; OSError when it cannot be."""
    from py4j.protocol import Py4JJavaError

    jvm, conf = _hadoop(spark)
    try:
        src = jvm.org.apache.hadoop.fs.Path(url)
        dest.parent.mkdir(parents=True, exist_ok=True)
        src.getFileSystem(conf).copyToLocalFile(False, src, jvm.org.apache.hadoop.fs.Path(
            jvm.java.io.File(str(dest)).toURI()), True)
    except Py4JJavaError as e:
        raise OSError(f"{url}: {_java_why(e)}") from None
    return dest


# --- planning (driver) ---

@dataclass
class Draft:
    """A URL file not known unchanged from its listing: what an executor needs to plan it after hashing it."""

    order: int  # its place among the call's results
    listed: Listed
    task: FileTask  # display: the URL; path: the mirror's stand-in (an executor puts its local copy there)
    ctx: Context
    file_id: int  # a fresh id: used when it is new, or replaces what the manifest holds
    prev: tuple | None = None  # the manifest's latest record at its URL (the columns of ingest.STORED_FILES)
    grown: tuple[int, int, int | None, pl.DataFrame | None] | None = None  # skip, first, reopen_from, clock


@dataclass
class Known:
    """The content hashes the manifest holds by path and by (run, attempt, host): what makes a file a copy."""

    by_path: dict[str, set[str]] = field(default_factory=dict)
    by_key: dict[tuple, set[str]] = field(default_factory=dict)

    def holds(self, digest: str, url: str, ctx: Context) -> bool:
        return digest in self.by_path.get(url, ()) or digest in self.by_key.get((ctx.run, ctx.attempt, ctx.host), ())


def read_listing(lake: Path) -> dict[str, tuple[int, int, str]]:
    """url -> (size, mtime in ms, content hash) when the lake last hashed it."""
    path = lake / LISTING
    if not path.is_file():
        return {}
    t = pq.read_table(path).to_pydict()
    return {u: (s, m, h) for u, s, m, h in zip(t["url"], t["size"], t["mtime_ms"], t["content_hash"], strict=True)}


def write_listing(lake: Path, before: dict[str, tuple[int, int, str]], redone: Iterable[str],
                  hashed: Iterable[tuple[str, int, int, str]]) -> None:
    """The listing, less the entries of the files read again (`redone`), plus what they hashed to now."""
    now = dict(before)
    for url in redone:
        now.pop(url, None)
    for url, size, mtime, digest in hashed:
        now[url] = (size, mtime, digest)
    urls = sorted(now)
    table = pa.table({"url": pa.array(urls, pa.string()), "size": pa.array([now[u][0] for u in urls], pa.int64()),
                      "mtime_ms": pa.array([now[u][1] for u in urls], pa.int64()),
                      "content_hash": pa.array([now[u][2] for u in urls], pa.string())})
    tmp = lake / f".{LISTING}.{uuid.uuid4().hex}"
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, lake / LISTING)


def plan(con: duckdb.DuckDBPyConnection, tasks: list[tuple[FileTask, Context, Listed]],
         listing: dict[str, tuple[int, int, str]], first: int) -> tuple[dict[int, FileResult], list[Draft], Known]:
    """For each URL file: unchanged by its listing (a result), or a draft for an executor; ordered from `first`."""
    if not tasks:
        return {}, [], Known()
    latest: dict[str, tuple] = {}
    urls = {listed.url for _, _, listed in tasks}
    keys = {(ctx.run, ctx.attempt, ctx.host) for _, ctx, _ in tasks}
    known = Known()
    for row in con.execute(STORED_FILES).fetchall():
        file_id, path, digest, *_, run, attempt, host = row
        if path in urls:
            known.by_path.setdefault(path, set()).add(digest)
            if path not in latest or latest[path][0] < file_id:
                latest[path] = row
        if (run, attempt, host) in keys:
            known.by_key.setdefault((run, attempt, host), set()).add(digest)
    results: dict[int, FileResult] = {}
    drafts: list[Draft] = []
    for i, (task, ctx, listed) in enumerate(tasks, start=first):
        seen = listing.get(listed.url)
        # NOTE: size and time as when it was hashed, and that hash still one the manifest counts as read
        if seen is not None and seen[:2] == (listed.size, listed.mtime_ms) and known.holds(seen[2], listed.url, ctx):
            results[i] = FileResult(task.display, "unchanged")
            continue
        if listed.size > READ_LIMIT:
            results[i] = FileResult(task.display, "error", messages=[
                f"{task.display}: cannot read: {listed.size} bytes, more than Spark's binaryFiles hands over (2 GiB); "
                f"read it from a mounted path (docs/scale.md)"])
            continue
        prev = latest.get(listed.url)
        drafts.append(Draft(i, listed, task, ctx, -1, prev, _grown(con, prev) if prev else None))
    if drafts:
        ids = [r[0] for r in con.execute("SELECT nextval('file_ids') FROM range(?)", [len(drafts)]).fetchall()]
        for d, file_id in zip(drafts, sorted(ids), strict=True):
            d.file_id = file_id
    return results, drafts, known


def _grown(con: duckdb.DuckDBPyConnection, prev: tuple) -> tuple[int, int, int | None, pl.DataFrame | None]:
    """Where a read of what the file gained starts (as `ingest.plan_files` sets it), should it have grown."""
    # NOTE: an open last line may have been completed since: it is read again from its start
    skip, first, reopen = (prev[7], prev[5], prev[5]) if prev[6] else (prev[4], prev[5] + 1, None)
    return skip, first, reopen, stored_clock(con, prev[0], first)


def touched(drafts: list[Draft]) -> set[str | None]:
    """The runs whose partitions reading the drafts may change (their own, and the one their last read had)."""
    runs: set[str | None] = {d.ctx.run for d in drafts if d.ctx.run is not None}
    return runs | {d.prev[8] for d in drafts if d.prev is not None}


# --- reading (executors) ---

class Spilled:
    """One partition's files on an executor: bytes to local files, each hashed and planned as plan_files plans."""

    def __init__(self, drafts: dict[str, Draft], known: Known, spill: Path, staging: Path) -> None:
        self.drafts, self.known, self.spill, self.staging = drafts, known, spill, staging
        self.unchanged: list[tuple[int, FileResult]] = []
        self.failed: list[tuple[int, FileResult]] = []
        self.hashed: list[tuple[str, int, int, str]] = []  # (url, size, mtime, hash) of files read as listed
        self.order: dict[str, int] = {}  # local file -> its draft's order

    def plans(self, pairs: Iterable[tuple[str, bytes]]) -> Iterator[FilePlan]:
        for key, data in pairs:
            draft = self.drafts.get(key)
            if draft is None:
                continue
            # NOTE: named by a hash of the URL only: no part of a remote name becomes a local path
            local = self.spill / xxhash.xxh3_64_hexdigest(key.encode())
            try:
                local.write_bytes(data)
            except OSError as e:
                url = draft.task.display
                self.failed.append((draft.order, FileResult(url, "error", messages=[
                    f"{url}: cannot read: {e.strerror or e}"])))
                continue
            del data
            got = self._decide(draft, local)
            if got is not None:
                self.order[str(local)] = draft.order
                yield got

    def _decide(self, draft: Draft, local: Path) -> FilePlan | None:
        size, prev, url = local.stat().st_size, draft.prev, draft.task.display
        whole, prefix = content_hash(local, prev[3] if prev is not None and prev[3] <= size else None)
        if size == draft.listed.size:  # what was read is what was listed: its time stands for this hash
            self.hashed.append((url, size, draft.listed.mtime_ms, whole))
        if self.known.holds(whole, url, draft.ctx):
            self.unchanged.append((draft.order, FileResult(url, "unchanged")))
            local.unlink()
            return None
        # read from the local copy, recorded under the URL
        out = FilePlan(dataclasses.replace(draft.task, path=local), draft.ctx, file_id=draft.file_id,
                       whole_hash=whole, size=size, spill_dir=self.staging, where=url)
        if prev is not None and prefix is not None and prefix == prev[2] and draft.grown is not None:
            out.status, out.file_id = "appended", prev[0]
            out.skip, out.first, out.reopen_from, out.clock = draft.grown
        elif prev is not None:  # a new version: what was stored stays (as `ingest.driver.plan_files` decides)
            out.status, out.earlier = "changed", (prev[0],)
        return out

    def side(self) -> dict:
        """What goes back to the driver beside the parsed files."""
        return {"unchanged": self.unchanged + self.failed, "hashed": self.hashed, "order": self.order}


def read(spark, drafts: list[Draft], slices: int):
    """The drafts' bytes as an RDD of (Hadoop path, bytes), in about `slices` partitions."""
    paths = ",".join(input_path(d.listed.key) for d in drafts)
    _hadoop(spark)[1].setIfUnset("mapreduce.input.fileinputformat.list-status.num-threads", LIST_THREADS)
    return spark.sparkContext.binaryFiles(paths, minPartitions=slices)


def vanished(spark, drafts: list[Draft]) -> list[Draft]:
    """The drafts whose file is gone (or changed kind) since the listing."""
    jvm, conf = _hadoop(spark)
    gone = []
    for d in drafts:
        path = jvm.org.apache.hadoop.fs.Path(d.listed.key)
        if not path.getFileSystem(conf).isFile(path):
            gone.append(d)
    return gone

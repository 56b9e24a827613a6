"""The evidence-bundle layout: which files to read and what their paths say (run, attempt, host)."""

from __future__ import annotations

import datetime as dt
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from clusterlab.ingest import metadata

_ATTEMPT_DIR = re.compile(r"attempt[-_]?(\d+)$")
SIDECARS = {"inventory.toml", "run.toml", "boot_time", "truth.json"}
# Files no collector should read: our own outputs, archives, images, databases.
_IGNORED_SUFFIXES = (".duckdb", ".duckdb.wal", ".png", ".jpg", ".html", ".zip", ".tar", ".pyc", ".ipynb")


@dataclass(frozen=True)
class FileTask:
    path: Path
    display: str  # path relative to what the user named, for messages
    explicit: bool  # named on the command line (vs found while walking a directory)
    run: str | None
    attempt: int | None
    host: str | None
    # what the walk's one stat of the file said (None: not walked; asked again when needed)
    size: int | None = None
    mtime: float | None = None
    link: bool | None = None  # a symbolic link (to a file)


@dataclass
class Walk:
    files: list[FileTask]
    inventories: list[Path]
    runs: dict[str, Path]  # run name -> its run.toml
    boot_times: dict[Path, Path]  # directory -> its boot_time file
    unreadable: list[tuple[str, str]]  # (display path, reason)
    found: Callable[[int | None], None] | None = None  # told each file's size as it is found

    def add(self, task: FileTask) -> None:
        self.files.append(task)
        if self.found is not None:
            self.found(task.size)


# logrotate's names for an older generation of a log: `kern.log.1`, `kern.log.2.gz`, `syslog-20261205(.gz)`
_ROTATED = re.compile(r"^(?P<base>.+?)(?:\.\d{1,3}|[-.]\d{8}(?:\d{2})?)(?:\.gz)?$")


def rotation_base(where: str) -> str | None:
    """The path a rotated log was rotated from (`/x/kern.log` for `/x/kern.log.2.gz`); None for other names."""
    folder, _, name = where.rpartition("/")
    m = _ROTATED.match(name)
    return f"{folder}/{m['base']}" if m else None


def storable(name: str) -> str:
    """A path or name as text the store can hold: bytes that are not UTF-8 (which the file system gives back as
    lone surrogates) spelled as `\\xff`, the same way every time, so that ingesting again finds the file stored."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def path_context(parts: tuple[str, ...], known_hosts: frozenset[str]) -> tuple[str | None, int | None, str | None]:
    """(run, attempt, host) that the components of a path name."""
    run = attempt = host = None
    for i, part in enumerate(parts):
        if part == "runs" and i + 1 < len(parts) - 1:
            run = parts[i + 1]
        elif part == "nodes" and i + 1 < len(parts) - 1:
            host = parts[i + 1]
        elif (m := _ATTEMPT_DIR.match(part)) and i < len(parts) - 1:
            attempt = int(m.group(1))
        elif part in known_hosts:
            host = part
    if host is None:
        stem = parts[-1].split(".")[0] if parts else ""
        if stem in known_hosts:
            host = stem
    return run, attempt, host


def real_path(p: Path, link: bool | None = None) -> str:
    """`p` resolved (the name a file is stored under): its folder's resolution is looked up once per folder.

    `link`: whether `p` is a symbolic link, where the walk knows it."""
    # NOTE: Path.resolve() walks every component with a system call each: a dozen per file of a deep layout
    if link or (link is None and p.is_symlink()):
        return storable(str(p.resolve()))
    # (joined to the working folder, not normalised: `link/..` must resolve the link first, as resolve() does)
    folder, name = os.path.split(os.fspath(p))
    return storable(os.path.join(_real_dir(folder if os.path.isabs(folder) else os.path.join(os.getcwd(), folder)),
                                 name))


@lru_cache(maxsize=4096)
def _real_dir(folder: str) -> str:
    return os.path.realpath(folder)


def walk(paths: list[Path], known_hosts: frozenset[str], found: Callable[[int | None], None] | None = None) -> Walk:
    """Expand files and directories into ingest tasks, sidecar files first-class.

    `found`: told the size of each file to ingest as it is found (None where not known yet)."""
    w = Walk([], [], {}, {}, [], found)
    for root in paths:
        if not root.exists():
            w.unreadable.append((storable(str(root)), "no such file or directory"))
            continue
        if root.is_file():
            _add(w, root, root.name, tuple(Path(os.path.abspath(root)).parts), True, known_hosts)
            continue
        # NOTE: a folder inside a bundle (`bundle/runs`, `bundle/nodes/east-003`) keeps what the path above it says
        above = root_of(root)
        parts = tuple(map(storable, Path(os.path.abspath(root)).relative_to(above).parts)) if above else ()
        _walk_dir(w, os.fspath(root), str(root.name), parts, known_hosts)
    return w


BUNDLE_DEPTH = 4  # folders above a given one searched for its bundle: runs/<run>/attempt-<k>/<sub>


def root_of(folder: Path) -> Path | None:
    """The bundle a folder lies inside (the nearest folder above it with an `inventory.toml`, else the one
    holding the `runs/` or `nodes/` it is in); None where it is a bundle's root itself, or in none."""
    here = Path(os.path.abspath(folder))
    if (here / "inventory.toml").is_file():
        return None
    chain = [here, *here.parents][:BUNDLE_DEPTH + 1]
    for above in chain[1:]:
        if (above / "inventory.toml").is_file():
            return above
    for below, above in zip(chain, chain[1:], strict=False):
        if below.name in ("runs", "nodes"):
            return above
    return None


def _walk_dir(w: Walk, folder: str, display: str, parts: tuple[str, ...], known: frozenset[str]) -> None:
    """One folder's files (by name), then its subfolders' (by name), as `os.walk` gives them; hidden ones left out.

    Folders are listed with scandir, so a file costs one stat (its entry's): a fleet's walk is tens of thousands
    of files."""
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as e:
        w.unreadable.append((storable(str(e.filename)), f"cannot read directory: {e.strerror}"))
        return
    subdirs = []
    for e in entries:
        if e.name.startswith("."):
            continue
        try:
            is_dir = e.is_dir()
        except OSError:
            is_dir = False
        if is_dir:
            subdirs.append(e)
        else:
            _add(w, Path(e.path), os.path.join(display, e.name) if display else e.name, (*parts, e.name), False,
                 known, e.is_symlink(), e.stat)
    for e in subdirs:
        try:
            if e.is_symlink():  # as os.walk: a linked folder is not followed
                continue
        except OSError:
            continue
        _walk_dir(w, e.path, os.path.join(display, e.name) if display else e.name, (*parts, e.name), known)


def _add(w: Walk, p: Path, display: str, parts: tuple[str, ...], explicit: bool, known: frozenset[str],
         link: bool | None = None, stat_of: Callable[[], os.stat_result] | None = None) -> None:
    """One file: a sidecar, one to leave alone, an unreadable one, or evidence to ingest.

    `parts`: the components of its path that name its run, attempt and host; `link`, `stat_of`: whether it is a
    symbolic link and its stat (following the link), where a folder's listing has them."""
    name, display, parts = p.name, storable(display), tuple(map(storable, parts))
    if name in SIDECARS:
        run, _, _ = path_context(parts, known)
        if name == "inventory.toml":
            w.inventories.append(p)
        elif name == "run.toml":
            w.runs[run or p.parent.name] = p
        elif name == "boot_time":
            _add_boot_time(w, p, display)
        return
    if name.endswith(_IGNORED_SUFFIXES):
        return
    run, attempt, host = path_context(parts, known)
    link = p.is_symlink() if link is None else link
    try:
        st = stat_of() if stat_of is not None else p.stat()
    except OSError:
        w.unreadable.append((display, "broken symbolic link" if link else "not a regular file"))
        return
    if not stat.S_ISREG(st.st_mode):
        w.unreadable.append((display, "not a regular file"))
        return
    if not os.access(p, os.R_OK):
        w.unreadable.append((display, "permission denied"))
        return
    w.add(FileTask(p, display, explicit, run, attempt, host, st.st_size, st.st_mtime, link))


def _add_boot_time(w: Walk, p: Path, display: str) -> None:
    """A boot_time file, or one line saying why it cannot be used (its logs then go without it)."""
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        w.unreadable.append((display, f"cannot read: {e.strerror or e}"))
        return
    if why := metadata.boot_time_problem(text):
        w.unreadable.append((display, why))
        return
    w.boot_times[p.parent] = p


def read_boot_time(path: Path) -> dt.datetime | None:
    """A boot time file: epoch seconds (`btime` of /proc/stat) or ISO 8601 (`uptime -s` is local); None if unusable."""
    try:
        return metadata.boot_time(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError, OverflowError):
        return None

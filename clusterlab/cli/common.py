"""What every command group of the `clusterlab` command shares: opening the database, failing in one line,
printing a frame as a table or JSON, and ingesting with a progress bar."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import NoReturn

import click
import duckdb
import polars as pl

from clusterlab.ingest.reader import InputError
from clusterlab.lab import Lab
from clusterlab.scale.lake import LakeError
from clusterlab.store import DatabaseLocked, db_path

EXIT_BAD_INPUT = 2
CREATES_DB = frozenset({"ingest", "watch"})  # the commands that may create a missing database (demo makes its own)
DB_MAGIC = b"DUCK"  # bytes 8-11 of every DuckDB file
TEXT_FLOOR = 20  # characters of log text a table keeps before it cuts or drops other columns
# identifiers to copy or grep for: a table never cuts them
KEEP_WHOLE = frozenset({"incident_id", "id", "run", "host", "failure_mode"})
PATHS = frozenset({"file", "path"})  # cut from the left: the file name is what tells two rows apart
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # kept off the terminal


def _jsonable(v):
    if isinstance(v, dt.datetime | dt.date):
        return v.isoformat()
    return v


def records(frame: pl.DataFrame) -> list[dict]:
    """Frame rows as JSON-ready dicts (times in ISO 8601)."""
    return [{k: _jsonable(v) for k, v in row.items()} for row in frame.to_dicts()]


def emit_json(doc) -> None:
    click.echo(json.dumps(doc, default=_jsonable, indent=2))


SKIPPED_SHOWN = 20  # files a directory walk skipped, named one a line before the rest are counted


def fail(message: str) -> NoReturn:
    """One line on stderr, exit status 2."""
    click.echo(f"error: {message}", err=True)
    raise click.exceptions.Exit(EXIT_BAD_INPUT)


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float):
        return f"{v:.4f}".rstrip("0").rstrip(".") if abs(v) < 1e12 else f"{v:.4g}"
    if isinstance(v, dt.datetime):
        return v.isoformat(sep=" ", timespec="seconds")  # --json keeps the microseconds
    if isinstance(v, list):
        return ", ".join(map(_cell, v))
    return _CONTROL.sub("?", str(v))


def _fit(widths: list[int], floors: list[int], width: int, first: int | None) -> list[int]:
    """Column widths that fit `width`: column `first` is cut first, then the widest cuttable one."""
    widths = list(widths)
    excess = sum(widths) + 2 * (len(widths) - 1) - width
    while excess > 0:
        if first is not None and widths[first] > floors[first]:
            i = first
        else:
            i = max(range(len(widths)), key=lambda k: widths[k] - floors[k])
        if widths[i] <= floors[i]:
            break  # nothing left to cut: the terminal wraps, but no identifier is cut
        widths[i] -= 1
        excess -= 1
    return widths


def _name_room(paths: list[str]) -> int:
    """Width that shows every path's file name whole, after the `…/` of a path cut from the left."""
    return max((len(p.rsplit("/", 1)[-1]) + 2 for p in paths), default=0)


def format_table(frame: pl.DataFrame, width: int) -> tuple[list[str], list[str]]:
    """A frame as plain text lines at most `width` wide, and the columns left out to get there.

    Long text is cut (…), identifiers never; when that is not enough, the rightmost columns go.
    """
    cols = frame.columns
    cells = [[_cell(v) for v in frame[c].to_list()] for c in cols]
    right = [frame[c].dtype.is_numeric() for c in cols]
    natural = [max([len(c), *map(len, col)]) for c, col in zip(cols, cells, strict=True)]
    cuttable = [frame[c].dtype in (pl.String, pl.List(pl.String)) and c not in KEEP_WHOLE for c in cols]
    floors = [min(n, TEXT_FLOOR if c == "text" else max(len(c), 10, _name_room(col) if c in PATHS else 0))
              if cut else n for c, n, cut, col in zip(cols, natural, cuttable, cells, strict=True)]
    shown = list(range(len(cols)))
    # NOTE: the first column (the row's identifier) and the log text stay; the others go from the right
    droppable = [i for i in shown[1:] if cols[i] != "text"]
    while droppable and sum(floors[i] for i in shown) + 2 * (len(shown) - 1) > width:
        shown.remove(droppable.pop())
    text = shown.index(cols.index("text")) if "text" in cols else None
    widths = _fit([min(natural[i], max(floors[i], width)) for i in shown], [floors[i] for i in shown], width, text)

    def line(values: list[str]) -> str:
        out = []
        for v, w, i in zip(values, widths, shown, strict=True):
            if len(v) > w:
                v = "…" + v[len(v) - w + 1:] if cols[i] in PATHS else v[: w - 1] + "…"
            out.append(v.rjust(w) if right[i] else v.ljust(w))
        return "  ".join(out).rstrip()

    rows = [line([cells[i][r] for i in shown]) for r in range(frame.height)]
    return [line([cols[i] for i in shown]), line(["-" * w for w in widths]), *rows], [
        c for i, c in enumerate(cols) if i not in shown]


def print_frame(frame: pl.DataFrame, limit: int | None = None) -> None:
    """A frame as a table that fits the terminal (its first `limit` rows)."""
    if frame.is_empty():
        click.echo("(no rows)")
        return
    width = shutil.get_terminal_size((160, 24)).columns
    lines, hidden = format_table(frame.head(limit) if limit else frame, width)
    for text in lines:
        click.echo(text)
    if hidden:
        click.echo(f"not shown at {width} columns: {', '.join(hidden)} (a wider terminal, or --json)"[:width])


def db_problem(path: str, create: bool) -> str | None:
    """Why `path` cannot be this command's database (None: it can)."""
    if path == ":memory:":
        return None
    p = Path(path)
    if not p.exists():
        return None if create else f"{path}: no such database (check --db; `clusterlab ingest` creates one)"
    if p.is_dir():
        return f"{path}: is a directory, not a DuckDB database"
    try:
        with open(p, "rb") as f:
            head = f.read(12)
    except OSError as e:
        return f"{path}: cannot read: {e.strerror or e}"
    if head[8:12] != DB_MAGIC:
        return f"{path}: not a DuckDB database" + (" (an empty file)" if not head else "")
    return None


def open_error(path: str, e: Exception) -> str:
    """One line for a database that would not open (a lock held by another process, most often)."""
    text = (str(e).splitlines() or [type(e).__name__])[0]
    if isinstance(e, DatabaseLocked):
        return text
    if isinstance(e, duckdb.IOException) and "lock" in text.lower():
        pid = re.search(r"PID (\d+)", str(e))
        return f"{path}: another clusterlab is writing to this database" + (f" (pid {pid[1]})" if pid else "")
    return f"{path}: cannot open database: {text}"


def open_lab(ctx: click.Context, read_only: bool = False) -> Lab:
    path = ctx.obj["db"]
    try:
        lab = Lab(path, read_only=read_only and path != ":memory:", lake=ctx.obj.get("lake"))
    except LakeError as e:
        fail(str(e))
    except (duckdb.Error, RuntimeError, OSError) as e:  # locked, foreign or newer than us: one line
        fail(open_error(path, e))
    for note in lab.notes:
        click.echo(f"note: {note}", err=True)
    return lab


def db_option(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """`--db` after the command: it wins over the one before; either way the database is checked here."""
    obj = ctx.ensure_object(dict)
    if value is not None:
        obj.update(db=value, db_given=True)
    obj.setdefault("db", db_path(None))
    if not ctx.resilient_parsing and (problem := db_problem(obj["db"], ctx.command.name in CREATES_DB)):
        fail(problem)


def record_db(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """`--db` between a group and its command (`change --db X list`): noted; the command checks it."""
    if value is not None:
        ctx.ensure_object(dict).update(db=value, db_given=True)


def lake_option(ctx: click.Context, param: click.Parameter, value: Path | None) -> None:
    """`--lake` after the command (or a group): the same as before it."""
    obj = ctx.ensure_object(dict)
    if value is not None:
        obj["lake"] = value
        if not obj.get("db_given"):
            obj["db"] = ":memory:"  # a lake alone: what is written beside it lasts as long as the command


def store_options(check_db: bool = True) -> list[click.Option]:
    """`--db` and `--lake` for a command after its name (`check_db`: the command opens the database)."""
    # NOTE: --lake is eager so that it is seen before --db's check, whichever comes first on the line
    return [click.Option(["--db"], callback=db_option if check_db else record_db, expose_value=False,
                         metavar="PATH", help="DuckDB file (the same as --db before the command)."),
            click.Option(["--lake"], type=click.Path(path_type=Path), callback=lake_option, expose_value=False,
                         is_eager=True, help="Parquet lake to read (the same as --lake before the command).")]


def json_flag(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    """A command's `--json`, also on when given before the command (`clusterlab --json runs`)."""
    return bool(value or (ctx.obj or {}).get("json"))


json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document and nothing else.")


def progress_bar(enabled: bool):
    if not enabled:
        return None, None
    import time

    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    bar = Progress(TextColumn("ingest"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                   TextColumn("{task.fields[files]} files {task.fields[rate]:.0f}/s"), TimeRemainingColumn(),
                   TextColumn("{task.description}"), transient=True,
                   console=__import__("rich.console").console.Console(stderr=True))
    task = bar.add_task("", total=None, files=0, rate=0.0)
    start, files = time.monotonic(), 0

    def update(done: int, total: int, name: str) -> None:
        nonlocal files
        files += bool(name)  # one call per file read, and a last one without a name
        rate = files / max(time.monotonic() - start, 1e-3)
        bar.update(task, completed=done, total=total, description=name[-50:], files=files, rate=rate)

    return bar, update


def _holds_a_file(folder: str) -> bool:
    """Whether any file lies under `folder` (the walk stops at the first)."""
    return any(files for _, _, files in os.walk(folder))


def nothing_to_ingest(paths) -> str | None:
    """Why `clusterlab ingest PATHS` has nothing to read (a path that is not there, folders without a file), or
    None; said before any database is opened, so that nothing is created."""
    missing = [str(p) for p in paths if not os.path.lexists(p)]
    if missing:
        return f"{', '.join(missing)}: no such file or directory; nothing ingested"
    if all(os.path.isdir(p) and not _holds_a_file(p) for p in paths):
        return f"{', '.join(map(str, paths))}: no evidence files found (no files); nothing ingested"
    return None


def run_ingest(lab: Lab, paths, inventory, run, host, year, as_json: bool, workers: int | None = None,
               epoch: dt.datetime | None = None) -> int:
    """Ingest, print the summary; the exit status (2 when any input was bad)."""
    bar, update = progress_bar(not as_json and sys.stderr.isatty())
    try:
        if bar:
            bar.start()
        summary = lab.ingest(*paths, inventory=inventory, run=run, host=host, year=year, progress=update,
                             workers=workers, epoch=epoch)
    except InputError as e:
        click.echo(f"error: {e}", err=True)
        return EXIT_BAD_INPUT
    finally:
        if bar:
            bar.stop()
    if as_json:
        emit_json(summary.to_dict())
    else:
        c = summary.counts()
        click.echo(f"files: {len(summary.files)}" + (" (" + ", ".join(f"{n} {s}" for s, n in sorted(c.items()))
                                                      + ")" if c else ""))
        click.echo("rows: " + ", ".join(f"{t} {n}" for t, n in summary.rows.items() if n))
        unparsed = sum(f.unparsed for f in summary.files)
        if unparsed:
            click.echo(f"lines matched but not understood: {unparsed}")
        for why in summary.skipped[:SKIPPED_SHOWN]:
            click.echo(f"skipped {why}")
        if len(summary.skipped) > SKIPPED_SHOWN:
            click.echo(f"skipped {len(summary.skipped) - SKIPPED_SHOWN} more files (--json lists them all)")
    for m in summary.warnings:
        click.echo(f"warning: {m}", err=True)
    for m in summary.problems:
        click.echo(f"error: {m}", err=True)
    return EXIT_BAD_INPUT if summary.problems else 0

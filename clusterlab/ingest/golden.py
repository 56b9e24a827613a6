"""Golden samples: `data_samples/<source>/<case>.<ext>` beside `<case>.expected.jsonl`.

`python -m clusterlab.ingest.golden FILE...` prints the rows a sample gives (to review by hand and keep as
its expected file); the tests compare the two. An optional `<case>.context.toml` sets the
context the engine would have had (host, run, attempt, year, tz, boot_time, epoch).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import tomllib
from pathlib import Path

from clusterlab import store
from clusterlab.collectors import all_collectors
from clusterlab.collectors._base import Context
from clusterlab.ingest.bundle import FileTask
from clusterlab.ingest.driver import ingest_file
from clusterlab.tables import TABLE_COLUMNS

SAMPLE_SUFFIXES = (".log", ".txt", ".jsonl", ".gz", ".out", ".err", ".psv", ".json", ".csv")


def is_sample(p: Path) -> bool:
    name = p.name
    return (name.endswith(SAMPLE_SUFFIXES) and not name.endswith(".expected.jsonl")
            and expected_path(p).exists())


def _case(p: Path) -> str:
    name = p.name
    for suffix in (".gz", *SAMPLE_SUFFIXES):
        name = name.removesuffix(suffix)
    return name


def expected_path(p: Path) -> Path:
    return p.with_name(_case(p) + ".expected.jsonl")


def context_for(p: Path) -> Context:
    ctx_file = p.with_name(_case(p) + ".context.toml")
    doc = tomllib.loads(ctx_file.read_text()) if ctx_file.exists() else {}
    boot = doc.get("boot_time")
    if isinstance(boot, dt.datetime):
        boot = boot.astimezone(dt.UTC).replace(tzinfo=None) if boot.tzinfo else boot
    epoch = doc.get("epoch")
    if isinstance(epoch, dt.date) and not isinstance(epoch, dt.datetime):
        epoch = dt.datetime(epoch.year, epoch.month, epoch.day)
    return Context(path=p.name, host=doc.get("host"), run=doc.get("run"), attempt=doc.get("attempt"),
                   year=doc.get("year", 2026), tz=doc.get("tz", "UTC"), boot_time=boot,
                   known_hosts=frozenset(doc.get("known_hosts", [])), epoch=epoch)


def _jsonable(v):
    if isinstance(v, dt.datetime):
        return v.isoformat(timespec="microseconds")
    if isinstance(v, float):
        return round(v, 6)
    return v


def golden_rows(p: Path) -> tuple[list[dict], dict]:
    """Rows (non-null columns, `table` first) that ingesting sample `p` gives, and the file result."""
    con = store.connect(":memory:")
    ctx = context_for(p)
    task = FileTask(p, p.name, True, ctx.run, ctx.attempt, ctx.host)
    res = ingest_file(con, task, ctx, all_collectors())
    rows: list[dict] = []
    for table in TABLE_COLUMNS:
        cur = con.execute(f"SELECT * EXCLUDE (file_id) FROM {table} ORDER BY line, source")
        names = [d[0] for d in cur.description]
        for rec in cur.fetchall():
            row = {"table": table}
            row.update({k: _jsonable(v) for k, v in zip(names, rec, strict=True) if v is not None})
            rows.append(row)
    rows.sort(key=lambda r: (r["line"], r["table"], json.dumps(r, sort_keys=True)))
    return rows, {"status": res.status, "unparsed": res.unparsed, "messages": res.messages}


def main(argv: list[str]) -> int:
    for arg in argv:
        rows, result = golden_rows(Path(arg))
        for r in rows:
            print(json.dumps(r, sort_keys=False))
        print(json.dumps(result), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

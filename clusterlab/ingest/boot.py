"""Dating raw dmesg lines after the ingest, once the boot they belong to has a time.

A raw `dmesg` stamps its lines with seconds since boot. Without the boot time the kernel collector keeps them
undated (ts empty, `dated` = undated) rather than refusing the file. After every ingest this pass looks for the
boot time of such lines, and dates them in place (ts = boot + seconds, as a boot_time file would have):

- a `boot_time` file now beside the log (the log itself unchanged, so not read again);
- a copy of `/proc/stat`, `who -b` or `uptime -s` saved in the same folder (`collectors.boot_time`);
- the raw lines of the same file dated before (lines appended since, the clock still rising);
- the same kernel message, stamped with a wall time, in another log of the store (the journal or syslog of
  the same boot, `dmesg -T`): boot = that time - the line's seconds since boot, the median over all such pairs.

Lines of a file are split into boots where their seconds since boot go back; each boot is dated on its own.
Undated lines of no boot found stay undated; running the pass again changes nothing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

import duckdb

# The raw dmesg stamp at the start of an event's text (after dmesg -x's `kern  :err   : `), and the message after it.
RAW = r"^(?:[a-z]+ *:[a-z]+ *: )?\[ *(\d+\.\d+)(?: <[ \d.]+>)?\] ?"
# A message shorter than this is too common to say two lines are the same event (`nfs: server x OK`).
MIN_MESSAGE = 20
# Estimates of one boot's time further than this from their median are pairs of different events, left out.
SPREAD_S = 5.0

_UNDATED = f"""
    SELECT e.file_id, e.line, e.host, e.kind, coalesce(e.xid, -1) AS xid, coalesce(e.pci_bus, '') AS pci_bus,
           CAST(regexp_extract(e.text, '{RAW}', 1) AS DOUBLE) AS up,
           regexp_replace(e.text, '{RAW}', '') AS msg
    FROM events e
    WHERE e.source = 'kernel' AND e.dated IS NOT NULL AND regexp_matches(e.text, '{RAW}')"""


def date_raw_kernel_lines(con: duckdb.DuckDBPyConnection, boot_times: Iterable[tuple[str, dt.datetime]] = ()) -> int:
    """Date the stored raw dmesg lines whose boot time is now known; returns how many were dated.

    `boot_times`: (stored path, boot time) of the files that have a boot_time file beside them now."""
    if not con.execute("SELECT count(*) FROM events WHERE source = 'kernel' AND dated IS NOT NULL").fetchone()[0]:
        return 0
    con.execute(f"CREATE OR REPLACE TEMP TABLE _raw AS {_UNDATED}")
    try:
        if not con.execute("SELECT count(*) FROM _raw").fetchone()[0]:
            return 0
        # NOTE: a boot is a run of lines whose seconds since boot never go back (two dmesg outputs in one file)
        con.execute("""CREATE OR REPLACE TEMP TABLE _raw AS
            SELECT *, sum(CASE WHEN up < prev THEN 1 ELSE 0 END) OVER (PARTITION BY file_id ORDER BY line) AS boot
            FROM (SELECT *, lag(up) OVER (PARTITION BY file_id ORDER BY line) AS prev FROM _raw)""")
        con.execute("CREATE OR REPLACE TEMP TABLE _boots (file_id BIGINT, boot BIGINT, boot_at TIMESTAMP, host TEXT)")
        files = [(p, b) for p, b in boot_times if b is not None]
        if files:
            con.execute("CREATE OR REPLACE TEMP TABLE _files (path VARCHAR, boot_at TIMESTAMP)")
            con.executemany("INSERT INTO _files VALUES (?, ?)", files)
            # NOTE: every boot of the file, as the collector does when the boot_time file is there at the first read
            con.execute("""INSERT INTO _boots
                SELECT DISTINCT r.file_id, r.boot, f.boot_at, NULL FROM _raw r
                JOIN ingested_files i USING (file_id) JOIN _files f ON f.path = i.path""")
            con.execute("DROP TABLE _files")
        _boots_from_saved_facts(con)
        _boots_from_dated_lines_before(con)
        _boots_from_stamped_twins(con)
        n = con.execute("""SELECT count(*) FROM _raw r JOIN _boots b USING (file_id, boot)""").fetchone()[0]
        if n:
            con.execute("""UPDATE events e SET
                    ts = b.boot_at + to_microseconds(CAST(round(r.up * 1e6) AS BIGINT)),
                    host = coalesce(e.host, b.host), ts_lo = NULL, ts_hi = NULL, dated = NULL
                FROM _raw r JOIN _boots b USING (file_id, boot)
                WHERE e.file_id = r.file_id AND e.line = r.line AND e.source = 'kernel'""")
        return n
    finally:
        con.execute("DROP TABLE IF EXISTS _raw")
        con.execute("DROP TABLE IF EXISTS _boots")


def _boots_from_saved_facts(con: duckdb.DuckDBPyConnection) -> None:
    """Boot times a file of the same folder states (/proc/stat, `who -b`, `uptime -s`: collectors.boot_time)."""
    # NOTE: the latest one where the folder holds several: the running boot when they were saved
    con.execute(r"""INSERT INTO _boots
        SELECT DISTINCT r.file_id, r.boot, b.boot_at, NULL FROM _raw r
        JOIN ingested_files i USING (file_id)
        JOIN (SELECT regexp_replace(fi.path, '[/\\][^/\\]*$', '') AS dir, max(f.ts) AS boot_at
              FROM facts f JOIN ingested_files fi USING (file_id)
              WHERE f.key = 'boot_time' AND f.ts IS NOT NULL GROUP BY dir) b
          ON regexp_replace(i.path, '[/\\][^/\\]*$', '') = b.dir
        WHERE NOT EXISTS (SELECT 1 FROM _boots x WHERE x.file_id = r.file_id AND x.boot = r.boot)""")


def _boots_from_dated_lines_before(con: duckdb.DuckDBPyConnection) -> None:
    """Lines appended to a log whose earlier raw lines were dated: the same boot while the seconds go on rising."""
    # NOTE: the boot of the file's last dated raw line, for the undated lines after it that continue its clock
    con.execute(f"""INSERT INTO _boots
        SELECT r.file_id, r.boot, any_value(d.boot_at), NULL FROM _raw r
        JOIN (SELECT file_id, arg_max(e.ts - to_microseconds(CAST(round(CAST(regexp_extract(e.text, '{RAW}', 1)
                                                                 AS DOUBLE) * 1e6) AS BIGINT)), e.line) AS boot_at,
                     max(e.line) AS last_line,
                     arg_max(CAST(regexp_extract(e.text, '{RAW}', 1) AS DOUBLE), e.line) AS last_up
              FROM events e
              WHERE e.source = 'kernel' AND e.dated IS NULL AND e.ts IS NOT NULL
                AND e.file_id IN (SELECT file_id FROM _raw) AND regexp_matches(e.text, '{RAW}')
              GROUP BY file_id) d USING (file_id)
        WHERE r.boot = 0 AND NOT EXISTS (SELECT 1 FROM _boots x WHERE x.file_id = r.file_id AND x.boot = r.boot)
        GROUP BY r.file_id, r.boot
        HAVING min(r.line) > any_value(d.last_line) AND min(r.up) >= any_value(d.last_up)""")


def _boots_from_stamped_twins(con: duckdb.DuckDBPyConnection) -> None:
    """Boot times from the same messages stamped with a wall time elsewhere (a journal, syslog, `dmesg -T`)."""
    # NOTE: the twin has the same kind, Xid and PCI address, and its text ends with the raw line's message (the
    # prefix before it differs by format); its host is the raw line's where both name one (an equality, so that a
    # fleet's files are joined host by host), any where either names none. Only boots not dated yet.
    pair = f"""SELECT r.file_id, r.boot, epoch_us(s.ts) - CAST(round(r.up * 1e6) AS BIGINT) AS est, s.host
        FROM _raw r JOIN events s ON s.source = 'kernel' AND s.dated IS NULL AND s.ts IS NOT NULL
             AND s.kind = r.kind AND coalesce(s.xid, -1) = r.xid AND coalesce(s.pci_bus, '') = r.pci_bus
             AND s.file_id <> r.file_id AND ends_with(s.text, r.msg) {{host}}
        WHERE length(r.msg) >= {MIN_MESSAGE}
          AND NOT EXISTS (SELECT 1 FROM _boots b WHERE b.file_id = r.file_id AND b.boot = r.boot)"""
    con.execute(f"""CREATE OR REPLACE TEMP TABLE _pairs AS {pair.format(host="AND s.host = r.host")}
                    UNION ALL {pair.format(host="AND (s.host IS NULL OR r.host IS NULL)")}""")
    # NOTE: a message printed twice pairs with both of its twins, one of them of another time: the boot is the
    # estimate most pairs agree with (within SPREAD_S), and none where two disjoint sets agree as often
    con.execute(f"""INSERT INTO _boots
        WITH nb AS (SELECT a.file_id, a.boot, a.est, count(*) AS k FROM _pairs a JOIN _pairs b USING (file_id, boot)
                    WHERE abs(a.est - b.est) <= {SPREAD_S} * 1e6 GROUP BY ALL),
             top AS (SELECT * FROM nb QUALIFY k = max(k) OVER (PARTITION BY file_id, boot))
        SELECT t.file_id, t.boot, TIMESTAMP '1970-01-01' + to_microseconds(CAST(median(t.est) AS BIGINT)),
               (SELECT CASE WHEN count(DISTINCT p.host) = 1 THEN any_value(p.host) END FROM _pairs p
                WHERE p.file_id = t.file_id AND p.boot = t.boot)
        FROM top t GROUP BY t.file_id, t.boot HAVING max(t.est) - min(t.est) <= 2 * {SPREAD_S} * 1e6""")
    con.execute("DROP TABLE _pairs")

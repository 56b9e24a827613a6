"""A cluster's time zone from what its nodes' own logs print, where inventory.toml does not say it.

`journalctl -o short-iso`, `dmesg --time-format iso` and RFC 3339 syslog print each line with the node's UTC offset
(`2026-12-06T10:23:45+01:00`); `dmesg -T`, the job's output and slurmctld print the same wall clock without one.
Where every stamp a cluster's node files show carries one and the same whole-hour offset, that offset is the zone of
the formats that print none. A DST change inside the evidence shows two offsets an hour apart (a file's first and
last stamps are read): then the zone is the first of a short list whose rules give every stamp its offset. A job
script's `date` (`Sat Oct 31 12:20:00 CDT 2026`) names the zone outright where its abbreviation is unambiguous.
"""

from __future__ import annotations

import datetime as dt
import gzip
import re
import zlib
from collections.abc import Iterable
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

# an ISO 8601 stamp with its offset, at a line's start (journal, dmesg --time-format iso, RFC 3339 syslog; GPFS's
# mmfs.log joins date and time with `_` and ends the stamp with `:`): the local wall clock and the offset
# NOTE: found after a newline, not at `^` in MULTILINE mode: the literal lets `re` skip to candidates (5x faster)
_OFFSET = re.compile(rb"\n(\d{4}-\d\d-\d\d)[T_](\d\d:\d\d:\d\d)(?:[.,]\d+)?([+-])(\d\d):?(\d\d)[ \t:]")
# date(1)'s default output, as job scripts print it (`START TIME: Sat Oct 31 12:20:00 CDT 2026`)
_WEEKDAYS = (b"Mon ", b"Tue ", b"Wed ", b"Thu ", b"Fri ", b"Sat ", b"Sun ")
_DATE_CMD = re.compile(rb"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +"
                       rb"(\d{1,2}) (\d\d:\d\d:\d\d) ([A-Z]{3,4}) (\d{4})\b")
HEAD_BYTES = 16384  # of each file: the stamps of its first lines (and of its last: a DST change inside the file)
MAX_FILES = 12  # files read per cluster, at most
MIN_AGREEING = 2  # files that must show the offset, and none another
# zones with daylight saving time a site's stamps may show: the first that gives every stamp its printed offset
# (or abbreviation) wins; zones that share their rules give the same UTC times
_DST_ZONES = ("America/New_York", "America/Chicago", "America/Denver", "America/Los_Angeles", "Europe/London",
              "Europe/Berlin", "Europe/Helsinki", "Australia/Sydney", "America/Sao_Paulo", "Pacific/Auckland")
# date(1)'s zone abbreviations that name one zone's rules (CST alone is also China's, IST three zones': not here)
_ABBR = {"EST": "America/New_York", "EDT": "America/New_York", "CDT": "America/Chicago",
         "MDT": "America/Denver", "PST": "America/Los_Angeles", "PDT": "America/Los_Angeles", "BST": "Europe/London",
         "CET": "Europe/Berlin", "CEST": "Europe/Berlin", "EET": "Europe/Helsinki", "EEST": "Europe/Helsinki",
         "AEST": "Australia/Sydney", "AEDT": "Australia/Sydney", "JST": "Asia/Tokyo", "KST": "Asia/Seoul"}
# abbreviations that fit a zone already named by another (`CST` beside `CDT`, `MST` beside `MDT`, `GMT` beside `BST`)
_ALSO = {"CST": "America/Chicago", "MST": "America/Denver", "GMT": "Europe/London"}
_MONTHS = {m: i for i, m in enumerate(b"Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), 1)}


def _head(path: Path) -> bytes:
    """The file's first HEAD_BYTES, and (a plain file longer than twice that) its last HEAD_BYTES."""
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rb") as f:
                return f.read(HEAD_BYTES)
        with path.open("rb") as f:
            head = f.read(HEAD_BYTES)
            if len(head) < HEAD_BYTES:
                return head
            f.seek(0, 2)
            size = f.tell()
            if size <= 2 * HEAD_BYTES:
                f.seek(HEAD_BYTES)
                return head + f.read()
            f.seek(size - HEAD_BYTES)
            tail = f.read()
            return head + tail[tail.find(b"\n"):]       # from the tail's first whole line
    except (OSError, EOFError, zlib.error):  # (a damaged gzip: BadGzipFile is an OSError, a bad deflate stream not)
        return b""


def file_head(path: Path) -> bytes:
    """The first HEAD_BYTES of a file (decompressed), b"" where it cannot be read."""
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rb") as f:
                return f.read(HEAD_BYTES)
        with path.open("rb") as f:
            return f.read(HEAD_BYTES)
    except (OSError, EOFError, zlib.error):  # (a damaged gzip: BadGzipFile is an OSError, a bad deflate stream not)
        return b""


def _offset_of(zone: str, local: dt.datetime) -> dt.timedelta | None:
    try:
        return local.replace(tzinfo=ZoneInfo(zone)).utcoffset()
    except (ZoneInfoNotFoundError, ValueError):
        return None


def zone_from_offsets(paths: Iterable[Path], job_paths: Iterable[Path] = ()) -> str | None:
    """The zone of a cluster's node files (`paths`) and of its jobs' output (`job_paths`: only date(1) stamps are
    read there). `Etc/GMT-1` for node files whose stamps all say `+01:00` (at least MIN_AGREEING of them, of the
    first MAX_FILES with any), `UTC` for `+00:00`; a zone with daylight saving time where the stamps show two
    offsets an hour apart (a DST change inside the evidence) or date(1) abbreviations name one
    (`CDT`/`CST`: America/Chicago), the first of `_DST_ZONES` that gives every stamp its offset; None when they
    disagree, say nothing, or an offset is not whole hours."""
    stamps: set[tuple[dt.datetime, int]] = set()            # (local wall clock, offset in minutes)
    abbrs: set[tuple[dt.datetime, str]] = set()
    files = 0
    for n, p in enumerate(paths):
        if n >= 4 * MAX_FILES or files >= MAX_FILES:
            break
        text = b"\n" + _head(p)
        found = _stamps(text)
        abbrs |= _abbreviations(text)
        if found:
            files += 1
            stamps |= found
    for n, p in enumerate(job_paths):
        if n >= MAX_FILES:
            break
        abbrs |= _abbreviations(b"\n" + _head(p))
    offsets = {o for _, o in stamps}
    if abbrs and (named := _named_zone(abbrs, stamps)):
        return named
    if files < MIN_AGREEING or not offsets or any(o % 60 for o in offsets):
        return None
    if len(offsets) == 1:
        h = offsets.pop() // 60
        if h == 0:
            return "UTC"
        if abs(h) > 14:
            return None
        return f"Etc/GMT{'-' if h > 0 else '+'}{abs(h)}"  # (the Etc zones' sign is POSIX's: east of Greenwich is -)
    if len(offsets) == 2 and max(offsets) - min(offsets) == 60:
        return next((z for z in _DST_ZONES if _fits(z, stamps)), None)
    return None


def _stamps(text: bytes) -> set[tuple[dt.datetime, int]]:
    out = set()
    for day, clock, sign, hours, minutes in _OFFSET.findall(text):
        try:
            local = dt.datetime.fromisoformat(f"{day.decode()} {clock.decode()}")
        except ValueError:
            continue
        out.add((local, (1 if sign == b"+" else -1) * (int(hours) * 60 + int(minutes))))
    return out


def _abbreviations(text: bytes) -> set[tuple[dt.datetime, str]]:
    out = set()
    # NOTE: a date(1) stamp begins with a weekday and a space: without one, no scan (the pattern has no literal the
    # regex engine can look for first: 0.12 of 1.7 s CPU of an ingest of a campaign corpus's NCCL logs)
    if not any(day in text for day in _WEEKDAYS):
        return out
    for mon, day, clock, abbr, year in _DATE_CMD.findall(text):
        try:
            local = dt.datetime(int(year), _MONTHS[mon], int(day), *map(int, clock.split(b":")))
        except ValueError:
            continue
        out.add((local, abbr.decode()))
    return out


def _fits(zone: str, stamps: set[tuple[dt.datetime, int]]) -> bool:
    return all(_offset_of(zone, local) == dt.timedelta(minutes=off) for local, off in stamps)


def _named_zone(abbrs: set[tuple[dt.datetime, str]], stamps: set[tuple[dt.datetime, int]]) -> str | None:
    """The one zone the date(1) abbreviations name (each stamp's abbreviation the zone's at that time), if it also
    gives the ISO stamps their offsets; `UTC` for UTC / GMT alone."""
    names = {a for _, a in abbrs}
    if names <= {"UTC", "GMT"}:
        return "UTC" if not stamps or {o for _, o in stamps} == {0} else None
    zones = {_ABBR[a] for a in names if a in _ABBR}
    if len(zones) != 1 or any(a not in _ABBR and _ALSO.get(a) not in zones for a in names):
        return None
    zone = zones.pop()
    try:
        ok = all(dt.datetime(*local.timetuple()[:6], tzinfo=ZoneInfo(zone)).tzname() == a for local, a in abbrs)
    except (ZoneInfoNotFoundError, ValueError):
        return None
    return zone if ok and _fits(zone, stamps) else None


# torchrun / c10 glog stamps (`W1031 17:20:31.069999 2589863 ...`, `[rank3]:[E1101 08:48:48.123456000 ...`) and the
# zoned ISO stamps a trainer's records start with (`2026-10-31T17:24:47.799Z INFO ...`, `...+00:00`)
_GLOG = re.compile(rb"\n(?:\[(?:rank|default)\d+\]:)?\[?[IWEF](\d\d)(\d\d) (\d\d:\d\d:\d\d)[.\d]* +\d+ ")
_ZONED = re.compile(rb"\n(?:\[(?:rank|default)\d+\]: ?|\d+: +)?(\d{4})-(\d\d)-(\d\d)[T ](\d\d:\d\d:\d\d)(?:[.,]\d+)?"
                    rb"(Z|[+-]\d\d:?\d\d)[ \t]")
PROC_LEEWAY_S = 15 * 60  # a glog stamp read in the right zone lies this close to the zoned records beside it


def process_zone(head: bytes, tz: str) -> str | None:
    """The zone of a job output's zone-less process stamps (torchrun's glog) where its records that print their zone
    show them in another than the site's `tz`: a container logging in UTC on a site in local time. Measured: the
    glog stamps, read in that zone, lie within minutes of the zoned records around them (in file order) and, read in
    `tz`, an offset away. None: no such stamps, or `tz` fits as well."""
    text = b"\n" + head
    zoned = [(m.start(), m) for m in _ZONED.finditer(text)]
    glogs = [(m.start(), m) for m in _GLOG.finditer(text)]
    if not zoned or not glogs or tz in ("UTC", "Etc/UTC"):
        return None
    offsets = {m.group(5).replace(b":", b"") for _, m in zoned}
    if len(offsets) != 1:
        return None
    off = offsets.pop()
    minutes = 0 if off == b"Z" else (1 if off[:1] == b"+" else -1) * (int(off[1:3]) * 60 + int(off[3:5]))
    zone = "UTC" if minutes == 0 else (f"Etc/GMT{'-' if minutes > 0 else '+'}{abs(minutes) // 60}"
                                      if minutes % 60 == 0 else None)
    if zone is None:
        return None
    fits_own = fits_site = 0
    for pos, g in glogs[:50]:
        near = min(zoned, key=lambda z: abs(z[0] - pos))[1]
        y, mo, d, hms = (int(near.group(1)), int(near.group(2)), int(near.group(3)), near.group(4).decode())
        try:
            anchor = dt.datetime(y, mo, d, *map(int, hms.split(":"))) - dt.timedelta(minutes=minutes)
            naive = dt.datetime(y, int(g.group(1)), int(g.group(2)), *map(int, g.group(3).split(b":")))
            as_site = naive.replace(tzinfo=ZoneInfo(tz)).astimezone(dt.UTC).replace(tzinfo=None)
        except (ValueError, ZoneInfoNotFoundError):
            continue
        as_own = naive - dt.timedelta(minutes=minutes)
        own, site = abs((as_own - anchor).total_seconds()), abs((as_site - anchor).total_seconds())
        fits_own += own <= PROC_LEEWAY_S < site
        fits_site += site <= PROC_LEEWAY_S
    return zone if fits_own and not fits_site else None

"""Alerts of a watch: one terminal line per detection, a JSON Lines file, a program fed the event on stdin."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # log text kept off the terminal
LINE_CHARS = 300  # a terminal line is cut here
PROGRAM_TIMEOUT_S = 30.0


def _jsonable(v):
    return v.isoformat() if isinstance(v, dt.datetime | dt.date) else str(v)


def to_json(ev: dict) -> str:
    """The event as one line of JSON (times in ISO 8601)."""
    return json.dumps(ev, default=_jsonable, sort_keys=True)


def terminal_line(ev: dict) -> str:
    """One line for a person: time, kind, run, host, what; log text made harmless for a terminal."""
    when = dt.datetime.now(dt.UTC).strftime("%H:%M:%S")
    host = f" host={ev['host']}" if ev.get("host") else ""
    text = f"{when} {ev['kind'].upper()} run={ev['run']}{host} {ev['message']}"
    return _CONTROL.sub("?", text)[:LINE_CHARS]


@dataclass
class Alerter:
    """Sends new detections; the same (kind, host) at most once per `repeat_s`, and at most `burst` a minute.

    Deduplication by the event's key is the store's (`watch_events`); this rate limit keeps a flapping link or
    a stream of Xids from flooding a pager. What it holds back is counted and said in the next line it sends.
    """

    events_file: Path | None = None
    program: list[str] | None = None  # argv: never a shell string
    echo: Callable[[str], None] = field(default=lambda line: print(line, flush=True))
    repeat_s: float = 300.0
    burst: int = 10
    clock: Callable[[], float] = time.monotonic
    _last: dict[tuple, float] = field(default_factory=dict)
    _sent: deque = field(default_factory=deque)
    held_back: int = 0

    def send(self, events: list[dict]) -> list[dict]:
        """Alert each event the limits let through; returns those."""
        sent = []
        for ev in events:
            if not self._allowed(ev):
                self.held_back += 1
                continue
            line = terminal_line(ev)
            if self.held_back:
                line += f" (+{self.held_back} held back by the rate limit)"
                self.held_back = 0
            self.echo(line)
            if self.events_file is not None:
                with open(self.events_file, "a", encoding="utf-8") as f:
                    f.write(to_json(ev) + "\n")
            if self.program:
                self._run_program(ev)
            sent.append(ev)
        return sent

    def _allowed(self, ev: dict) -> bool:
        now = self.clock()
        while self._sent and now - self._sent[0] > 60.0:
            self._sent.popleft()
        key = (ev["run"], ev["kind"], ev.get("host"))
        if len(self._sent) >= self.burst or now - self._last.get(key, -1e18) < self.repeat_s:
            return False
        self._last[key] = now
        self._sent.append(now)
        return True

    def _run_program(self, ev: dict) -> None:
        try:
            res = subprocess.run(self.program, input=to_json(ev), text=True, capture_output=True,
                                 timeout=PROGRAM_TIMEOUT_S, shell=False, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            print(f"watch: alert program {self.program[0]}: {e}", file=sys.stderr, flush=True)
            return
        if res.returncode:
            err = _CONTROL.sub("?", (res.stderr or "").strip().splitlines()[-1] if res.stderr.strip() else "")
            print(f"watch: alert program {self.program[0]} exited {res.returncode} {err}".rstrip(),
                  file=sys.stderr, flush=True)

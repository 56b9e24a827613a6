"""What an attempt kept is what the run later resumed from (`lineage.keep_points`), on hand-made tables: a launch
that died loading the newest save (its ZeRO shards never written: own campaign bloom_opt attempts 2-4) resumed
nothing, the next one fell back a save; the steps between were thrown away (productive was 106 GPU-h too high)."""

from __future__ import annotations

import datetime as dt

import polars as pl

from clusterlab import Lab
from clusterlab.account import lineage

T0 = dt.datetime(2026, 12, 1, 12, 0)


def _keep(loads: dict[int, int], firsts: dict[int, int | None]) -> dict[int, int | None]:
    with Lab(":memory:") as lab:
        for k, first in firsts.items():
            lab.con.execute("INSERT INTO attempts (run, attempt, start_ts, end_ts, first_step) VALUES "
                            "('r', ?, ?, ?, ?)", [k, T0 + dt.timedelta(hours=k), T0 + dt.timedelta(hours=k, minutes=50),
                                                  first])
        for k, step in loads.items():
            lab.con.execute("INSERT INTO checkpoints (run, attempt, ts, action, step) VALUES ('r', ?, ?, 'load', ?)",
                            [k, T0 + dt.timedelta(hours=k, minutes=3), step])
        att = pl.DataFrame({"attempt": list(firsts)}, schema={"attempt": pl.Int32})
        saves = pl.DataFrame(schema={"s_attempt": pl.Int32, "save_step": pl.Int64, "ts": pl.Datetime("us"),
                                     "duration_s": pl.Float64})
        inc = pl.DataFrame({"attempt": list(firsts)[:-1], "kind": ["attempt_end"] * (len(firsts) - 1)},
                           schema={"attempt": pl.Int32, "kind": pl.String})
        keep = lineage.keep_points(att, saves, inc, lab.con, "r")
    return dict(keep.select("attempt", "keep_step").iter_rows())


def test_a_launch_that_died_loading_the_newest_save_kept_nothing_of_it() -> None:
    # attempt 2 began the save of 700 and hung; 3 loaded 700 and died before a step; 4 fell back to 600
    keep = _keep({2: 400, 3: 700, 4: 600}, {1: 1, 2: 401, 3: None, 4: 601})
    assert keep[1] == 400 and keep[2] == 600 and keep[3] == 600


def test_each_attempt_keeps_what_the_next_one_resumed_from() -> None:
    keep = _keep({2: 400, 3: 600}, {1: 1, 2: 401, 3: 601})
    assert (keep[1], keep[2]) == (400, 600)

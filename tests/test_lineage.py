"""The steps the final model descends from (account/lineage.py): the chain of checkpoints back from the last attempt,
on hand-made attempts."""

from __future__ import annotations

import polars as pl

from clusterlab.account import lineage


def _chain(rows: list[tuple[int, int | None, int | None]]) -> dict[int, int | None]:
    frame = pl.DataFrame(rows, schema={"attempt": pl.Int32, "resume_step": pl.Int64, "top_step": pl.Int64},
                         orient="row")
    return dict(lineage.kept_steps(frame).iter_rows())


def test_an_older_checkpoint_found_again_after_a_wiped_directory_keeps_the_work_it_holds() -> None:
    # 1-3 train to 11000 on one cluster; 4 resumes 11000 on another whose storage is wiped; 5 finds nothing and
    # trains from 0; 6 finds the first cluster's copy of 11000 again and finishes
    got = _chain([(1, -1, 4880), (2, 4500, 7549), (3, 7500, 11391), (4, 11000, 13500), (5, -1, 462), (6, 11000, 20000)])
    # (4 keeps nothing past 11000, where it started: none of its own steps)
    assert got == {1: 4500, 2: 7500, 3: 11000, 4: 11000, 5: -1}


def test_a_wiped_directory_never_recovered_throws_away_every_earlier_attempt() -> None:
    got = _chain([(1, -1, 3000), (2, 2500, 6000), (3, -1, 4000)])
    assert got == {1: -1, 2: -1}


def test_a_launch_that_died_loading_is_skipped_and_the_one_before_it_keeps_what_was_loaded() -> None:
    # 2 died loading the newest save (no steps); 3 fell back to 4000, which 1 saved
    got = _chain([(1, -1, 5000), (2, None, None), (3, 4000, 9000)])
    assert got == {1: 4000, 2: None}


def test_a_deliberate_rollback_keeps_what_the_next_launch_resumed_from() -> None:
    """10 trains 800-889 and saves 880; 11 resumes 880 and diverges; 12 rolls back to 800 on purpose and saves 880
    again; 13 resumes that. The chain alone would give 10 only 800 (12 produced the 880 that 13 loaded): DESIGN's
    convention for a rollback keeps 10's work up to what 11 resumed from. Without the rollback the chain decides."""
    keep = pl.DataFrame({"attempt": [10, 11, 12], "keep_step": [880, 800, 880]},
                        schema={"attempt": pl.Int32, "keep_step": pl.Int64})
    steps = pl.DataFrame({"attempt": [10, 11, 12, 13], "load_step": [800, 880, 800, 880],
                          "first_step": [801, 881, 801, 881], "last_step": [889, 960, 901, 900],
                          "last_save_step": [880, 960, 880, 900]},
                         schema={"attempt": pl.Int32, "load_step": pl.Int64, "first_step": pl.Int64,
                                 "last_step": pl.Int64, "last_save_step": pl.Int64})
    rolled = dict(lineage.keep_descended(keep, steps, [12]).iter_rows())
    assert rolled[10] == 880
    plain = dict(lineage.keep_descended(keep, steps, []).iter_rows())
    assert plain[10] == 800 and plain[11] == -1

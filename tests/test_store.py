"""The schema is versioned and migrates forward; a newer database is refused, not damaged."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterlab import store


def test_new_database_is_at_the_current_version(tmp_path: Path) -> None:
    con = store.connect(tmp_path / "a.duckdb")
    assert store.current_version(con) == store.SCHEMA_VERSION
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    assert {"events", "steps", "rank_steps", "attempts", "checkpoints", "ingested_files", "runs",
            "providers", "clusters", "nodes", "inventory", "schema_version"} <= tables


def test_reopening_does_not_migrate_again(tmp_path: Path) -> None:
    store.connect(tmp_path / "a.duckdb").close()
    con = store.connect(tmp_path / "a.duckdb")
    assert con.execute("SELECT count(*) FROM schema_version").fetchall()[0][0] == store.SCHEMA_VERSION


def test_a_newer_database_is_refused(tmp_path: Path) -> None:
    con = store.connect(tmp_path / "a.duckdb")
    con.execute("INSERT INTO schema_version (version) VALUES (?)", [store.SCHEMA_VERSION + 1])
    con.close()
    with pytest.raises(RuntimeError, match="newer"):
        store.connect(tmp_path / "a.duckdb")


def test_migrations_apply_in_order(tmp_path: Path, monkeypatch) -> None:
    con = store.connect(tmp_path / "a.duckdb")
    monkeypatch.setattr(store, "MIGRATIONS", [*store.MIGRATIONS, ["ALTER TABLE events ADD COLUMN note VARCHAR"]])
    monkeypatch.setattr(store, "SCHEMA_VERSION", len(store.MIGRATIONS))
    assert store.migrate(con) == store.SCHEMA_VERSION
    cols = {r[0] for r in con.execute("DESCRIBE events").fetchall()}
    assert "note" in cols

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from clusterlab import Lab

ROOT = Path(__file__).resolve().parent.parent
# a diagnosis rule that fails raises in the tests (a user gets the unrefined answer and a note instead): see
# clusterlab/diagnose/refinements.py; the commands the tests start inherit it
os.environ.setdefault("CLUSTERLAB_STRICT", "1")
SAMPLES = ROOT / "data_samples"


def nccl_rank_map(hosts: list[str]) -> str:
    """An NCCL INFO log with one `Init COMPLETE` line a rank, rank i on hosts[i]: what ties a job's ranks to its
    hosts in the hand-made bundles of the tests."""
    return "\n".join(f"{h}:{100 + i}:{100 + i} [0] NCCL INFO comm 0x55aa{i} rank {i} nranks {len(hosts)} cudaDev 0 "
                     f"nvmlDev 0 busId 18000 commId 0x1 - Init COMPLETE" for i, h in enumerate(hosts)) + "\n"


@pytest.fixture
def lab() -> Lab:
    """An in-memory store."""
    with Lab(":memory:") as lab:
        yield lab


@pytest.fixture(scope="session")
def spark():
    """One local Spark of two executor threads for every Spark test (a new one costs 30-60 s; Java and pyspark
    installed when missing). Made only when a test asks for it."""
    from spark_local import SparkUnavailable, start

    try:
        session = start("local[2]")
    except SparkUnavailable as e:
        pytest.fail(f"local Spark unavailable: {e}")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def _ingested_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample bundle ingested once for the whole session (each module takes a copy)."""
    db = tmp_path_factory.mktemp("bundle-once") / "bundle.duckdb"
    with Lab(db) as lab:
        lab.ingest(SAMPLES / "bundle")
    return db


@pytest.fixture(scope="module")
def bundle_db_copy(_ingested_bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database file of the ingested sample bundle of this module's own, free to change."""
    db = tmp_path_factory.mktemp("bundle") / "bundle.duckdb"
    shutil.copy(_ingested_bundle, db)
    return db


# class -> [classified as labelled?] of each format-variant sample that ran
VARIANT_RESULTS = pytest.StashKey[dict]()
EXCERPT_RESULTS = pytest.StashKey[dict]()


def pytest_terminal_summary(terminalreporter, config) -> None:
    """Per-class accuracy of the format-variant samples (tests/test_format_variants.py) and of the real excerpts
    alone (tests/test_real_excerpts.py), when they ran."""
    for key, title in ((VARIANT_RESULTS, "format variants"), (EXCERPT_RESULTS, "real excerpts, each file alone")):
        results = config.stash.get(key, None)
        if not results:
            continue
        terminalreporter.section(f"{title}: per-class accuracy")
        total = right = 0
        for klass, oks in sorted(results.items()):
            total += len(oks)
            right += sum(oks)
            terminalreporter.write_line(f"{klass:<18} {sum(oks):>4}/{len(oks):<4} {100 * sum(oks) / len(oks):6.1f} %")
        terminalreporter.write_line(f"{'all':<18} {right:>4}/{total:<4} {100 * right / total:6.1f} %")



# CI runs the tests on two xdist workers (pyproject's addopts), a module's tests on one worker (its module-scoped
# fixtures are made once: an ingest of 703 excerpts, a campaign); the modules that share a machine-wide resource run
# on one worker, one after another: the local Slurm clusters (one munged for all), the Spark session (30-60 s to
# start, once per worker that asks), Chromium and JupyterLab.
_SHARED = {"slurm": ("test_relaunch", "test_relaunch_guards", "test_watch_slurm", "test_slurm_reboot_request"),
           "browser": ("test_browser", "test_screenshots", "test_notebooks", "test_widgets")}


@pytest.hookimpl(tryfirst=True)  # (before xdist's own hook, which reads the groups off the marks)
def pytest_collection_modifyitems(config, items) -> None:
    shared = {module: name for name, modules in _SHARED.items() for module in modules}
    for item in items:
        module = item.nodeid.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py")
        name = "spark" if "spark" in getattr(item, "fixturenames", ()) else shared.get(module, module)
        item.add_marker(pytest.mark.xdist_group(name))

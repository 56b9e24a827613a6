"""pyspark in local mode for the Spark ingest tests, installed here when missing.

As tests/slurm_cluster.py installs Slurm: a Java runtime from Debian (`default-jre-headless`) when there is
no `java`, and the project's `spark` extra (pyproject.toml) into the running interpreter when pyspark is not
importable. An install that fails raises SparkUnavailable with the reason: the tests fail with it, never skip.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# NOTE: the test machine has two cores: a small, quiet local Spark (no UI, few shuffle partitions)
CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2", "spark.driver.memory": "1g"}


class SparkUnavailable(RuntimeError):
    """This machine cannot run pyspark (no Java and no way to install it, or pip failed)."""


def _run(cmd: list[str], env: dict[str, str] | None = None) -> None:
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    if res.returncode:
        raise SparkUnavailable(f"{' '.join(cmd)} failed: {(res.stderr or res.stdout).strip()[-800:]}")


def ensure_java() -> None:
    """A Java runtime on PATH (Spark 4 needs 17 or later), from the distribution when missing (root only)."""
    if shutil.which("java"):
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise SparkUnavailable("no java on PATH, and default-jre-headless cannot be installed here (not root)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    _run(["apt-get", "update"], env)
    _run(["apt-get", "install", "-y", "--no-install-recommends", "default-jre-headless"], env)


def spark_requirements() -> list[str]:
    """The `spark` extra of pyproject.toml."""
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return doc["project"]["optional-dependencies"]["spark"]


def ensure_pyspark() -> None:
    """pyspark importable in this interpreter, pip-installed from the project's extra when it is not."""
    try:
        import pyspark  # noqa: F401
        return
    except ImportError:
        pass
    _run([sys.executable, "-m", "pip", "install", *spark_requirements()])
    importlib.invalidate_caches()


def start(master: str = "local[2]"):
    """A SparkSession of `master`, Java and pyspark installed first if needed."""
    ensure_java()
    ensure_pyspark()
    from clusterlab.scale.spark_ingest import spark_session

    spark = spark_session(master, app="clusterlab-tests", conf=CONF)
    spark.sparkContext.setLogLevel("ERROR")
    return spark

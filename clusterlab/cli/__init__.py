"""The `clusterlab` command: one module per command group, `common` for what they share, `app` for the root."""

from clusterlab.cli.app import main

__all__ = ["main"]

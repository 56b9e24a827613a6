"""Notebook widgets (ipywidgets) over the `Lab` API: they render, the API computes."""

from clusterlab.widgets.explorer import Explorer
from clusterlab.widgets.relaunch import RelaunchPanel

__all__ = ["Explorer", "RelaunchPanel"]

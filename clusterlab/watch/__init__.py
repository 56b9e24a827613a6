"""`clusterlab watch`: follow a running job's evidence, detect hangs, failures, stragglers and node trouble live."""

from clusterlab.watch.alerts import Alerter
from clusterlab.watch.detect import WatchSettings
from clusterlab.watch.loop import TickResult, Watcher
from clusterlab.watch.state import LiveState

__all__ = ["Alerter", "LiveState", "TickResult", "WatchSettings", "Watcher"]

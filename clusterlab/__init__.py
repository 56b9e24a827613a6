"""clusterlab: where did the GPU-hours go, whose fault was it, and what now."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clusterlab.lab import Lab, connect

__all__ = ["Lab", "connect"]
__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # NOTE: imported when first used, not with the package: an ingest worker process (or any one module)
    # would otherwise import every analysis module, half a second at each start
    if name in __all__:
        from clusterlab import lab

        return getattr(lab, name)
    raise AttributeError(f"module 'clusterlab' has no attribute {name!r}")

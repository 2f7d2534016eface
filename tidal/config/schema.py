"""Markers used inside default config dicts (defined in `tidal.base.defaults`, kept importable from here)."""
from tidal.base.defaults import FreeDict

__all__ = ['FreeDict']

"""Markers used inside default config dicts (defined in `tidal.defaults`, kept importable from here)."""
from tidal.defaults import FreeDict

__all__ = ['FreeDict']

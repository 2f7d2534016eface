"""Tracking services a run's scalars go to besides TensorBoard and evals.csv (`logger.backends`)."""
from tidal.worker.tracking.backends import BACKENDS, backends, check_backends, open_trackers
from tidal.worker.tracking.tracker import TrackedRun, Tracker

__all__ = ['BACKENDS', 'TrackedRun', 'Tracker', 'backends', 'check_backends', 'open_trackers']

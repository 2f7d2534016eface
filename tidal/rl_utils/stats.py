"""Aggregate scores over seeds the way deep-RL results can be trusted with few runs (Agarwal et al.
2021, "Deep RL at the Edge of the Statistical Precipice", arXiv 2108.13264).

Scores are shaped [runs, tasks] (a 1-D array is the runs of one task). The interquartile mean (IQM)
drops the lowest and the highest quarter of all scores and averages the rest: less swayed by one
lucky or failed seed than the mean, less wasteful than the median. The confidence interval is a
percentile bootstrap stratified by task: each replicate resamples runs with replacement within
every task, so each task keeps its run count and no task can crowd out another.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from numpy.typing import ArrayLike

from tidal.base.errors import TidalError

#: An aggregate of a batch of score tables: [batch, runs, tasks] -> [batch].
Aggregate = Callable[[np.ndarray], np.ndarray]

#: Replicates resampled at once: bounds the memory of the vectorised bootstrap (~80 MB of float64).
_CHUNK_ELEMENTS = 10_000_000


class ScoresError(TidalError, ValueError):
    """Scores that cannot be aggregated (empty, non-finite, or not [runs, tasks])."""


@dataclass(frozen=True)
class Interval:
    """A point estimate with the bounds of its confidence interval."""
    point: float
    low: float
    high: float


def as_scores(scores: ArrayLike) -> np.ndarray:
    """Float64 [runs, tasks], checked: a 1-D input is the runs of a single task."""
    array = np.asarray(scores, dtype=np.float64)
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2:
        raise ScoresError(f'scores must be [runs] or [runs, tasks], got shape {array.shape}')
    if array.size == 0:
        raise ScoresError(f'no scores to aggregate (shape {array.shape})')
    if not np.isfinite(array).all():
        bad = np.argwhere(~np.isfinite(array))[0]
        raise ScoresError(f'score of run {bad[0]}, task {bad[1]} is {array[tuple(bad)]}: scores must be finite')
    return array


def batched_iqm(tables: np.ndarray) -> np.ndarray:
    """IQM of each [runs, tasks] table in a batch, all scores of a table pooled.

    The trim is scipy.stats.trim_mean(x, 0.25)'s (rliable's IQM uses it): floor(n / 4) scores are cut
    from each end of the n sorted scores, whole scores only, so with n = 3 nothing is cut (IQM = mean)
    and with n = 6 the middle 4 of 6 are averaged, not 3 with halves of the 2nd and 5th.
    """
    flat = np.sort(tables.reshape(tables.shape[0], -1), axis=1)
    cut = flat.shape[1] // 4
    return flat[:, cut:flat.shape[1] - cut].mean(axis=1)


def batched_median(tables: np.ndarray) -> np.ndarray:
    """Median of each [runs, tasks] table in a batch, all scores pooled (for one task: over seeds)."""
    return np.median(tables.reshape(tables.shape[0], -1), axis=1)


def iqm(scores: ArrayLike) -> float:
    """Interquartile mean of all scores; see `batched_iqm` for how the quartiles are trimmed."""
    return float(batched_iqm(as_scores(scores)[None])[0])


def median(scores: ArrayLike) -> float:
    """Median of all scores pooled. For one task it is the median over seeds that tables quote; it is
    not rliable's aggregate median, which is the median of the tasks' mean scores."""
    return float(batched_median(as_scores(scores)[None])[0])


def stratified_bootstrap(scores: ArrayLike, aggregate: Aggregate = batched_iqm, replicates: int = 2000,
                         seed: int = 0) -> np.ndarray:
    """The aggregate of `replicates` resampled tables, float64 [replicates].

    Each replicate draws, for every task on its own (the strata), as many runs as the task has, with
    replacement. All replicates are drawn and aggregated as arrays, in chunks that bound memory.
    """
    table = as_scores(scores)
    if replicates < 1:
        raise ScoresError(f'replicates must be at least 1, got {replicates}')
    runs, tasks = table.shape
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_ELEMENTS // table.size)
    task_index = np.arange(tasks)
    out = np.empty(replicates)
    for start in range(0, replicates, chunk):
        count = min(chunk, replicates - start)
        run_index = rng.integers(0, runs, size=(count, runs, tasks))  # a column per task: the strata
        out[start:start + count] = aggregate(table[run_index, task_index])
    return out


def bootstrap_ci(scores: ArrayLike, aggregate: Aggregate = batched_iqm, confidence: float = 0.95,
                 replicates: int = 2000, seed: int = 0) -> Interval:
    """The aggregate of the scores with its stratified-bootstrap percentile interval.

    Percentile bounds: the (1 - confidence) / 2 and (1 + confidence) / 2 quantiles of the replicates.
    The same seed gives the same interval; with one run per task every replicate is the data itself
    and the interval has no width, which says "one seed" rather than "certain".
    """
    if not 0.0 < confidence < 1.0:
        raise ScoresError(f'confidence must be in (0, 1), got {confidence}')
    table = as_scores(scores)
    samples = stratified_bootstrap(table, aggregate, replicates, seed)
    low, high = np.quantile(samples, [(1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0])
    return Interval(float(aggregate(table[None])[0]), float(low), float(high))


def iqm_ci(scores: ArrayLike, confidence: float = 0.95, replicates: int = 2000, seed: int = 0) -> Interval:
    """IQM with its stratified-bootstrap confidence interval, the summary tidal's tables quote."""
    return bootstrap_ci(scores, batched_iqm, confidence, replicates, seed)

"""IQM, median and the stratified-bootstrap confidence interval: values computed by hand, the interval's
behaviour (contains the estimate, narrows with runs, repeats with its seed, keeps each task's runs) and
the errors for input that cannot be aggregated."""
import numpy as np
import pytest
from scipy.stats import trim_mean

from tidal.rl_utils.stats import (ScoresError, batched_iqm, bootstrap_ci, iqm, iqm_ci, median,
                                  stratified_bootstrap)


def test_iqm_of_eight_scores_is_the_mean_of_the_middle_four():
    # sorted: 1 2 | 3 4 10 20 | 100 1000 -> (3 + 4 + 10 + 20) / 4
    assert iqm([100, 3, 1, 20, 1000, 4, 2, 10]) == pytest.approx(37 / 4)


def test_iqm_trims_whole_scores_only_as_trim_mean_does():
    # 6 scores: a quarter is 1.5 scores; trim_mean cuts 1 from each end (not 1.5), so the middle 4 count fully
    scores = [0, 10, 20, 30, 40, 1000]
    assert iqm(scores) == pytest.approx((10 + 20 + 30 + 40) / 4)
    assert iqm(scores) == pytest.approx(trim_mean(scores, 0.25))
    # 3 seeds: floor(3 / 4) = 0, nothing is cut and the IQM is the mean
    assert iqm([-500, -80, -500]) == pytest.approx(-360)


def test_iqm_pools_runs_and_tasks():
    table = np.array([[1.0, 5.0], [2.0, 6.0], [3.0, 7.0], [4.0, 8.0]])  # [runs, tasks]
    assert iqm(table) == pytest.approx((3 + 4 + 5 + 6) / 4)
    assert iqm(table) == pytest.approx(trim_mean(table, 0.25, axis=None))


def test_median_is_over_all_scores():
    assert median([3, 1, 2]) == 2
    assert median([[1.0, 5.0], [2.0, 6.0]]) == pytest.approx(3.5)


def test_the_interval_contains_the_estimate_and_is_the_iqm():
    scores = [-80.0, -500.0, -500.0, -95.0, -120.0]
    interval = iqm_ci(scores, seed=3)
    assert interval.point == pytest.approx(iqm(scores))
    assert interval.low <= interval.point <= interval.high
    assert min(scores) <= interval.low < interval.high <= max(scores)


def test_the_interval_narrows_with_more_runs():
    rng = np.random.default_rng(0)
    few, many = rng.normal(size=5), rng.normal(size=500)
    width = [iqm_ci(x).high - iqm_ci(x).low for x in (few, many)]
    assert width[1] < width[0] / 4


def test_the_same_seed_gives_the_same_interval_and_another_seed_another():
    scores = np.random.default_rng(1).normal(size=(7, 3))
    assert iqm_ci(scores, seed=5) == iqm_ci(scores, seed=5)
    assert iqm_ci(scores, seed=5) != iqm_ci(scores, seed=6)


def test_one_run_gives_an_interval_without_width():
    assert iqm_ci([42.0]) == iqm_ci([42.0], seed=9)
    assert (iqm_ci([42.0]).low, iqm_ci([42.0]).high) == (42.0, 42.0)


def test_each_replicate_resamples_runs_within_each_task():
    # task 0 scores 0..3, task 1 scores 100..103: a replicate that kept its strata has exactly 4 of each
    table = np.stack([np.arange(4.0), 100 + np.arange(4.0)], axis=1)
    seen = []

    def record(tables):
        seen.append(tables)
        return tables.mean(axis=(1, 2))

    stratified_bootstrap(table, record, replicates=200, seed=0)
    [tables] = seen
    assert tables.shape == (200, 4, 2)
    assert ((tables[:, :, 0] < 4).all() and (tables[:, :, 1] >= 100).all())
    # resampled with replacement: some replicate repeats a run
    assert any(len(set(replicate)) < 4 for replicate in tables[:, :, 0].tolist())


def test_the_bootstrap_is_drawn_in_chunks_that_agree_with_one_draw(monkeypatch):
    import tidal.rl_utils.stats as stats
    scores = np.random.default_rng(2).normal(size=(10, 4))
    whole = stratified_bootstrap(scores, batched_iqm, replicates=50, seed=4)
    monkeypatch.setattr(stats, '_CHUNK_ELEMENTS', 40 * 7)  # 7 replicates a chunk
    chunked = stratified_bootstrap(scores, batched_iqm, replicates=50, seed=4)
    assert chunked.shape == (50,)
    # chunking changes how the generator's stream is cut, not the distribution: same bounds, give or take
    assert abs(np.median(chunked) - np.median(whole)) < 0.5


def test_a_median_interval_can_be_asked_for():
    from tidal.rl_utils.stats import batched_median
    interval = bootstrap_ci([1.0, 2.0, 3.0, 4.0, 100.0], batched_median)
    assert interval.point == 3.0 and interval.low <= 3.0 <= interval.high


@pytest.mark.parametrize('scores, message', [
    ([], 'no scores to aggregate (shape (0, 1))'),
    ([1.0, float('nan'), 2.0], 'score of run 1, task 0 is nan: scores must be finite'),
    ([[1.0, 2.0], [3.0, float('inf')]], 'score of run 1, task 1 is inf: scores must be finite'),
    (np.zeros((2, 2, 2)), 'scores must be [runs] or [runs, tasks], got shape (2, 2, 2)'),
])
def test_scores_that_cannot_be_aggregated_are_refused(scores, message):
    with pytest.raises(ScoresError) as error:
        iqm_ci(scores)
    assert str(error.value) == message


def test_bad_settings_are_refused():
    with pytest.raises(ScoresError, match='confidence must be in'):
        bootstrap_ci([1.0, 2.0], confidence=95)
    with pytest.raises(ScoresError, match='replicates must be at least 1'):
        iqm_ci([1.0, 2.0], replicates=0)

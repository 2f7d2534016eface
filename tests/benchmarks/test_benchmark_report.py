"""benchmarks/report.py's tables quote, over seeds, the median and the IQM with its 95% bootstrap interval."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / 'benchmarks'))
from report import iqm_cell, library_row, markdown_table, seed_summary  # noqa: E402


def run(returns, steps=(1000, 2000)):
    return {'evals': [{'env_step': s, 'return_mean': r} for s, r in zip(steps, returns)],
            'summary': {'wall_time': 10.0, 'env_steps_per_s': 200.0, 'updates_per_s': 100.0}}


def test_seed_summary_is_the_median_and_the_iqm_with_an_interval_around_it():
    summary = seed_summary([-80.0, -500.0, -500.0])
    assert summary['median'] == -500.0
    assert summary['iqm'] == pytest.approx(-360.0)  # 3 seeds: nothing is trimmed
    low, high = summary['ci']
    assert -500.0 <= low <= summary['iqm'] <= high <= -80.0
    assert seed_summary([-80.0, -500.0, -500.0]) == summary  # a fixed seed: the same interval every time
    assert iqm_cell({'iqm': -360.0, 'ci': [-500.0, -80.0]}) == '-360.0 [-500.0, -80.0]'


def test_the_table_has_the_iqm_and_interval_of_the_last_milestone_beside_the_medians():
    row = library_row([run([0.0, 10.0]), run([0.0, 20.0]), run([0.0, 90.0])], [1000, 2000])
    assert row['returns'][2000]['median'] == 20.0 and row['returns'][2000]['iqm'] == pytest.approx(40.0)
    head, _, line = markdown_table({'tidal': row}, [1000, 2000]).splitlines()
    assert head == '| library | seeds | return @1k | return @2k | IQM @2k | wall-clock (s) | env steps/s | updates/s |'
    # 3 seeds: the IQM (their mean) with the seed count and the range, not a 95% interval
    assert line == '| tidal | 3 | 0.0 | 20.0 | 40.0 (n=3, range [10.0, 90.0]) | 10 | 200.0 | 100.0 |'
    five = library_row([run([0.0, value]) for value in (10.0, 20.0, 30.0, 40.0, 90.0)], [1000, 2000])
    low, high = five['returns'][2000]['ci']
    assert markdown_table({'tidal': five}, [1000, 2000]).splitlines()[2].split(' | ')[4] == (
        f"{five['returns'][2000]['iqm']:.1f} [{low:.1f}, {high:.1f}]")  # from 5 seeds, the 95% interval

"""benchmarks/muzero.py: `--skip` leaves runs out of their comparisons, `--parallel 1` queues every run in one lane."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / 'benchmarks'))
import muzero  # noqa: E402


def test_skip_leaves_a_run_out_and_parallel_one_runs_one_after_another():
    args = muzero.parse_args(['--only', 'muzero', 'repr', '--no-lightzero', '--skip', 'cartpole_muzero_reanalyze',
                              '--parallel', '1', '--seeds', '0', '1'])
    assert list(muzero.variants(args, 'muzero').values()) == ['cartpole_muzero']
    (lane,) = muzero.lanes(args)
    names = [job.name for job in lane]
    assert 'cartpole_muzero_reanalyze seed 0' not in names
    assert names[:2] == ['cartpole_muzero seed 0', 'cartpole_muzero seed 1']
    assert len(names) == 2 + 2 * 3  # muzero's one run and repr's three, each over 2 seeds


def test_by_default_two_lanes_share_the_runs():
    args = muzero.parse_args(['--only', 'repr', '--seeds', '0'])
    assert [len(lane) for lane in muzero.lanes(args)] == [2, 1]


def test_an_unknown_run_name_is_refused_with_the_known_ones(capsys):
    with pytest.raises(SystemExit):
        muzero.parse_args(['--skip', 'cartpole_muzer'])
    assert "unknown run name(s) ['cartpole_muzer']" in capsys.readouterr().err

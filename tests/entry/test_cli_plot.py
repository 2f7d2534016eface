"""`tidal plot` says in one line what it drew: how many runs, into which file, and how many curves when the seeds
of one config are pooled into one."""
from __future__ import annotations

from tidal.entry.cli import main

HEADER = 'env_step,train_iter,wall_time,return_mean,return_std,episode_length_mean'


def write_run(run_dir, seed=None):
    """A run folder with two evaluations; with `seed`, a config.yaml that makes it a seed of one config."""
    run_dir.mkdir()
    (run_dir / 'evals.csv').write_text(f'{HEADER}\n0,0,0.0,-900,1.0,200\n1000,900,5.0,-300,1.0,200\n')
    if seed is not None:
        (run_dir / 'config.yaml').write_text(f'main_config:\n  exp_name: {run_dir.name}\n  seed: {seed}\n'
                                             'create_config:\n  policy:\n    type: sac\n')
    return str(run_dir)


def test_plot_of_one_run_says_one_run_and_the_file(tmp_path, capsys):
    out = tmp_path / 'curves.png'
    assert main(['plot', write_run(tmp_path / 'a'), '-o', str(out)]) == 0
    assert capsys.readouterr().out == f'tidal: drew the eval returns of 1 run into {out}\n'


def test_plot_of_runs_of_different_configs_counts_the_runs(tmp_path, capsys):
    out = tmp_path / 'curves.png'
    assert main(['plot', write_run(tmp_path / 'a'), write_run(tmp_path / 'b'), '-o', str(out)]) == 0
    assert capsys.readouterr().out == f'tidal: drew the eval returns of 2 runs into {out}\n'


def test_plot_of_seeds_says_they_make_one_curve_unless_per_run(tmp_path, capsys):
    runs = [write_run(tmp_path / f'pendulum_sac_seed{seed}', seed) for seed in range(3)]
    out = tmp_path / 'curves.png'
    assert main(['plot', *runs, '-o', str(out)]) == 0
    assert capsys.readouterr().out == (f'tidal: drew the eval returns of 3 runs into {out} as 1 curve, the seeds of '
                                       'one config as their IQM\n')
    assert main(['plot', *runs, '--per-run', '-o', str(out)]) == 0
    assert capsys.readouterr().out == f'tidal: drew the eval returns of 3 runs into {out}\n'

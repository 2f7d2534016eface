"""The CLI end to end: user errors are one line on stderr, a short run writes its whole folder."""
import csv
import json
import subprocess
import sys

import pytest
import torch

from tidal.entry.cli import main


def run_cli(*args, cwd):
    return subprocess.run([sys.executable, '-m', 'tidal', *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize('args, message', [
    (['train', 'no_such.yaml'], "tidal: error: config file 'no_such.yaml' not found"),
    (['train', 'pendulum_sc'], "did you mean 'pendulum_sac'"),
    (['train', 'pendulum_sac', '--set', 'policy.learn.batch_sise=3'],
     "unknown config key 'policy.learn.batch_sise'; did you mean 'policy.learn.batch_size'?"),
    (['train', 'pendulum_sac', '--set', 'env.env_id=Pendulm-v1'],
     "unknown gymnasium env id 'Pendulm-v1' (env.env_id); did you mean 'Pendulum-v1'?"),
    (['train', 'pendulum_sac', '--set', 'policy.type=sacc'], "unknown policy 'sacc'; did you mean 'sac'"),
    (['eval', 'pendulum_sac', '--ckpt', 'missing.pt'], "tidal: error: checkpoint 'missing.pt' not found"),
])
def test_user_errors_are_one_line_without_traceback(tmp_path, capsys, args, message):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count('\n') == 1 and 'Traceback' not in err


def test_list_shows_registered_names_and_zoo(capsys):
    assert main(['list']) == 0
    out = capsys.readouterr().out
    for name in ('sac', 'discrete_sac', 'continuous_qac', 'gym', 'pendulum_sac', 'cartpole_discrete_sac'):
        assert name in out


def test_config_show_prints_resolved_values_with_comments(capsys):
    assert main(['config', 'show', 'pendulum_sac', '--set', 'policy.learn.batch_size=64']) == 0
    out = capsys.readouterr().out
    assert 'batch_size: 64' in out
    assert '# (float in (0, 1]) Polyak factor of the target networks' in out
    assert 'obs_shape: 3' in out


def test_short_training_run_writes_its_run_folder_and_resumes(tmp_path):
    result = run_cli('train', 'pendulum_sac', '--max-env-step', '300', '--exp-name', 'run', '--no-progress',
                     '--set', 'policy.random_collect_size=100', '--set', 'policy.eval.evaluator.eval_freq=100',
                     '--set', 'policy.learn.batch_size=32', '--set', 'policy.learn.learner.save_ckpt_freq=50',
                     '--set', 'env.n_evaluator_episode=1', '--set', 'env.evaluator_env_num=1', cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    # the header names the device 'auto' would pick, the collector and the env manager, in the terminal and log.txt
    header = 'device cpu, collector local, 1 envs (base env manager)'
    assert result.stdout.splitlines()[0] == f'tidal: training sac on Pendulum-v1 (seed 0) in run: {header}'
    run = tmp_path / 'run'
    assert (run / 'log.txt').read_text().splitlines()[0].endswith(f'training sac on Pendulum-v1 in run (seed 0); '
                                                                   f'{header}')
    for name in ('config.yaml', 'log.txt', 'evals.csv', 'summary.json', 'curve.png', 'ckpt/latest.pt',
                 'ckpt/best.pt'):
        assert (run / name).is_file(), name
    assert any((run / 'log').glob('events.out.tfevents.*'))
    summary = json.loads((run / 'summary.json').read_text())
    assert summary['env_step'] == 300 and summary['train_iter'] == 200
    with open(run / 'evals.csv') as f:
        assert [int(row['train_iter']) for row in csv.DictReader(f)] == [0, 100, 200]

    # the saved config runs again as it is, and the checkpoint evaluates
    again = run_cli('train', 'run/config.yaml', '--max-env-step', '150', '--exp-name', 'again', '--no-progress',
                    cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    evaluated = run_cli('eval', 'run/config.yaml', '--ckpt', 'run/ckpt/best.pt', '--episodes', '1', cwd=tmp_path)
    assert evaluated.returncode == 0 and 'eval return' in evaluated.stdout
    assert ' over 1 episode (mean length 200.0)' in evaluated.stdout

    # the run ended on its budget: resuming it says so and leaves it as it is
    summary = (run / 'summary.json').read_bytes()
    resumed = run_cli('resume', 'run', '--no-progress', cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "already ended (budget of 300 env steps reached); nothing to resume" in resumed.stdout
    assert (run / 'summary.json').read_bytes() == summary


def test_plot_draws_runs_into_one_png(tmp_path, capsys):
    for name, offset in (('a', 0.0), ('b', 5.0)):
        run = tmp_path / name
        run.mkdir()
        (run / 'evals.csv').write_text(
            'env_step,train_iter,wall_time,return_mean,return_std,episode_length_mean\n'
            f'0,0,0.0,{-10 + offset},1.0,200\n1000,900,5.0,{-5 + offset},1.0,200\n')
    out = tmp_path / 'both.png'
    assert main(['plot', str(tmp_path / 'a'), str(tmp_path / 'b'), '-o', str(out)]) == 0
    assert out.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    assert main(['plot', str(tmp_path)]) == 2
    assert 'has no evals.csv' in capsys.readouterr().err


def test_plot_draws_seeds_of_one_config_as_one_curve_unless_per_run(tmp_path, monkeypatch, capsys):
    for seed in range(3):
        run = tmp_path / f'pendulum_sac_seed{seed}'
        run.mkdir()
        (run / 'evals.csv').write_text('env_step,train_iter,wall_time,return_mean,return_std,episode_length_mean,'
                                       f'collect_return_mean\n0,0,0.0,{-900 + seed},1.0,200,nan\n'
                                       f'1000,900,5.0,{-300 + seed},1.0,200,-500\n')
        (run / 'config.yaml').write_text(f'main_config:\n  exp_name: {run}\n  seed: {seed}\n'
                                         'create_config:\n  policy:\n    type: sac\n')
    drawn = {}
    import tidal.worker.plot as plot
    real = plot.curve_figure

    def spy(run_dirs, title='', per_run=False):
        fig = real(run_dirs, title, per_run)
        drawn[per_run] = [line.get_label() for line in fig.axes[0].get_lines()]
        return fig

    monkeypatch.setattr(plot, 'curve_figure', spy)
    runs = [str(tmp_path / f'pendulum_sac_seed{seed}') for seed in range(3)]
    assert main(['plot', *runs, '-o', str(tmp_path / 'iqm.png')]) == 0
    assert main(['plot', *runs, '--per-run', '-o', str(tmp_path / 'each.png')]) == 0
    assert drawn[False] == ['pendulum_sac (IQM of 3 seeds, 95% CI)']
    assert drawn[True][::2] == [f'pendulum_sac_seed{seed} (eval)' for seed in range(3)]
    assert (tmp_path / 'iqm.png').read_bytes()[:8] == (tmp_path / 'each.png').read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


def test_the_run_header_names_a_ray_collector_its_workers_and_mode_and_the_device_auto_picked():
    from tidal.entry.run import run_header
    from tidal.entry.setup import load_config
    cfg = load_config('cartpole_ppo', overrides=['collector.type=ray', 'collector.num_workers=4',
                                                 'collector.mode=async', 'policy.device=auto'])
    assert run_header(cfg, torch.device('cpu')) == 'device cpu (auto), collector on Ray, 4 workers, async, 8 envs in all'
    assert run_header(cfg, torch.device('cpu'), world_size=2).startswith('device cpu (auto), 2 learner processes, ')


@pytest.mark.parametrize('args', [['--help'], ['train', '--help'], ['train']])
def test_help_and_usage_errors_answer_without_importing_torch(tmp_path, args):
    """`tidal --help` is for reading: it imports the standard library and the parser, not torch or a policy."""
    probe = ('import sys\nfrom tidal.entry.cli import main\ncode = main(sys.argv[1:])\n'
             "print(sorted(name for name in ('torch', 'numpy', 'matplotlib', 'numba', 'tidal.policies') "
             'if name in sys.modules))\nsys.exit(code)')
    done = subprocess.run([sys.executable, '-c', probe, *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.splitlines()[-1] == '[]'
    assert done.returncode == (2 if args == ['train'] else 0)


def test_the_cli_seed_bound_is_the_configs():
    from tidal.config.compiler import MAX_SEED
    from tidal.entry import cli
    assert cli.MAX_SEED == MAX_SEED


def test_import_tidal_is_lazy_and_its_names_and_registries_are_whole():
    probe = ("import sys, tidal\nassert 'torch' not in sys.modules\n"
             "assert 'sac' in tidal.POLICY_REGISTRY and 'CartPole-v1' not in tidal.POLICY_REGISTRY\n"
             "from tidal import serial_pipeline, Policy\nprint(tidal.envs.__name__, sorted(tidal.__all__) == tidal.__all__)")
    done = subprocess.run([sys.executable, '-c', probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ['tidal.envs', 'True']
    with pytest.raises(AttributeError, match="module 'tidal' has no attribute 'no_such_name'"):
        import tidal
        tidal.no_such_name

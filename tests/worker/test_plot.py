"""Learning curves from evals.csv: the eval return, and the collect return dashed beside it where the file has it
(files written before that column existed still plot); the seeds of one config drawn as one curve, their IQM
with a confidence band."""
import math

import matplotlib.pyplot as plt
import pytest

from tidal.base.errors import TidalError
from tidal.worker.plot import EVAL_COLUMNS, curve_figure, plot_curves, read_evals, seed_curve
from tidal.worker.run_groups import group_runs

OLD_HEADER = 'env_step,train_iter,wall_time,return_mean,return_std,episode_length_mean'
PNG = b'\x89PNG\r\n\x1a\n'


def write_run(run_dir, text):
    run_dir.mkdir()
    (run_dir / 'evals.csv').write_text(text)
    return run_dir


def test_the_collect_return_is_drawn_dashed_beside_the_eval_return(tmp_path):
    run = write_run(tmp_path / 'acrobot', f'{OLD_HEADER},collect_return_mean\n'
                    '0,0,0.0,-500.0,0.0,500,nan\n1000,10,1.0,-500.0,0.0,500,-141.5\n2000,20,2.0,-300.0,10.0,300,-120.0\n')
    fig = curve_figure([run])
    eval_line, collect_line = fig.axes[0].get_lines()
    assert (eval_line.get_label(), eval_line.get_linestyle()) == ('acrobot (eval)', '-')
    assert list(eval_line.get_xdata()) == [0, 1000, 2000] and list(eval_line.get_ydata()) == [-500, -500, -300]
    assert (collect_line.get_label(), collect_line.get_linestyle()) == ('acrobot (collect)', '--')
    # the row without a finished training episode (nan) is left out, not drawn as a gap
    assert list(collect_line.get_xdata()) == [1000, 2000] and list(collect_line.get_ydata()) == [-141.5, -120.0]
    assert collect_line.get_color() == eval_line.get_color()
    plt.close(fig)
    assert plot_curves([run], tmp_path / 'curve.png').read_bytes()[:8] == PNG


def test_an_evals_csv_without_the_collect_column_reads_and_plots_as_before(tmp_path):
    run = write_run(tmp_path / 'old', f'{OLD_HEADER}\n0,0,0.0,-10,1.0,200\n1000,900,5.0,-5,1.0,200\n')
    evals = read_evals(run)
    assert evals['return_mean'] == [-10.0, -5.0]
    assert len(evals['collect_return_mean']) == 2 and all(math.isnan(v) for v in evals['collect_return_mean'])
    fig = curve_figure([run])
    [eval_line] = fig.axes[0].get_lines()
    assert eval_line.get_label() == 'old'
    plt.close(fig)
    assert plot_curves([run], tmp_path / 'curve.png').read_bytes()[:8] == PNG


# --- seeds of one config drawn as one curve ---------------------------------------------------------

def write_seed(tmp_path, name, seed, returns, env_id='CartPole-v1', steps=(0, 1024, 2048)):
    """A run folder as a run writes it: evals.csv in EVAL_COLUMNS and a resolved config.yaml."""
    run = tmp_path / name
    run.mkdir()
    rows = [f'{step},{10 * i},{float(i)},{value},1.0,{value},nan'
            for i, (step, value) in enumerate(zip(steps, returns))]
    (run / 'evals.csv').write_text(','.join(EVAL_COLUMNS) + '\n' + '\n'.join(rows) + '\n')
    (run / 'config.yaml').write_text(
        '# Resolved tidal config: every key with its value in this run. Run it again with `tidal train`.\n'
        f'main_config:\n  exp_name: {run}\n  seed: {seed}\n  env:\n    env_id: {env_id}\n'
        '    collector_env_num: 8\n  policy:\n    learn:\n      batch_size: 64\n'
        'create_config:\n  env:\n    type: gym\n    import_names: []\n  policy:\n    type: ppo\n    import_names: []\n')
    return run


def test_runs_that_differ_only_by_seed_are_one_group_and_other_configs_their_own(tmp_path):
    seeds = [write_seed(tmp_path, f'cartpole_ppo_seed{s}', s, [0, 1, 2]) for s in range(3)]
    other = write_seed(tmp_path, 'acrobot_ppo_seed0', 0, [0, 1, 2], env_id='Acrobot-v1')
    lone = write_run(tmp_path / 'no_config', f'{OLD_HEADER}\n0,0,0.0,-10,1.0,200\n')
    groups = group_runs([seeds[0], other, seeds[1], lone, seeds[2]])
    assert [(g.label, g.run_dirs) for g in groups] == [
        ('cartpole_ppo', (seeds[0], seeds[1], seeds[2])), ('acrobot_ppo_seed0', (other,)), ('no_config', (lone,))]


def test_the_seed_curve_is_the_iqm_with_a_band_that_contains_it(tmp_path):
    runs = [write_seed(tmp_path, f's{s}', s, returns)
            for s, returns in enumerate([[10, 20, 30], [12, 18, 60], [14, 22, 90], [100, 100, 100], [0, 0, 0]])]
    steps, middle, low, high = seed_curve(runs)
    assert list(steps) == [0, 1024, 2048]
    # 5 seeds: trim_mean cuts 1 from each end, the IQM is the mean of the middle 3
    assert list(middle) == pytest.approx([12, 20, 60])
    assert (low <= middle).all() and (middle <= high).all() and (low < high).all()


def test_seeds_of_different_lengths_are_drawn_over_the_steps_all_reached_interpolating_other_grids(tmp_path):
    long = write_seed(tmp_path, 'a', 0, [0, 10, 20, 30], steps=(0, 1000, 2000, 3000))
    short = write_seed(tmp_path, 'b', 1, [0, 30], steps=(0, 1500))
    steps, middle, _, _ = seed_curve([long, short])
    # b ends at 1500; a has no eval there and is interpolated (15); b is interpolated at 1000 (20)
    assert list(steps) == [0, 1000, 1500]
    assert list(middle) == pytest.approx([0, (10 + 20) / 2, (15 + 30) / 2])


def test_plot_draws_seeds_as_one_labelled_curve_and_per_run_keeps_one_curve_each(tmp_path):
    runs = [write_seed(tmp_path, f'cartpole_ppo_s{s}', s, [s, 2 * s, 3 * s]) for s in range(3)]
    fig = curve_figure(runs)
    [line] = fig.axes[0].get_lines()
    assert line.get_label() == 'cartpole_ppo (IQM of 3 seeds, 95% CI)'
    assert list(line.get_ydata()) == pytest.approx([1, 2, 3])  # 3 seeds: nothing trimmed, the mean
    plt.close(fig)
    fig = curve_figure(runs, per_run=True)
    assert [line.get_label() for line in fig.axes[0].get_lines()] == [f'cartpole_ppo_s{s}' for s in range(3)]
    plt.close(fig)
    assert plot_curves(runs, tmp_path / 'seeds.png').read_bytes()[:8] == PNG


def test_a_seed_without_evaluations_is_named(tmp_path):
    done = write_seed(tmp_path, 'a', 0, [1, 2, 3])
    fresh = write_seed(tmp_path, 'b', 1, [])
    with pytest.raises(TidalError, match=f"^'{fresh}' has no evaluations yet: nothing to plot$"):
        seed_curve([done, fresh])


def test_a_seed_groups_curve_is_named_after_the_group_and_a_seed_run_twice_counts_once(tmp_path, capsys):
    group = tmp_path / 'cartpole_ppo'
    group.mkdir()
    (group / 'group.json').write_text('{"seeds": [0, 1, 2], "max_env_step": 2048, "max_train_iter": null}\n')
    seeds = [write_seed(group, f'seed_{s}', s, [s, 2 * s, 3 * s]) for s in range(3)]
    again = write_seed(tmp_path, 'cartpole_ppo_seed0_again', 0, [50, 50, 50])  # seed 0 run a second time
    [line] = curve_figure([group]).axes[0].get_lines()
    assert line.get_label() == 'cartpole_ppo (IQM of 3 seeds, 95% CI)'
    [only] = group_runs([*seeds, again, seeds[1]])  # seed 1's folder given twice
    assert only.run_dirs == tuple(seeds) and only.left_out == (again,)
    [line] = curve_figure([group, again]).axes[0].get_lines()
    assert line.get_label() == 'cartpole_ppo (IQM of 3 seeds, 95% CI)'
    assert list(line.get_ydata()) == pytest.approx([1, 2, 3])
    assert capsys.readouterr().err == (f"tidal: '{again}' repeats a seed that 'cartpole_ppo' already counts; left "
                                       f"out of its curve\n")


# --- a redrawn curve leaves nothing behind ----------------------------------------------------------

def test_a_saved_curve_is_freed_when_plot_curves_returns(tmp_path, monkeypatch):
    # a figure is a web of reference cycles: left to the collector's full passes (once every few dozen figures in a
    # run's process), every redrawn curve.png kept about 2 MB alive until then
    import weakref

    import tidal.worker.plot as plot
    run = write_run(tmp_path / 'run', f'{OLD_HEADER}\n0,0,0.0,-10,1.0,200\n1000,900,5.0,-5,1.0,200\n')
    drawn = []
    real = plot.curve_figure

    def spy(run_dirs, title='', per_run=False):
        fig = real(run_dirs, title, per_run)
        drawn.append(weakref.ref(fig))
        return fig

    monkeypatch.setattr(plot, 'curve_figure', spy)
    for _ in range(3):
        plot_curves([run], tmp_path / 'curve.png')
        assert drawn[-1]() is None
    assert len(drawn) == 3 and (tmp_path / 'curve.png').read_bytes()[:8] == PNG


def test_plot_curves_leaves_the_garbage_collector_as_it_found_it(tmp_path):
    import gc
    run = write_run(tmp_path / 'run', f'{OLD_HEADER}\n0,0,0.0,-10,1.0,200\n')
    assert gc.isenabled()
    plot_curves([run], tmp_path / 'curve.png')
    assert gc.isenabled()
    gc.disable()
    try:
        plot_curves([run], tmp_path / 'curve.png')
        assert not gc.isenabled()
    finally:
        gc.enable()

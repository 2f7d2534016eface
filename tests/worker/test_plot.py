"""Learning curves from evals.csv: the eval return, and the collect return dashed beside it where the file has it
(files written before that column existed still plot)."""
import math

import matplotlib.pyplot as plt

from tidal.worker.plot import curve_figure, plot_curves, read_evals

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

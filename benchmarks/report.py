"""Turns finished run folders into the benchmark's outputs: milestone values, a curve plot, a table.

Libraries evaluate on different env-step grids (tidal every N train iterations after its warm-up,
SB3 every N env steps), so a value "at" an env step is always the last evaluation at or before it;
cells say which env step they come from whenever it differs from the milestone.

Over seeds, tables quote the median and the interquartile mean (IQM). From MIN_CI_SEEDS seeds up the IQM comes
with its 95% stratified-bootstrap confidence interval (`tidal.rl_utils.stats`); with fewer, an interval of a
handful of values would cover far less than 95% (with 3 seeds it is about the seeds' range, and the IQM is the
mean), so the cell gives the seed count and the range instead: `IQM (n=3, range [low, high])`.
"""
import json
import math
import statistics
from pathlib import Path

from tidal.rl_utils.stats import iqm_ci

#: Bootstrap replicates behind every interval, and the seed that makes them repeatable.
CI_REPLICATES, CI_SEED = 2000, 0
#: The fewest seeds whose IQM is quoted with a 95% interval.
MIN_CI_SEEDS = 5


def seed_summary(values: list[float]) -> dict:
    """Median, IQM and the IQM's 95% stratified-bootstrap interval of per-seed values."""
    interval = iqm_ci(values, replicates=CI_REPLICATES, seed=CI_SEED)
    return {'median': statistics.median(values), 'iqm': interval.point, 'ci': [interval.low, interval.high],
            'n': len(values), 'range': [min(values), max(values)]}


def iqm_cell(summary: dict, digits: int = 1) -> str:
    """A `seed_summary` as 'IQM [low, high]' (the 95% interval) from MIN_CI_SEEDS seeds, else as
    'IQM (n=3, range [low, high])'."""
    if 'n' in summary and summary['n'] < MIN_CI_SEEDS:
        low, high = summary['range']
        return f"{summary['iqm']:.{digits}f} (n={summary['n']}, range [{low:.{digits}f}, {high:.{digits}f}])"
    low, high = summary['ci']
    return f"{summary['iqm']:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def iqm_of(values: list[float], digits: int = 1) -> str:
    """Per-seed values as the cell 'IQM [low, high]' that tables put beside their median."""
    return iqm_cell(seed_summary(values), digits)


def milestones(steps: int, parts: int = 4) -> list[int]:
    """Evenly spaced env steps at which returns are tabulated (5k/10k/15k/20k for 20k steps)."""
    return [steps * i // parts for i in range(1, parts + 1)]


def eval_at(evals: list[dict], env_step: int) -> dict | None:
    """The last evaluation at or before `env_step`, or None if there is none yet."""
    before = [row for row in evals if row['env_step'] <= env_step]
    return before[-1] if before else None


def fmt_steps(env_step: float) -> str:
    return f'{env_step / 1000:g}k' if env_step >= 1000 else f'{env_step:g}'


def median_band(runs: list[dict]) -> tuple[list[int], list[float], list[float], list[float]]:
    """Median, min and max eval return over seeds on the union of their env-step grids."""
    grid = sorted({row['env_step'] for run in runs for row in run['evals']})
    steps, med, low, high = [], [], [], []
    for env_step in grid:
        found = [eval_at(run['evals'], env_step) for run in runs]
        if any(row is None for row in found):
            continue  # not every seed has been evaluated yet
        values = [row['return_mean'] for row in found]
        steps.append(env_step)
        med.append(statistics.median(values))
        low.append(min(values))
        high.append(max(values))
    return steps, med, low, high


def plot_curves(curves: dict[str, list[dict]], path: Path, title: str,
                ylabel: str = 'eval return (deterministic)', references: dict[str, float] | None = None,
                published: dict[str, dict[int, float]] | None = None, xlabel: str = 'env steps') -> None:
    """One line per library (median over seeds) with a shaded min-max band; `references` are dashed levels,
    `published` curves ({env step: return}) dotted lines cut to the env steps the runs cover. `xlabel` names the
    runs' clock (an offline run's rows carry its gradient steps as their env steps)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, runs in curves.items():
        steps, med, low, high = median_band(runs)
        line, = ax.plot(steps, med, marker='o', markersize=3, label=f'{label} (median of {len(runs)})')
        ax.fill_between(steps, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
    for label, level in (references or {}).items():
        ax.axhline(level, color='0.3', linestyle='--', linewidth=1, label=label)
    last = max((row['env_step'] for runs in curves.values() for run in runs for row in run['evals']), default=0)
    for label, curve in (published or {}).items():
        points = sorted((step, value) for step, value in curve.items() if step <= last)
        ax.plot([p[0] for p in points], [p[1] for p in points], color='0.2', linestyle=':', marker='s',
                markersize=3, label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc='best')
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def library_row(runs: list[dict], marks: list[int]) -> dict:
    """Medians, IQMs and the IQMs' 95% intervals over seeds of the milestone returns (with the env steps
    they come from), and median speeds."""
    row: dict = {'seeds': len(runs), 'returns': {}}
    for mark in marks:
        found = [eval_at(run['evals'], mark) for run in runs]
        if any(f is None for f in found):
            row['returns'][mark] = None
            continue
        row['returns'][mark] = {**seed_summary([f['return_mean'] for f in found]),
                                'from_env_steps': sorted({f['env_step'] for f in found})}
    for key in ('wall_time', 'env_steps_per_s', 'updates_per_s'):
        row[key] = statistics.median(run['summary'][key] for run in runs)
    return row


def milestone_cell(cell: dict | None, mark: int, digits: int = 1) -> str:
    """A `library_row` milestone value, naming the env steps it comes from when they differ from `mark`."""
    if cell is None:
        return 'n/a'
    text = f"{cell['median']:.{digits}f}"
    used = cell['from_env_steps']
    if used != [mark]:
        text += ' (at ' + '/'.join(fmt_steps(s) for s in used) + ')'
    return text


def markdown_table(rows: dict[str, dict], marks: list[int], first_column: str = 'library') -> str:
    """Per library: median eval return at each milestone, the IQM of the last one (`iqm_cell`), median wall clock
    and throughputs."""
    head = [first_column, 'seeds'] + [f'return @{fmt_steps(m)}' for m in marks] + \
        [f'IQM @{fmt_steps(marks[-1])}', 'wall-clock (s)', 'env steps/s', 'updates/s']
    lines = ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    for label, row in rows.items():
        final = row['returns'][marks[-1]]
        cells = [label, str(row['seeds'])] + [milestone_cell(row['returns'][m], m) for m in marks] + \
            ['n/a' if final is None else iqm_cell(final)] + \
            [f"{row['wall_time']:.0f}", f"{row['env_steps_per_s']:.1f}", f"{row['updates_per_s']:.1f}"]
        lines.append('| ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines)


def steps_to(evals: list[dict], level: float) -> int | None:
    """Env step of the first evaluation whose mean return is at least `level`, None if there is none."""
    return next((row['env_step'] for row in evals if row['return_mean'] >= level), None)


def steps_to_summary(runs: list[dict], level: float) -> dict:
    """Env steps to `level` per seed and their median, a seed that never got there counting as slower
    than every seed that did (so the median is None, "not reached", once half the seeds miss it)."""
    per_seed = [steps_to(run['evals'], level) for run in runs]
    median = statistics.median(math.inf if s is None else s for s in per_seed)
    return {'level': level, 'median': None if math.isinf(median) else median, 'per_seed': per_seed,
            'reached': sum(s is not None for s in per_seed)}


def steps_cell(summary: dict) -> str:
    """A `steps_to_summary` as a table cell: the median and how many seeds reached the level."""
    median = 'not reached' if summary['median'] is None else fmt_steps(summary['median'])
    return f"{median} ({summary['reached']}/{len(summary['per_seed'])})"


def curve_mean(evals: list[dict], budget: int) -> float:
    """Mean eval return from the first evaluation to env step `budget`: the area under the curve that
    holds each evaluation until the next one (as `eval_at` reads it) divided by the span, so runs that
    evaluate on different env-step grids compare fairly."""
    rows = [row for row in evals if row['env_step'] <= budget]
    start = rows[0]['env_step']
    if budget <= start:
        return rows[-1]['return_mean']
    ends = [row['env_step'] for row in rows[1:]] + [budget]
    return sum(row['return_mean'] * (end - row['env_step']) for row, end in zip(rows, ends)) / (budget - start)


def arms_report(out: Path, title: str, labels: dict[str, str], runs: dict[str, list[dict]], steps: int,
                results: dict, solved: float | None = None, references: dict | None = None,
                axes: tuple[str, str] = ('env steps', 'eval return (deterministic)')) -> str:
    """The outputs of a benchmark of several arms over the same seeds (`runs[arm]`, one run per seed, `labels[arm]`
    its name): curves.png, results.json (`results` plus the table, finals, wall times and, with arms 'tidal' and
    'sb3', their side-by-side wall-clock ratio per seed) and table.md, whose text it returns. `solved`: a return
    whose env steps to reach it are tabled too. `axes`: the curves' (x, y) labels."""
    marks = milestones(steps, parts=4)
    rows = {labels[arm]: library_row(runs[arm], marks) for arm in labels}
    finals = {arm: [run['evals'][-1]['return_mean'] for run in runs[arm]] for arm in labels}
    walls = {arm: [run['summary']['wall_time'] for run in runs[arm]] for arm in labels}
    seeds = results['seeds']
    plot_curves({labels[arm]: runs[arm] for arm in labels}, out / 'curves.png',
                f'{title}\n{len(seeds)} seed(s): median, min-max band',
                ylabel=axes[1], xlabel=axes[0],
                references={f'solved ({solved:g})': solved} if solved is not None else references)
    results = {**results, 'steps': steps, 'table': rows, 'final_returns': finals, 'wall_time': walls,
               'runs': {arm: dict(zip(seeds, runs[arm])) for arm in labels}}
    head = '| arm | final return, median | final return, IQM | wall clock (s), median |'
    if solved is not None:
        results['steps_to_solved'] = {arm: steps_to_summary(runs[arm], solved) for arm in labels}
        head = f'| arm | steps to {solved:g} (median) ' + head[len('| arm '):]
    lines = [f'# {title}', '', markdown_table(rows, marks), '', head, '|---' * head.count(' | ') + '|---|']
    for arm in labels:
        solved_cell = f"{steps_cell(results['steps_to_solved'][arm])} | " if solved is not None else ''
        lines.append(f'| {labels[arm]} | {solved_cell}{statistics.median(finals[arm]):.1f} | {iqm_of(finals[arm])} | '
                     f'{statistics.median(walls[arm]):.0f} |')
    if 'tidal' in labels and 'sb3' in labels:
        ratios = [tidal / sb3 for tidal, sb3 in zip(walls['tidal'], walls['sb3'])]
        results['wall_clock_ratio_tidal_over_sb3'] = {'median_of_seed_ratios': statistics.median(ratios),
                                                      'per_seed': dict(zip(seeds, ratios))}
        lines += ['', f'tidal/SB3 wall-clock ratio ({labels["tidal"]} and SB3 side by side): '
                  f'**{statistics.median(ratios):.2f}** (median of the per-seed ratios '
                  f'{", ".join(f"{r:.2f}" for r in ratios)}).']
    lines += ['', '![curves](curves.png)', '']
    (out / 'results.json').write_text(json.dumps(results, indent=1) + '\n')
    text = '\n'.join(lines)
    (out / 'table.md').write_text(text)
    return text

"""Median, IQM and the IQM's 95% stratified-bootstrap interval of every committed benchmark, from the
per-seed runs its results.json keeps (the run folders themselves are not committed).

For each group of seeds (a library, arm or variant of one set) it reports the return at the budget (the
last evaluation at or before it, as the tables' last milestone column), the final return (the run's last
evaluation, as the tables' "final return" columns) and the mean eval return over the run
(`report.curve_mean`), and writes them to benchmarks/results/restat.md (and .json).

    python benchmarks/restat.py
"""
import argparse
import json
from pathlib import Path

from report import curve_mean, eval_at, fmt_steps, iqm_cell, seed_summary

RESULTS = Path(__file__).resolve().parent / 'results'


def seed_groups(node: object, path: tuple[str, ...] = (), steps: int | None = None):
    """(path, budget, runs) for every dict of per-seed runs ({'0': {'evals', 'summary'}, '1': ...}); the
    budget is the nearest enclosing 'steps'."""
    if not isinstance(node, dict):
        return
    steps = node.get('steps', steps) if isinstance(node.get('steps'), int) else steps
    if node and all(key.isdigit() and isinstance(run, dict) and 'evals' in run for key, run in node.items()):
        yield path, steps, list(node.values())
        return
    for key, child in node.items():
        yield from seed_groups(child, (*path, str(key)), steps)


def summaries(results: dict) -> list[dict]:
    """One row per group of at least two seeds."""
    rows = []
    for path, steps, runs in seed_groups(results):
        if len(runs) < 2 or steps is None:
            continue
        at_budget = [eval_at(run['evals'], steps)['return_mean'] for run in runs]
        finals = [run['evals'][-1]['return_mean'] for run in runs]
        means = [curve_mean(run['evals'], steps) for run in runs]
        rows.append({'group': ' / '.join(p for p in path if p not in ('runs', 'arms', 'envs', 'variants',
                                                                       'comparisons')),
                     'seeds': len(runs), 'steps': steps, 'at_budget': seed_summary(at_budget),
                     'final': seed_summary(finals), 'mean': seed_summary(means)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', type=Path, default=RESULTS / 'restat.md')
    args = parser.parse_args()
    lines = ['# Median and IQM over seeds, from each results.json', '',
             'Written by `python benchmarks/restat.py`. From 5 seeds the IQM comes with its 95% stratified-bootstrap '
             'interval, `IQM [low, high]`; with fewer, with the seed count and the range, `IQM (n=3, range [low, '
             'high])`. With 3 seeds the IQM trims nothing: it is the mean.', '']
    collected = {}
    for path in sorted([*RESULTS.glob('*/results.json'), *RESULTS.glob('*/*/results.json')]):
        rows = summaries(json.loads(path.read_text()))
        if not rows:
            continue
        name = path.parent.relative_to(RESULTS).as_posix()  # a set of several envs keeps one folder per env
        collected[name] = rows
        lines += [f'## {name}', '',
                  '| group | seeds | budget | at the budget: median | IQM | final (last eval): median '
                  '| IQM | mean over the run: median | IQM |', '|' + '---|' * 9]
        lines += ['| ' + ' | '.join([r['group'] or name, str(r['seeds']), fmt_steps(r['steps'])] + [
            cell for key in ('at_budget', 'final', 'mean') for cell in (f"{r[key]['median']:.1f}", iqm_cell(r[key]))])
            + ' |' for r in rows]
        lines.append('')
    args.out.write_text('\n'.join(lines))
    args.out.with_suffix('.json').write_text(json.dumps(collected, indent=1) + '\n')
    print('\n'.join(lines))


if __name__ == '__main__':
    main()

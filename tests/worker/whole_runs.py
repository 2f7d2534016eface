"""Helpers of the tests that train whole runs: a training process killed between two checkpoints, and a run's
evaluation rows without their clock."""
import csv


class Crash(Exception):
    """Stands for the training process killed between two checkpoints."""


def crash_at_step(monkeypatch, feed_cls, n):
    """The n-th step of `feed_cls` raises Crash (`monkeypatch.undo()` takes it back)."""
    original, calls = feed_cls.step, []

    def step(self, env_budget):
        calls.append(1)
        if len(calls) == n:
            raise Crash
        return original(self, env_budget)

    monkeypatch.setattr(feed_cls, 'step', step)


def eval_rows(run_dir):
    """A run's evals.csv without its wall-clock column, as written (NaN compares equal as text)."""
    with open(run_dir / 'evals.csv') as file:
        return [{key: value for key, value in row.items() if key != 'wall_time'} for row in csv.DictReader(file)]

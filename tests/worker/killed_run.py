"""A training process killed between two checkpoints, for the resume tests."""


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

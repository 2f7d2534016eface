"""Which evaluations record a video of their first episode, and where it goes."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from tidal.envs.video import resolve_video_format


class EvalVideos:
    """Every `every`-th evaluation (0: none) records `videos/eval_env<env step>.<suffix>` in the run folder."""

    def __init__(self, run_dir: Path, every: int, records: bool, notify: Callable[[str], None]) -> None:
        """`records`: this process writes the run folder; `notify` hears of a format that fell back."""
        self.run_dir, self.every = run_dir, every
        self._suffix = self._video_format(notify) if every and records else ''

    def due(self, evals_done: int, env_step: int) -> list[Path]:
        """The file for this evaluation's first episode (after `evals_done` evaluations), named by env step."""
        if not self.every or evals_done % self.every:
            return []
        return [self.run_dir / 'videos' / f'eval_env{env_step}.{self._suffix}']

    @staticmethod
    def _video_format(notify: Callable[[str], None]) -> str:
        suffix, fallback = resolve_video_format(None)
        if fallback:
            notify(f'policy.eval.evaluator.video_every: {fallback}')
        return suffix

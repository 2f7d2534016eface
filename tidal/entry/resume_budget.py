"""The budget a resumed run continues with: its checkpoint's, or a new one given to `tidal resume`
(`--max-env-step`, `--max-train-iter`), which may also continue a run whose budget had ended it."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from tidal.base.errors import ConfigError

#: How `Run` says a budget ended a run (its other endings, a stop value reached, are not continued).
BUDGET_ENDING = 'budget of '


@dataclass(frozen=True)
class Budget:
    max_env_step: Optional[int] = None
    max_train_iter: Optional[int] = None

    @property
    def given(self) -> bool:
        return self.max_env_step is not None or self.max_train_iter is not None

    def over(self, saved: Budget) -> Budget:
        """This budget's limits, the saved one's where this one gives none."""
        return Budget(saved.max_env_step if self.max_env_step is None else self.max_env_step,
                      saved.max_train_iter if self.max_train_iter is None else self.max_train_iter)

    def describe(self) -> str:
        parts = [f'{self.max_env_step} env steps' if self.max_env_step is not None else '',
                 f'{self.max_train_iter} train iterations' if self.max_train_iter is not None else '']
        return ' and '.join(part for part in parts if part) or 'none'


def saved_budget(state: dict[str, Any]) -> Budget:
    return Budget(state['max_env_step'], state['max_train_iter'])


def resumed_budget(run_dir: Path, state: dict[str, Any], new: Budget) -> Optional[Budget]:
    """The budget the run at `state` continues with, or None when it has ended and is left as it is (said in one
    line). A new budget must lie past where the run stands."""
    budget = new.over(saved_budget(state))
    finished = state.get('finished')
    if finished and not (new.given and finished.startswith(BUDGET_ENDING)):
        hint = (f' (tidal resume {run_dir} --max-env-step N continues it with a larger budget)'
                if finished.startswith(BUDGET_ENDING) else '')
        print(f"tidal: run '{run_dir}' already ended ({finished}); nothing to resume{hint}", flush=True)
        return None
    if new.given:
        env_step, train_iter = state['collector']['env_step'] * state.get('world_size', 1), state['train_iter']
        spent = ((budget.max_env_step is not None and env_step >= budget.max_env_step)
                 or (budget.max_train_iter is not None and train_iter >= budget.max_train_iter))
        if spent:
            raise ConfigError(f"run '{run_dir}' stands at env step {env_step}, train iteration {train_iter}: a "
                              f"budget of {budget.describe()} is already spent; give one past it")
    return budget

"""SAC on Walker2d-v5 (MuJoCo) with `hopper_sac`'s settings, which are Stable-Baselines3 zoo's for all three
MuJoCo locomotion tasks: one update per env step, [256, 256] networks, batch 256, lr 3e-4, 10k random warm-up
steps.

Needs the `mujoco` package (`pip install -e ".[mujoco]"`).
"""
import copy

from tidal.config.zoo import hopper_sac

main_config = copy.deepcopy(hopper_sac.main_config)
main_config['exp_name'] = 'walker2d_sac'
# gymnasium sets no reward threshold for Walker2d: a run needs a budget (--max-env-step)
main_config['env'].update(env_id='Walker2d-v5', stop_value=None)

create_config = copy.deepcopy(hopper_sac.create_config)

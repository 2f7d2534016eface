"""PPO on Walker2d-v5 (MuJoCo) with `hopper_ppo`'s settings, CleanRL's continuous-action PPO, which it runs
unchanged on every MuJoCo task.

Needs the `mujoco` package (`pip install -e ".[mujoco]"`).
"""
import copy

from tidal.config.zoo import hopper_ppo

main_config = copy.deepcopy(hopper_ppo.main_config)
main_config['exp_name'] = 'walker2d_ppo'
# gymnasium sets no reward threshold for Walker2d: a run needs a budget (--max-env-step)
main_config['env'].update(env_id='Walker2d-v5', stop_value=None)

create_config = copy.deepcopy(hopper_ppo.create_config)

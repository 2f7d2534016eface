"""SAC on HalfCheetah-v5 (MuJoCo) with `hopper_sac`'s settings, which are Stable-Baselines3 zoo's for all three
MuJoCo locomotion tasks: one update per env step, [256, 256] networks, batch 256, lr 3e-4, 10k random warm-up
steps. HalfCheetah never falls: every episode is truncated at 1000 steps, and bootstraps there.

Needs the `mujoco` package (`pip install -e ".[mujoco]"`).
"""
import copy

from tidal.config.zoo import hopper_sac

main_config = copy.deepcopy(hopper_sac.main_config)
main_config['exp_name'] = 'halfcheetah_sac'
main_config['env'].update(env_id='HalfCheetah-v5', stop_value=4800)  # gymnasium's reward threshold

create_config = copy.deepcopy(hopper_sac.create_config)

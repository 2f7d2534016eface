"""TAAC on Walker2d-v5 (MuJoCo) with `hopper_taac`'s settings: the run settings of the TAAC paper's MuJoCo runs,
with tidal's SAC temperature (from 0.2) and target entropy (-1 per action dimension).

Needs the `mujoco` package (`pip install -e ".[mujoco]"`).
"""
import copy

from tidal.config.zoo import hopper_taac

main_config = copy.deepcopy(hopper_taac.main_config)
main_config['exp_name'] = 'walker2d_taac'
# gymnasium sets no reward threshold for Walker2d: a run needs a budget (--max-env-step)
main_config['env'].update(env_id='Walker2d-v5', stop_value=None)

create_config = copy.deepcopy(hopper_taac.create_config)

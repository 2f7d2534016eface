"""TAAC on HalfCheetah-v5 (MuJoCo) with `hopper_taac`'s settings: the run settings of the TAAC paper's MuJoCo runs,
with tidal's SAC temperature (from 0.2) and target entropy (-1 per action dimension). `halfcheetah_taac_alf`
has ALF's temperatures, target entropy and reward normalisation.

Needs the `mujoco` package (`pip install -e ".[mujoco]"`).
"""
import copy

from tidal.config.zoo import hopper_taac

main_config = copy.deepcopy(hopper_taac.main_config)
main_config['exp_name'] = 'halfcheetah_taac'
main_config['env'].update(env_id='HalfCheetah-v5', stop_value=4800)  # gymnasium's reward threshold

create_config = copy.deepcopy(hopper_taac.create_config)

"""SAC on HalfCheetah-v5 (MuJoCo) under `halfcheetah_taac_alf`'s ALF settings, so that only the algorithm differs
from TAAC's run: `halfcheetah_sac`'s networks, batch and learning rates, with the target entropy -1.61 per
action dimension (ALF's min_prob=0.1), the temperature starting at 1 and rewards normalised with clip 1.

Needs the `mujoco` package (`pip install -e ".[mujoco]"`).
"""
import copy

from tidal.config.zoo import halfcheetah_sac

main_config = copy.deepcopy(halfcheetah_sac.main_config)
main_config['exp_name'] = 'halfcheetah_sac_alf'
main_config['policy']['normalize'] = dict(reward=True, clip=1.0)
main_config['policy']['learn'].update(alpha=1.0, target_entropy='-1.61*dim')

create_config = copy.deepcopy(halfcheetah_sac.create_config)

"""TAAC on HalfCheetah-v5 (MuJoCo) with ALF's TAAC settings, the ones the TAAC paper's runs used (Yu et al. 2021,
arXiv 2104.06521, trained with ALF), over `halfcheetah_taac`'s: the action's target entropy -1.61 per action
dimension (ALF's min_prob=0.1: ln 0.2, a uniform over a tenth of [-1, 1]), both temperatures starting at 1, and
rewards normalised with clip 1. The switch's target entropy stays tidal's default, 0.325 nats, which is ALF's
min_prob=0.1 rule for a two-way choice.

tidal's reward normalisation divides each replayed reward by the running std of the discounted return
(`policy.normalize.reward`, PPO's key); ALF's normaliser keeps running moments of the rewards themselves, so the
clip at 1 is ALF's but the scale it clips is tidal's. `halfcheetah_sac_alf` is the SAC arm under the same
settings.

Needs the `mujoco` package (`pip install -e ".[mujoco]"`).
"""
import copy

from tidal.config.zoo import halfcheetah_taac

main_config = copy.deepcopy(halfcheetah_taac.main_config)
main_config['exp_name'] = 'halfcheetah_taac_alf'
main_config['policy']['normalize'] = dict(reward=True, clip=1.0)
main_config['policy']['learn'].update(alpha=1.0, switch_alpha=1.0, target_entropy='-1.61*dim')

create_config = copy.deepcopy(halfcheetah_taac.create_config)

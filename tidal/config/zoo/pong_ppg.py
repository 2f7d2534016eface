"""PPG on Atari Pong (PongNoFrameskip-v4): `pong_ppo`'s policy phase (CleanRL's Atari PPO settings) under
the auxiliary phase of the PPG paper (Cobbe et al. 2020, arXiv 2009.04416, whose defaults are for Procgen):
an auxiliary phase every N_pi = 32 rollouts with E_aux = 6 epochs and beta_clone = 1, one policy-phase epoch
(E_pi = 1), and the paper's separate policy and value networks (two Nature CNNs).

Rewards are scaled by the running std of the return, as tidal's PPG does by default (the paper's Procgen
runs normalize rewards too), on top of the collector envs' clipping. The aux buffer keeps 32 rollouts of
uint8 frame stacks (32 x 1024 x 28 kB = 0.9 GB). Needs ale-py (`pip install -e ".[atari]"`).
"""
import copy
from typing import Any

from tidal.config.zoo import pong_ppo

main_config: dict[str, Any] = copy.deepcopy(pong_ppo.main_config)
main_config['exp_name'] = 'pong_ppg'
policy = main_config['policy']
policy['model']['share_encoder'] = False
policy['learn']['epoch_per_collect'] = 1
# a minibatch is 8 envs' whole rollouts (8 x 128 rows)
policy['aux'] = dict(interval=32, mini_batch_size=8, mini_batch_length=None, num_updates_per_train_iter=6,
                     policy_kl_loss_weight=1.0)
# one rollout makes 4 updates: evaluate every 50 rollouts (51200 env steps), as pong_ppo
policy['eval'] = dict(evaluator=dict(eval_freq=200, eval_freq_env_steps=0))

create_config = dict(copy.deepcopy(pong_ppo.create_config), policy=dict(type='ppg'))

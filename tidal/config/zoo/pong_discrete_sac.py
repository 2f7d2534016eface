"""Discrete SAC on Atari Pong (PongNoFrameskip-v4), with the settings of CleanRL's sac_atari.py, which
follow Christodoulou 2019 ("Soft Actor-Critic for Discrete Action Settings", arXiv 1910.07207): the
Nature CNN for the actor and each critic, one update of batch 64 every 4 env steps, Adam at 3e-4 for
both networks, gamma 0.99, a 20000-step random warm-up, a learned temperature.

Where tidal differs: the target critics follow by Polyak averaging (0.005 per update) rather than a hard
copy every 8000 env steps; the temperature aims at the paper's 0.98 log|A| (CleanRL: 0.89 log|A|); the
buffer holds 100k transitions (the paper's whole Atari-100k budget; CleanRL keeps 1M), since it stores each
frame stack twice (obs and next_obs, 56 kB a transition as uint8: 5.6 GB at 100k, 56 GB at 1M).
Needs ale-py (`pip install -e ".[atari]"`).
"""
from typing import Any

from tidal.config.zoo.pong_ppo import NATURE_CNN

main_config: dict[str, Any] = dict(
    exp_name='pong_discrete_sac',
    env=dict(
        env_id='PongNoFrameskip-v4',
        # 4 envs, 4 steps each, then 4 updates: one update per 4 env steps, as CleanRL's one env does
        collector_env_num=4,
        evaluator_env_num=4,
        n_evaluator_episode=4,
        stop_value=20,
    ),
    policy=dict(
        random_collect_size=20_000,
        model=dict(type='discrete_conv_qac', import_names=['tidal.models.conv_qac'], **NATURE_CNN),
        learn=dict(
            update_per_collect=4,
            batch_size=64,
            learning_rate_q=3e-4,
            learning_rate_policy=3e-4,
            learning_rate_alpha=3e-4,
            discount_factor=0.99,
            target_theta=0.005,
        ),
        collect=dict(n_sample=16),
        # every 12500 updates (50000 env steps)
        eval=dict(evaluator=dict(eval_freq=12_500, eval_freq_env_steps=0)),
        other=dict(replay_buffer=dict(replay_buffer_size=100_000)),
    ),
)

create_config = dict(
    env=dict(type='atari'),
    env_manager=dict(type='base'),
    policy=dict(type='discrete_sac'),
)

"""PPO on Atari Pong (PongNoFrameskip-v4: no sticky actions, as in the PPO paper and DI-engine's configs).

Settings of CleanRL's ppo_atari.py and the SB3 zoo's Atari PPO: 8 envs x 128 steps per rollout, 4 epochs
of 4 minibatches (256 rows), Adam at 2.5e-4 annealed linearly to 0 over the 10M env steps those results
use, clip 0.1, entropy 0.01, value weight 0.5, gamma 0.99, GAE lambda 0.95, gradient norm 0.5, the Nature
CNN shared by the policy and the value. The collector's envs end an episode at each lost life and clip
rewards to their sign; evaluation plays whole games and reports the game score (-21 to 21).

Needs ale-py (`pip install -e ".[atari]"`), which ships the ROMs.
"""
from typing import Any

#: The Nature CNN (Mnih et al. 2015): three conv layers, then 512 ReLU units, pixels scaled to [0, 1].
NATURE_CNN = dict(conv_channels=[32, 64, 64], conv_kernel_sizes=[8, 4, 3], conv_strides=[4, 2, 1],
                  encoder_hidden_sizes=[512], activation='relu', pixel_scale=1 / 255)
#: Env steps of the published runs (10M agent steps = 40M frames); the learning rate reaches 0 there.
BUDGET = 10_000_000

main_config: dict[str, Any] = dict(
    exp_name='pong_ppo',
    env=dict(
        env_id='PongNoFrameskip-v4',
        collector_env_num=8,
        evaluator_env_num=4,
        n_evaluator_episode=4,
        stop_value=20,
    ),
    policy=dict(
        model=dict(**NATURE_CNN, share_encoder=True),
        learn=dict(
            epoch_per_collect=4,
            batch_size=256,
            learning_rate=2.5e-4,
            lr_decay=True,
            decay_env_steps=BUDGET,
            clip_ratio=0.1,
            # CleanRL clips the value prediction with the same 0.1
            value_clip_ratio=0.1,
            value_weight=0.5,
            entropy_weight=0.01,
            adv_norm=True,
            grad_clip_norm=0.5,
        ),
        # 128 steps of each of the 8 envs per rollout
        collect=dict(n_sample=1024, discount_factor=0.99, gae_lambda=0.95),
        # one rollout makes 4 x 4 = 16 updates: evaluate every 50 rollouts (51200 env steps)
        eval=dict(evaluator=dict(eval_freq=800, eval_freq_env_steps=0)),
    ),
)

create_config = dict(
    env=dict(type='atari'),
    env_manager=dict(type='base'),
    policy=dict(type='ppo'),
)

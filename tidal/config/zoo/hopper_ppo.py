"""PPO on Hopper-v5 (MuJoCo) with the settings of CleanRL's continuous-action PPO, which it runs unchanged on
every MuJoCo task (Huang et al. 2022, "The 37 Implementation Details of PPO"): one env and rollouts of 2048
steps, 10 epochs of 32 minibatches (64 rows), lr 3e-4 decayed linearly to 0 over 1M env steps, clip 0.2 for the
ratio and the value, gamma 0.99, GAE lambda 0.95, no entropy bonus, gradient norm clipped to 0.5, observations
normalised and rewards scaled by running statistics (both clipped to 10), separate [64, 64] tanh actor and
critic with orthogonal init and a state-independent log std.

Needs the `mujoco` package (`pip install -e ".[mujoco]"`).
"""
from typing import Any

main_config: dict[str, Any] = dict(
    exp_name='hopper_ppo',
    env=dict(
        env_id='Hopper-v5',
        collector_env_num=1,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        # (gymnasium's reward threshold for Hopper: its registered measure of a solved task)
        stop_value=3800,
    ),
    policy=dict(
        normalize=dict(obs=True, reward=True, clip=10.0),
        model=dict(encoder_hidden_sizes=[64, 64], activation='tanh', share_encoder=False, log_std_init=0.0),
        learn=dict(
            epoch_per_collect=10,
            batch_size=64,
            learning_rate=3e-4,
            clip_ratio=0.2,
            value_clip_ratio=0.2,
            value_weight=0.5,
            entropy_weight=0.0,
            grad_clip_norm=0.5,
            lr_decay=True,
            decay_env_steps=1_000_000,
        ),
        collect=dict(n_sample=2048, discount_factor=0.99, gae_lambda=0.95),
        # one rollout makes 10 x 32 = 320 updates: evaluate every 5 rollouts (10240 env steps)
        eval=dict(evaluator=dict(eval_freq=1600, eval_freq_env_steps=0)),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='ppo'),
)

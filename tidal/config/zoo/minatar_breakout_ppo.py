"""PPO on MinAtar Breakout (10x10 images, 4 channels of 0/1): a small conv net, 8 envs.

Needs the `minatar` package (`pip install -e ".[minatar]"`); its gymnasium id is MinAtar/Breakout-v1.
"""

main_config = dict(
    exp_name='minatar_breakout_ppo',
    env=dict(
        env_id='MinAtar/Breakout-v1',
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=None,
    ),
    policy=dict(
        # rewards divided by the running std of the return (value targets of order 1), as in the PPG config,
        # so that the two compare
        normalize=dict(reward=True),
        model=dict(conv_channels=[16], conv_kernel_sizes=[3], conv_strides=[1], encoder_hidden_sizes=[128],
                   activation='relu', share_encoder=False),
        learn=dict(
            epoch_per_collect=4,
            batch_size=256,
            learning_rate=2.5e-4,
            clip_ratio=0.2,
            entropy_weight=0.01,
        ),
        # 128 steps of each of the 8 envs per rollout
        collect=dict(n_sample=1024, discount_factor=0.99, gae_lambda=0.95),
        # one rollout makes 4 x 4 = 16 updates: evaluate every 10 rollouts (10240 env steps)
        eval=dict(evaluator=dict(eval_freq=160)),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='ppo'),
)

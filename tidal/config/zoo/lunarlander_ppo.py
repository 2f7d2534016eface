"""PPO on LunarLander-v3 (discrete): 8 envs, long discount, a small entropy bonus."""

main_config = dict(
    exp_name='lunarlander_ppo',
    env=dict(
        env_id='LunarLander-v3',
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=200,
    ),
    policy=dict(
        # rewards divided by the running std of the return (value targets of order 1), as in the PPG config,
        # so that the two compare
        normalize=dict(reward=True),
        model=dict(encoder_hidden_sizes=[64, 64], activation='tanh', share_encoder=False),
        learn=dict(
            epoch_per_collect=4,
            batch_size=64,
            learning_rate=3e-4,
            clip_ratio=0.2,
            entropy_weight=0.01,
        ),
        # 256 steps of each of the 8 envs per rollout
        collect=dict(n_sample=2048, discount_factor=0.999, gae_lambda=0.98),
        # one rollout makes 4 x 32 = 128 updates: evaluate every 5 rollouts (10240 env steps)
        eval=dict(evaluator=dict(eval_freq=640)),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='ppo'),
)

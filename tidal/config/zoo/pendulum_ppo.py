"""PPO on Pendulum-v1: 4 envs, a short discount and VecNormalize-style observation and reward scaling."""

main_config = dict(
    exp_name='pendulum_ppo',
    env=dict(
        env_id='Pendulum-v1',
        collector_env_num=4,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=-200,
    ),
    policy=dict(
        normalize=dict(obs=True, reward=True),
        model=dict(encoder_hidden_sizes=[64, 64], activation='tanh', share_encoder=False),
        learn=dict(
            epoch_per_collect=10,
            batch_size=64,
            learning_rate=1e-3,
            clip_ratio=0.2,
            entropy_weight=0.0,
        ),
        # 1024 steps of each of the 4 envs per rollout
        collect=dict(n_sample=4096, discount_factor=0.9, gae_lambda=0.95),
        # one rollout makes 10 x 64 = 640 updates: evaluate every rollout
        eval=dict(evaluator=dict(eval_freq=640)),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='ppo'),
)

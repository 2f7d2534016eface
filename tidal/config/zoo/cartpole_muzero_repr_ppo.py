"""PPO on the latent of a MuZero model, CartPole-v1: cartpole_ppo's PPO settings, so the two compare, with the
model trained on its own replay after each rollout and by PPO's losses through h."""

main_config = dict(
    exp_name='cartpole_muzero_repr_ppo',
    env=dict(
        env_id='CartPole-v1',
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=500,
    ),
    policy=dict(
        rl_type='ppo',
        # PPO as in cartpole_ppo, on the 64-dim latent instead of the 4 observations
        normalize=dict(reward=True),
        model=dict(encoder_hidden_sizes=[64, 64], activation='tanh', share_encoder=False),
        learn=dict(
            epoch_per_collect=10,
            batch_size=128,
            learning_rate=1e-3,
            clip_ratio=0.2,
            entropy_weight=0.0,
            lr_decay=True,
            clip_decay=True,
            decay_env_steps=100_000,
        ),
        # 64 steps of each of the 8 envs per rollout
        collect=dict(n_sample=512, discount_factor=0.99, gae_lambda=0.95),
        # one rollout makes 10 x 4 = 40 updates: evaluate every 2 rollouts (1024 env steps)
        eval=dict(evaluator=dict(eval_freq=80)),
        repr=dict(
            # PPO's gradients train h too (the default, as in ALF): with h trained by MuZero's losses alone
            # (CartPole's reward is always 1, so they say little about which action to take) 1 of 3 seeds reached
            # 475 in 50k env steps; with PPO's gradients all 3 did, at 18.4k (median; benchmarks/results.md, section 11)
            encoder_grad=True,
            num_unroll_steps=5,
            td_steps=10,
            discount_factor=0.99,
            learning_rate=1e-3,
            target_update_period=100,
            model=dict(latent_size=64, hidden_sizes=[64, 64], value_support_size=15, reward_support_size=5),
            # the model updates after each rollout and its 40 PPO updates (one training iteration, the default
            # interval), so PPO learns from every rollout with the h that collected it: 4 updates (the tuned
            # number, where ALF's default is 10) of 256 starts on the latest 20k env steps
            training=dict(interval=1, interval_unit='train_iter', num_updates_per_train_iter=4, mini_batch_size=256,
                          mini_batch_length=1, replay_buffer_length=20_000, initial_collect_steps=1024),
        ),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='muzero_repr'),
)

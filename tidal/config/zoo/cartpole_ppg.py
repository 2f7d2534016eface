"""PPG on CartPole-v1: cartpole_ppo's policy phase on a disjoint policy-value network, with an auxiliary
phase every 8 rollouts (4096 env steps)."""

main_config = dict(
    exp_name='cartpole_ppg',
    env=dict(
        env_id='CartPole-v1',
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=500,
    ),
    policy=dict(
        # rewards divided by the running std of the return: value targets of order 1, which PPG's auxiliary
        # phase needs (its value losses share the policy network with a KL term of order 0.01)
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
        collect=dict(n_sample=512, discount_factor=0.99, gae_lambda=0.95),
        # 8 rollouts of 64 steps x 8 envs; a minibatch is 8 envs' whole rollouts (512 rows)
        aux=dict(interval=8, mini_batch_size=8, mini_batch_length=None, num_updates_per_train_iter=6,
                 policy_kl_loss_weight=1.0),
        eval=dict(evaluator=dict(eval_freq=80)),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='ppg'),
)

"""PPG on LunarLander-v3 (discrete): lunarlander_ppo's policy phase on a disjoint policy-value network,
with an auxiliary phase every 8 rollouts (16384 env steps)."""

main_config = dict(
    exp_name='lunarlander_ppg',
    env=dict(
        env_id='LunarLander-v3',
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=200,
    ),
    policy=dict(
        # rewards divided by the running std of the return: value targets of order 1, which PPG's auxiliary
        # phase needs (its value losses share the policy network with a KL term of order 0.01)
        normalize=dict(reward=True),
        model=dict(encoder_hidden_sizes=[64, 64], activation='tanh', share_encoder=False),
        learn=dict(
            epoch_per_collect=4,
            batch_size=64,
            learning_rate=3e-4,
            clip_ratio=0.2,
            entropy_weight=0.01,
        ),
        collect=dict(n_sample=2048, discount_factor=0.999, gae_lambda=0.98),
        # a minibatch is 8 sequences of 64 steps of one env (512 rows)
        aux=dict(interval=8, mini_batch_size=8, mini_batch_length=64, num_updates_per_train_iter=6,
                 policy_kl_loss_weight=1.0),
        eval=dict(evaluator=dict(eval_freq=640)),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='ppg'),
)

"""PPG on MinAtar Breakout: minatar_breakout_ppo's policy phase on a disjoint policy-value network with
conv encoders, and an auxiliary phase every 8 rollouts (8192 env steps; the aux buffer keeps the
images as uint8).

Needs the `minatar` package (`pip install -e ".[minatar]"`); its gymnasium id is MinAtar/Breakout-v1.
"""

main_config = dict(
    exp_name='minatar_breakout_ppg',
    env=dict(
        env_id='MinAtar/Breakout-v1',
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=None,
    ),
    policy=dict(
        # rewards divided by the running std of the return: value targets of order 1, which PPG's auxiliary
        # phase needs (its value losses share the policy network with a KL term of order 0.01)
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
        collect=dict(n_sample=1024, discount_factor=0.99, gae_lambda=0.95),
        # a minibatch is 8 envs' whole rollouts (8 x 128 rows)
        aux=dict(interval=8, mini_batch_size=8, mini_batch_length=None, num_updates_per_train_iter=6,
                 policy_kl_loss_weight=1.0),
        eval=dict(evaluator=dict(eval_freq=160)),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='ppg'),
)

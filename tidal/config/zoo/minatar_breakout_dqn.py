"""DQN on MinAtar Breakout (10x10 images, 4 channels of 0/1): MinAtar's own DQN network (16 3x3 filters, one
dense layer of 128) with rl-baselines3-zoo's Atari DQN schedule scaled to a 300k-step run: one env, one update
of 32 every 4 env steps, the target copied every 1000 env steps (250 updates), epsilon from 1 to 0.01 over the
first 30k env steps, 5000 random steps before the first update. Double Q and the dueling head are on, as in
tidal's DQN defaults; 3-step returns and prioritized replay with importance weights, off by default, are set here.

Needs the `minatar` package (`pip install -e ".[minatar]"`); its gymnasium id is MinAtar/Breakout-v1.
"""

main_config = dict(
    exp_name='minatar_breakout_dqn',
    env=dict(
        env_id='MinAtar/Breakout-v1',
        collector_env_num=1,
        evaluator_env_num=1,
        n_evaluator_episode=10,
        stop_value=None,
    ),
    policy=dict(
        model=dict(conv_channels=[16], conv_kernel_sizes=[3], conv_strides=[1], encoder_hidden_size_list=[128],
                   dueling=True),
        nstep=3,
        discount_factor=0.99,
        priority=True,
        priority_IS_weight=True,
        random_collect_size=5000,
        learn=dict(update_per_collect=1, batch_size=32, learning_rate=1e-4, target_update_freq=250,
                   double_q=True, loss='huber', grad_clip_norm=10),
        collect=dict(n_sample=4),
        eval=dict(evaluator=dict(eval_freq=1_000_000_000, eval_freq_env_steps=25_000)),
        other=dict(
            eps=dict(type='linear', start=1.0, end=0.01, decay=30_000),
            replay_buffer=dict(replay_buffer_size=100_000),
        ),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='dqn'),
)

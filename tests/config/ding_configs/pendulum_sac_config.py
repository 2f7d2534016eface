from easydict import EasyDict

# SAC on the inverted pendulum: swing up and balance. Episodes last 200 steps, so the
# time limit is not a real end: ignore_done keeps bootstrapping through it.
pendulum_sac_config = dict(
    exp_name='pendulum_sac_seed0',
    env=dict(
        collector_env_num=8,
        evaluator_env_num=5,
        # (bool) Let the policy act in [-1, 1] and rescale to the torque bounds.
        act_scale=True,
        n_evaluator_episode=5,
        stop_value=-200,
    ),
    policy=dict(
        cuda=True,
        random_collect_size=1000,
        model=dict(
            obs_shape=3,
            action_shape=1,
            twin_critic=True,
            action_space='reparameterization',
            actor_head_hidden_size=128,
            critic_head_hidden_size=128,
        ),
        learn=dict(
            update_per_collect=1,
            batch_size=128,
            learning_rate_q=1e-3,
            learning_rate_policy=1e-3,
            learning_rate_alpha=3e-4,
            ignore_done=True,
            target_theta=0.005,
            discount_factor=0.99,
            alpha=0.2,
            auto_alpha=True,
            value_network=False,
        ),
        collect=dict(
            n_sample=8,
            unroll_len=1,
        ),
        eval=dict(evaluator=dict(eval_freq=100, )),
        other=dict(replay_buffer=dict(replay_buffer_size=100000, ), ),
    ),
)
pendulum_sac_config = EasyDict(pendulum_sac_config)
main_config = pendulum_sac_config

pendulum_sac_create_config = dict(
    env=dict(
        type='pendulum',
        import_names=['dizoo.classic_control.pendulum.envs.pendulum_env'],
    ),
    env_manager=dict(type='base'),
    policy=dict(
        type='sac',
        import_names=['ding.policy.sac'],
    ),
    replay_buffer=dict(type='naive', ),
)
pendulum_sac_create_config = EasyDict(pendulum_sac_create_config)
create_config = pendulum_sac_create_config

if __name__ == "__main__":
    # or you can enter `ding -m serial -c pendulum_sac_config.py -s 0`
    from ding.entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)

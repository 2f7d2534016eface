from easydict import EasyDict

collector_env_num = 4
evaluator_env_num = 4
lunarlander_sac_config = dict(
    exp_name='lunarlander_cont_sac_seed0',
    env=dict(
        env_id='LunarLanderContinuous-v2',
        collector_env_num=collector_env_num,
        evaluator_env_num=evaluator_env_num,
        # (bool) Scale the actions from [-1, 1] to the engine throttle range.
        act_scale=True,
        n_evaluator_episode=evaluator_env_num,
        stop_value=200,
    ),
    policy=dict(
        cuda=False,
        random_collect_size=1000,
        model=dict(
            obs_shape=8,
            action_shape=2,
            twin_critic=True,
            action_space='reparameterization',
            actor_head_hidden_size=128,
            critic_head_hidden_size=128,
        ),
        learn=dict(
            update_per_collect=64,
            batch_size=128,
            learning_rate_q=1e-3,
            learning_rate_policy=3e-4,
            learning_rate_alpha=3e-4,
            target_theta=0.005,
            discount_factor=0.99,
            auto_alpha=True,
        ),
        collect=dict(n_sample=64, ),
        eval=dict(evaluator=dict(eval_freq=1000, ), ),
        other=dict(replay_buffer=dict(replay_buffer_size=200000, ), ),
    ),
)
lunarlander_sac_config = EasyDict(lunarlander_sac_config)
main_config = lunarlander_sac_config

lunarlander_sac_create_config = dict(
    env=dict(
        type='lunarlander',
        import_names=['dizoo.box2d.lunarlander.envs.lunarlander_env'],
    ),
    env_manager=dict(type='subprocess'),
    policy=dict(type='sac'),
)
lunarlander_sac_create_config = EasyDict(lunarlander_sac_create_config)
create_config = lunarlander_sac_create_config

if __name__ == '__main__':
    # or you can enter `ding -m serial -c lunarlander_cont_sac_config.py -s 0`
    from ding.entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)

from easydict import EasyDict

acrobot_discrete_sac_config = dict(
    exp_name='acrobot_discrete_sac_seed0',
    env=dict(
        collector_env_num=4,
        evaluator_env_num=4,
        n_evaluator_episode=4,
        stop_value=-100,
        # DI-engine env manager options (shared memory for the observations)
        manager=dict(shared_memory=False, ),
    ),
    policy=dict(
        cuda=False,
        random_collect_size=500,
        model=dict(
            obs_shape=6,
            action_shape=3,
            twin_critic=True,
            actor_head_hidden_size=128,
            actor_head_layer_num=1,
            critic_head_hidden_size=128,
            critic_head_layer_num=1,
        ),
        learn=dict(
            update_per_collect=8,
            batch_size=128,
            learning_rate_q=5e-4,
            learning_rate_policy=5e-4,
            learning_rate_alpha=1e-4,
            target_theta=0.005,
            discount_factor=0.99,
            alpha=0.2,
            auto_alpha=True,
            log_space=True,
            ignore_done=False,
        ),
        collect=dict(
            n_sample=32,
            unroll_len=1,
            collector=dict(collect_print_freq=1000, ),
        ),
        eval=dict(evaluator=dict(eval_freq=500, ), ),
        other=dict(
            # Exploration on top of the sampled policy: the sparse reward needs it early on.
            eps=dict(
                type='exp',
                start=1.0,
                end=0.5,
                decay=30000,
            ),
            replay_buffer=dict(replay_buffer_size=100000, ),
        ),
    ),
)
acrobot_discrete_sac_config = EasyDict(acrobot_discrete_sac_config)
main_config = acrobot_discrete_sac_config

acrobot_discrete_sac_create_config = dict(
    env=dict(
        type='acrobot',
        import_names=['dizoo.classic_control.acrobot.envs.acrobot_env'],
    ),
    env_manager=dict(type='base'),
    policy=dict(type='discrete_sac'),
)
acrobot_discrete_sac_create_config = EasyDict(acrobot_discrete_sac_create_config)
create_config = acrobot_discrete_sac_create_config

if __name__ == "__main__":
    # or you can enter `ding -m serial -c acrobot_discrete_sac_config.py -s 0`
    from ding.entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)

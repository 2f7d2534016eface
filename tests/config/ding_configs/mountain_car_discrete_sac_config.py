from easydict import EasyDict

mountain_car_sac_config = dict(
    exp_name='mountain_car_discrete_sac_seed0',
    env=dict(
        collector_env_num=2,
        evaluator_env_num=1,
        n_evaluator_episode=1,
        stop_value=-110,
        manager=dict(shared_memory=False, reset_inplace=True),
    ),
    policy=dict(
        cuda=False,
        multi_gpu=False,
        random_collect_size=40,
        model=dict(
            obs_shape=2,
            action_shape=3,
            twin_critic=True,
            actor_head_hidden_size=16,
            actor_head_layer_num=1,
            critic_head_hidden_size=16,
            critic_head_layer_num=1,
        ),
        learn=dict(
            update_per_collect=1,
            batch_size=16,
            learning_rate_q=1e-3,
            learning_rate_policy=1e-3,
            ignore_done=False,
            learner=dict(hook=dict(save_ckpt_after_iter=200, )),
        ),
        collect=dict(n_sample=20, collector=dict(collect_print_freq=1000, ), ),
        eval=dict(evaluator=dict(eval_freq=100, n_episode=1, ), ),
        other=dict(replay_buffer=dict(replay_buffer_size=1000, max_use=16, ), ),
    ),
)
mountain_car_sac_config = EasyDict(mountain_car_sac_config)
main_config = mountain_car_sac_config

mountain_car_sac_create_config = dict(
    env=dict(
        type='mountain_car',
        import_names=['dizoo.classic_control.mountain_car.envs.mtcar_env'],
    ),
    env_manager=dict(type='async_subprocess'),
    policy=dict(type='discrete_sac'),
)
mountain_car_sac_create_config = EasyDict(mountain_car_sac_create_config)
create_config = mountain_car_sac_create_config

if __name__ == "__main__":
    from ding.entry import serial_pipeline
    serial_pipeline([main_config, create_config], seed=0)

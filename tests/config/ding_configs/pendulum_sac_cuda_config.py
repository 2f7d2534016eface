from easydict import EasyDict

pendulum_sac_cuda_config = dict(
    exp_name='pendulum_sac_cuda_seed0',
    env=dict(
        collector_env_num=1,
        evaluator_env_num=1,
        act_scale=True,
        n_evaluator_episode=1,
        stop_value=-250,
        manager=dict(shared_memory=False, ),
    ),
    policy=dict(
        # DI-engine uses CUDA when it is available; tidal runs this on the CPU otherwise.
        cuda=True,
        multi_gpu=False,
        on_policy=False,
        random_collect_size=50,
        model=dict(
            obs_shape=3,
            action_shape=1,
            twin_critic=True,
            action_space='reparameterization',
            actor_head_hidden_size=16,
            actor_head_layer_num=2,
            critic_head_hidden_size=16,
            critic_head_layer_num=1,
        ),
        learn=dict(
            update_per_collect=1,
            batch_size=16,
            learning_rate_q=1e-3,
            learning_rate_policy=1e-3,
            ignore_done=True,
            reparameterization=True,
            learner=dict(hook=dict(log_show_after_iter=50, save_ckpt_after_iter=100)),
        ),
        collect=dict(n_sample=10, ),
        eval=dict(evaluator=dict(eval_freq=100, )),
        other=dict(replay_buffer=dict(replay_buffer_size=1000, ), ),
    ),
)
main_config = EasyDict(pendulum_sac_cuda_config)

pendulum_sac_cuda_create_config = dict(
    env=dict(
        type='pendulum',
        import_names=['dizoo.classic_control.pendulum.envs.pendulum_env'],
    ),
    env_manager=dict(type='base'),
    policy=dict(type='sac'),
)
create_config = EasyDict(pendulum_sac_cuda_create_config)

if __name__ == "__main__":
    from ding.entry import serial_pipeline
    serial_pipeline([main_config, create_config], seed=0)

from easydict import EasyDict

acrobot_ppo_config = dict(
    exp_name='acrobot_ppo_seed0',
    env=dict(
        collector_env_num=2,
        evaluator_env_num=1,
        n_evaluator_episode=1,
        stop_value=-100,
        manager=dict(shared_memory=False, ),
    ),
    policy=dict(
        cuda=False,
        on_policy=True,
        action_space='discrete',
        model=dict(
            obs_shape=6,
            action_shape=3,
            action_space='discrete',
            share_encoder=True,
            encoder_hidden_size_list=[16, 16],
            actor_head_hidden_size=16,
            actor_head_layer_num=0,
            critic_head_hidden_size=16,
            critic_head_layer_num=0,
        ),
        learn=dict(
            epoch_per_collect=2,
            batch_size=32,
            learning_rate=1e-3,
            entropy_weight=0.01,
            learner=dict(hook=dict(log_show_after_iter=10, )),
        ),
        collect=dict(
            n_sample=100,
            discount_factor=0.99,
            gae_lambda=0.95,
            collector=dict(get_train_sample=True, ),
        ),
        eval=dict(evaluator=dict(eval_freq=100, ), ),
    ),
)
acrobot_ppo_config = EasyDict(acrobot_ppo_config)
main_config = acrobot_ppo_config
acrobot_ppo_create_config = dict(
    env=dict(
        type='acrobot',
        import_names=['dizoo.classic_control.acrobot.envs.acrobot_env'],
    ),
    env_manager=dict(type='base'),
    policy=dict(type='ppo'),
)
acrobot_ppo_create_config = EasyDict(acrobot_ppo_create_config)
create_config = acrobot_ppo_create_config

if __name__ == "__main__":
    from ding.entry import serial_pipeline_onpolicy
    serial_pipeline_onpolicy((main_config, create_config), seed=0)

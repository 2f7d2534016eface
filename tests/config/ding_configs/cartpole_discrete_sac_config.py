from easydict import EasyDict
from ding.entry import serial_pipeline

cartpole_discrete_sac_config = dict(
    exp_name='cartpole_discrete_sac_seed0',
    env=dict(
        collector_env_num=2,
        evaluator_env_num=1,
        n_evaluator_episode=1,
        stop_value=195,
    ),
    policy=dict(
        cuda=False,
        random_collect_size=40,
        model=dict(
            obs_shape=4,
            action_shape=2,
            twin_critic=True,
            actor_head_hidden_size=16,
            critic_head_hidden_size=16,
        ),
        learn=dict(
            update_per_collect=2,
            batch_size=16,
            learning_rate_q=5e-3,
            learning_rate_policy=5e-3,
            learning_rate_alpha=3e-4,
            ignore_done=False,
            target_theta=0.01,
            discount_factor=0.99,
            alpha=0.2,
            auto_alpha=False,
        ),
        collect=dict(
            env_num=2,
            n_sample=16,
            unroll_len=1,
        ),
        command=dict(),
        eval=dict(
            evaluator=dict(eval_freq=50, ),
            env_num=1,
        ),
        other=dict(replay_buffer=dict(replay_buffer_size=1000, ), ),
    ),
)
cartpole_discrete_sac_config = EasyDict(cartpole_discrete_sac_config)
main_config = cartpole_discrete_sac_config

cartpole_discrete_sac_create_config = dict(
    env=dict(
        type='cartpole',
        import_names=['dizoo.classic_control.cartpole.envs.cartpole_env'],
    ),
    env_manager=dict(type='base'),
    policy=dict(type='discrete_sac'),
)
cartpole_discrete_sac_create_config = EasyDict(cartpole_discrete_sac_create_config)
create_config = cartpole_discrete_sac_create_config

if __name__ == "__main__":
    serial_pipeline((main_config, create_config), seed=0)

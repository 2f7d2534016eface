from easydict import EasyDict

# SQIL (arXiv 1905.11108) with a SAC learner: expert transitions are rewarded 1, the agent's own 0.
# DI-engine replays an expert checkpoint (collect.model_path) to make the expert data.
pendulum_sqil_sac_config = dict(
    exp_name='pendulum_sqil_sac_seed0',
    env=dict(
        collector_env_num=8,
        evaluator_env_num=5,
        act_scale=True,
        n_evaluator_episode=5,
        stop_value=-250,
    ),
    policy=dict(
        cuda=False,
        random_collect_size=1000,
        expert_random_collect_size=1000,
        model=dict(
            obs_shape=3,
            action_shape=1,
            twin_critic=True,
            action_space='reparameterization',
            actor_head_hidden_size=128,
            critic_head_hidden_size=128,
        ),
        nstep=1,
        discount_factor=0.97,
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
            reparameterization=True,
            auto_alpha=True,
        ),
        collect=dict(
            n_sample=16,
            # Where the expert's weights are; fill in before running DI-engine's SQIL entry.
            model_path='model_path_placeholder',
            unroll_len=1,
        ),
        eval=dict(evaluator=dict(eval_freq=100, )),
        other=dict(replay_buffer=dict(replay_buffer_size=100000, ), ),
    ),
)
pendulum_sqil_sac_config = EasyDict(pendulum_sqil_sac_config)
main_config = pendulum_sqil_sac_config

pendulum_sqil_sac_create_config = dict(
    env=dict(
        type='pendulum',
        import_names=['dizoo.classic_control.pendulum.envs.pendulum_env'],
    ),
    env_manager=dict(type='base'),
    policy=dict(type='sqil_sac'),
    replay_buffer=dict(type='naive', ),
)
pendulum_sqil_sac_create_config = EasyDict(pendulum_sqil_sac_create_config)
create_config = pendulum_sqil_sac_create_config

if __name__ == "__main__":
    # or you can enter `ding -m serial_sqil -c pendulum_sqil_sac_config.py -s 0`
    # with the config of the expert named below
    from ding.entry import serial_pipeline_sqil
    from dizoo.classic_control.pendulum.config.pendulum_sac_config import main_config as expert_main_config
    from dizoo.classic_control.pendulum.config.pendulum_sac_config import create_config as expert_create_config
    serial_pipeline_sqil(
        [main_config, create_config], [expert_main_config, expert_create_config], max_env_step=100000, seed=0
    )

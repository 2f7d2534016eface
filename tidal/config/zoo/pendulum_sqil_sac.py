"""SQIL-SAC on Pendulum-v1: imitation from expert demonstrations, without the env's reward.

Record the demonstrations first, from a trained `pendulum_sac` run:

    tidal collect-demos pendulum_sac --ckpt pendulum_sac/ckpt/best.pt --episodes 10 -o pendulum_expert.npz
"""

main_config = dict(
    exp_name='pendulum_sqil_sac',
    env=dict(
        env_id='Pendulum-v1',
        collector_env_num=1,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=-200,
    ),
    policy=dict(
        expert_data_path='pendulum_expert.npz',
        random_collect_size=1000,
        model=dict(
            actor_hidden_sizes=[256, 256],
            critic_hidden_sizes=[256, 256],
        ),
        learn=dict(
            update_per_collect=1,
            batch_size=256,  # 128 agent + 128 expert transitions
            learning_rate_q=3e-4,
            learning_rate_policy=3e-4,
            learning_rate_alpha=3e-4,
        ),
        collect=dict(n_sample=1),
        eval=dict(evaluator=dict(eval_freq=1000)),
        other=dict(replay_buffer=dict(replay_buffer_size=100_000)),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='sqil_sac'),
)

"""CrossQ on Hopper-v5 (MuJoCo) with the RL Zoo's CrossQ settings for MuJoCo: [256, 256] actor, [2048, 2048]
critics, lr 1e-3, 5000 random steps first, the actor stepping every third critic step, one update per env step.

The wide critics cost about 16 times the arithmetic of SAC's per update: on a CPU, narrower critics
(`policy.model.critic_hidden_sizes=[256,256]`) train several times faster. Needs the `mujoco` package
(`pip install -e ".[mujoco]"`).
"""
from typing import Any

main_config: dict[str, Any] = dict(
    exp_name='hopper_crossq',
    env=dict(
        env_id='Hopper-v5',
        collector_env_num=1,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        # (gymnasium's reward threshold for Hopper: its registered measure of a solved task)
        stop_value=3800,
    ),
    policy=dict(
        random_collect_size=5000,
        model=dict(
            actor_hidden_sizes=[256, 256],
            critic_hidden_sizes=[2048, 2048],
        ),
        learn=dict(
            update_per_collect=1,
            batch_size=256,
            actor_update_freq=3,
            # Hopper ends by falling (terminated: no bootstrap) or by its 1000-step limit (truncated: bootstrap)
            ignore_done=False,
        ),
        collect=dict(n_sample=1),
        eval=dict(evaluator=dict(eval_freq=5000)),
        other=dict(replay_buffer=dict(replay_buffer_size=1_000_000)),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='crossq'),
)

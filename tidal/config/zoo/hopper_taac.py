"""TAAC on Hopper-v5 (MuJoCo) with the run settings of the TAAC paper's MuJoCo runs (Yu et al. 2021, arXiv
2104.06521, trained with ALF; those of ALF's locomotion benchmark): one env, one update per env step, [256, 256]
actor and critics, lr 3e-4, 10k random warm-up steps, a replay of 1M steps. Its temperatures and target
entropies are tidal's SAC defaults, not ALF's: the action's temperature starts at 0.2 (ALF: 1) towards -1 per
action dimension (ALF: -1.61), and rewards are not normalised (ALF: clip 1); `halfcheetah_taac_alf` has ALF's.

Where ALF samples 256 transitions per update, TAAC's compare-through return needs sequences: 64 sequences of
4 steps give the same 256 transitions per update, as in `pendulum_taac`, so an update costs what SAC's does
on the same data.

Needs the `mujoco` package (`pip install -e ".[mujoco]"`).
"""
from typing import Any

main_config: dict[str, Any] = dict(
    exp_name='hopper_taac',
    env=dict(
        env_id='Hopper-v5',
        collector_env_num=1,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        # (gymnasium's reward threshold for Hopper: its registered measure of a solved task)
        stop_value=3800,
    ),
    policy=dict(
        random_collect_size=10_000,
        model=dict(
            actor_hidden_sizes=[256, 256],
            critic_hidden_sizes=[256, 256],
        ),
        learn=dict(
            update_per_collect=1,
            batch_size=64,
            learning_rate_q=3e-4,
            learning_rate_policy=3e-4,
            learning_rate_alpha=3e-4,
            # falling ends an episode (terminated: no bootstrap); the 1000-step limit truncates it (bootstrap)
            ignore_done=False,
        ),
        collect=dict(n_sample=1, unroll_len=4),
        # evaluated as hopper_sac is, so that the two compare: every 5000 env steps (the default schedule)
        eval=dict(evaluator=dict(eval_freq=5000, eval_freq_env_steps=5000)),
        other=dict(replay_buffer=dict(replay_buffer_size=1_000_000)),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='taac'),
)

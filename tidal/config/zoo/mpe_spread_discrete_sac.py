"""Multi-agent discrete SAC (MASAC) on PettingZoo's MPE simple_spread_v3: 3 agents, 25-step episodes.

Needs the 'marl' extra (pip install -e ".[marl]"). One actor shared by the agents acts on each agent's
own observation; twin critics score each agent's actions from the env's global state.
"""

main_config = dict(
    exp_name='mpe_spread_discrete_sac',
    env=dict(
        env_id='mpe2.simple_spread_v3',
        env_kwargs=dict(N=3, max_cycles=25),
        collector_env_num=8,
        evaluator_env_num=8,
        n_evaluator_episode=32,  # 25-step episodes: 32 cost little and steady the curve
        stop_value=None,  # returns stay negative (distances to the landmarks)
        team_reward=False,  # each agent learns from its own reward; True: the team's sum, as DI-engine's env
    ),
    policy=dict(
        multi_agent=True,
        random_collect_size=5000,
        model=dict(
            agent_id=True,
            actor_hidden_sizes=[128, 128],
            critic_hidden_sizes=[128, 128],
        ),
        learn=dict(
            update_per_collect=50,  # 50 updates of 320 per 1600 env steps, as DI-engine's MASAC configs
            batch_size=320,
            learning_rate_q=5e-4,
            learning_rate_policy=5e-4,
            learning_rate_alpha=5e-5,
            target_theta=0.005,
            discount_factor=0.99,
            alpha=0.2,
            auto_alpha=True,
        ),
        collect=dict(n_sample=1600),
        # 50 updates per collection: evaluate every 8 collections (12.8k env steps)
        eval=dict(evaluator=dict(eval_freq=400)),
        other=dict(replay_buffer=dict(replay_buffer_size=1_000_000)),
    ),
)

create_config = dict(
    env=dict(type='pettingzoo'),
    env_manager=dict(type='base'),
    policy=dict(type='discrete_sac'),
)

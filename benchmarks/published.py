"""Published learning curves that tidal's benchmarks are set beside, at the same env step.

The Stable-Baselines3 zoo publishes one trained run per task with its training monitor files
(github.com/DLR-RM/rl-trained-agents, commit cd35bde610f4045bf2e0731c8f4c88d22df8fc85). The values here
are read off those files: the mean return of the last 10 (MuJoCo) or 20 (Atari) training episodes that
ended at or before the env step. They are training returns of one seed (a stochastic policy for SAC and
PPO, the full game score over all lives for Atari) on the gym v3 / NoFrameskip-v4 task versions, so they
place a curve, they do not test it. Atari env steps are agent steps: 4 frames each.
"""

SB3_ZOO_SOURCE = 'SB3 zoo trained agent (rl-trained-agents@cd35bde, 1 seed, training episodes)'

#: {task: {env step: mean training return}}, SAC with the zoo's settings (those of tidal's `hopper_sac`).
SB3_ZOO_SAC = {
    'Hopper': {20_000: 216.8, 40_000: 284.4, 60_000: 511.6, 80_000: 620.4, 100_000: 1053.6, 1_000_000: 2793.6},
    'HalfCheetah': {20_000: -221.8, 40_000: 988.7, 60_000: 2898.5, 80_000: 3853.5, 100_000: 4442.9,
                    1_000_000: 8996.7},
    'Walker2d': {20_000: 146.8, 40_000: 226.7, 60_000: 386.2, 80_000: 359.0, 100_000: 398.7, 1_000_000: 4008.3},
}

#: {game: {env step: mean game score}}, PPO with the zoo's Atari settings (those of tidal's `pong_ppo`).
SB3_ZOO_PPO_ATARI = {
    'Breakout': {100_000: 3.6, 250_000: 11.5, 500_000: 15.2, 750_000: 23.0, 1_000_000: 25.4, 1_500_000: 44.0,
                 2_000_000: 62.9, 10_000_000: 384.3},
    'Pong': {100_000: -19.8, 250_000: -20.2, 500_000: -16.9, 750_000: -11.8, 1_000_000: -9.2, 1_500_000: -1.4,
             2_000_000: 17.9, 10_000_000: 21.0},
}

#: Final results as published (mean +- std over seeds), for the budgets tidal cannot run here.
PUBLISHED_FINAL = {
    'sac': {'Hopper': {'SB3 zoo (1M)': '2326 +- 1130', 'CleanRL Hopper-v4 (1M, 3 seeds)': '2310 +- 342'},
            'HalfCheetah': {'SB3 zoo (1M)': '9535 +- 100', 'CleanRL HalfCheetah-v4 (1M, 3 seeds)': '9635 +- 1424'},
            'Walker2d': {'SB3 zoo (1M)': '3863', 'CleanRL Walker2d-v4 (1M, 3 seeds)': '3591 +- 911'}},
    'ppo_atari': {'Pong': {'SB3 zoo (10M)': '20.99', 'CleanRL (10M, 3 seeds)': '20.36 +- 0.20'},
                  'Breakout': {'SB3 zoo (10M)': '398', 'CleanRL (10M, 3 seeds)': '415 +- 28'}},
}


def published_at(curve: dict[int, float], env_step: int) -> tuple[int, float] | None:
    """The published point at the largest tabulated env step not past `env_step`."""
    before = [step for step in curve if step <= env_step]
    return (max(before), curve[max(before)]) if before else None

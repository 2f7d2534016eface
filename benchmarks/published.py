"""Published learning curves that tidal's benchmarks are set beside, at the same env step.

The Stable-Baselines3 zoo publishes one trained run per task with its training monitor files
(github.com/DLR-RM/rl-trained-agents, commit cd35bde610f4045bf2e0731c8f4c88d22df8fc85). The values here
are read off those files: the mean return of the last 10 (MuJoCo) or 20 (Atari) training episodes that
ended at or before the env step. They are training returns of one seed (a stochastic policy for SAC and
PPO, the full game score over all lives for Atari) on the gym v3 / NoFrameskip-v4 task versions, so they
place a curve, they do not test it. Atari env steps are agent steps: 4 frames each.
"""

SB3_ZOO_SOURCE = 'SB3 zoo run (1 seed, training episodes)'

#: {task: {env step: mean training return}}, SAC with the zoo's settings (those of tidal's `hopper_sac`).
SB3_ZOO_SAC = {
    'Hopper': {10_000: 26.4, 15_000: 182.4, 20_000: 216.8, 25_000: 454.0, 30_000: 335.2, 35_000: 291.1,
        40_000: 284.4, 45_000: 470.2, 50_000: 435.7, 55_000: 391.2, 60_000: 511.6, 65_000: 545.7,
        70_000: 713.8, 75_000: 681.8, 80_000: 620.4, 85_000: 828.6, 90_000: 930.3, 95_000: 1010.5,
        100_000: 1053.6, 200_000: 2650.7, 500_000: 2494.2, 1_000_000: 2793.6},
    'HalfCheetah': {10_000: -284.3, 15_000: -269.7, 20_000: -221.8, 25_000: -161.6, 30_000: 212.5, 35_000: 536.9,
        40_000: 988.7, 45_000: 1521.6, 50_000: 2141.9, 55_000: 2882.9, 60_000: 2898.5, 65_000: 3062.5,
        70_000: 3437.3, 75_000: 3612.0, 80_000: 3853.5, 85_000: 4017.6, 90_000: 4161.7, 95_000: 4368.5,
        100_000: 4442.9, 200_000: 6204.0, 500_000: 8061.9, 1_000_000: 8996.7},
    'Walker2d': {10_000: 3.0, 15_000: 244.0, 20_000: 146.8, 25_000: 268.3, 30_000: 242.1, 35_000: 289.3,
        40_000: 226.7, 45_000: 292.3, 50_000: 233.0, 55_000: 393.4, 60_000: 386.2, 65_000: 351.5,
        70_000: 300.3, 75_000: 304.4, 80_000: 359.0, 85_000: 369.1, 90_000: 448.1, 95_000: 530.7,
        100_000: 398.7, 200_000: 615.5, 500_000: 2159.3, 1_000_000: 4008.3},
}

#: {game: {env step: mean game score}}, PPO with the zoo's Atari settings (those of tidal's `pong_ppo`).
SB3_ZOO_PPO_ATARI = {
    'Breakout': {50_000: 1.5, 75_000: 2.5, 100_000: 3.6, 125_000: 7.2, 150_000: 6.3, 175_000: 7.7, 200_000: 9.2,
        225_000: 9.1, 250_000: 11.5, 275_000: 12.4, 300_000: 11.2, 325_000: 13.9, 350_000: 12.3,
        375_000: 10.9, 400_000: 13.3, 425_000: 14.3, 450_000: 14.9, 475_000: 13.1, 500_000: 15.2,
        750_000: 23.0, 1_000_000: 25.4, 1_500_000: 44.0, 2_000_000: 62.9, 5_000_000: 288.7,
        10_000_000: 384.3},
    'Pong': {50_000: -20.2, 75_000: -19.8, 100_000: -19.8, 125_000: -20.2, 150_000: -20.4, 175_000: -20.1,
        200_000: -20.5, 225_000: -20.2, 250_000: -20.2, 275_000: -20.2, 300_000: -20.4, 325_000: -19.9,
        350_000: -20.1, 375_000: -20.1, 400_000: -19.3, 425_000: -18.9, 450_000: -18.2, 475_000: -18.7,
        500_000: -16.9, 750_000: -11.8, 1_000_000: -9.2, 1_500_000: -1.4, 2_000_000: 17.9, 5_000_000: 20.9,
        10_000_000: 21.0},
}

#: {task: {env step: mean training return}}, PPO with the SB3 zoo's own tuned MuJoCo settings (not CleanRL's,
#: which tidal's `hopper_ppo` uses): a curve to place tidal's, from a differently tuned run.
SB3_ZOO_PPO_MUJOCO = {
    'Hopper': {25_000: 807.3, 50_000: 443.1, 75_000: 122.2, 100_000: 232.5, 125_000: 34.7, 150_000: 309.0,
        175_000: 982.1, 200_000: 335.1, 225_000: 13.3, 250_000: 235.7, 275_000: 975.5, 300_000: 981.2,
        500_000: 32.7, 1_000_000: 1743.6},
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

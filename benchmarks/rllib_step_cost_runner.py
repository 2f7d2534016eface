"""CPU time of one env step of RLlib's PPO EnvRunner, for `step_cost.py`, beside tidal's.

Runs inside the RLlib virtual environment. For each sleep per step it builds `rllib_scale_runner.py`'s PPO with
no remote EnvRunners, so the driver's local EnvRunner (one env) samples in this thread, and times
`sample(num_timesteps=64)` with the thread's CPU clock: the sleep costs no CPU, so what is left is the runner's
own work per step (acting, the env, its connectors). Prints one JSON object: {step_seconds: [cpu_us, wall_us]}.

    OMP_NUM_THREADS=1 benchmarks/.venv-rllib/bin/python benchmarks/rllib_step_cost_runner.py 0 0.002 0.01
"""
import argparse
import json
import time

import torch

from rllib_scale_runner import build_config
from rllib_ppo_runner import build_algo
from step_cost_timing import FRAGMENT, time_fragments


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('step_seconds', type=float, nargs='+', help='sleeps per env step to measure')
    args = parser.parse_args()
    torch.set_num_threads(1)
    import ray

    results = {}
    for seconds in args.step_seconds:
        # the batch sizes of one runner's fragment, sampled by the driver's own EnvRunner instead of a remote one
        config = build_config(argparse.Namespace(num_env_runners=1, step_seconds=seconds, seed=0))
        config.env_runners(num_env_runners=0)
        algo = build_algo(config, 0)
        runner = algo.env_runner_group.local_env_runner
        results[seconds] = time_fragments(lambda: runner.sample(num_timesteps=FRAGMENT, random_actions=False),
                                          seconds)
        algo.stop()
        ray.shutdown()
    print(json.dumps(results))


if __name__ == '__main__':
    main()

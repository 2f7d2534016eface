"""The timing both sides of `step_cost.py` share (standard library only: RLlib's venv imports it too)."""
import statistics
import time
from typing import Callable

FRAGMENT = 64  # env steps per timed call, as a Ray worker's share of a rollout in scale.py
REPEATS = 5


def time_fragments(collect: Callable[[], object], step_seconds: float) -> tuple[float, float]:
    """(CPU us, wall us) per env step of `collect()` (FRAGMENT steps), medians of REPEATS timings of about two
    seconds each after one warm-up call; CPU is this thread's clock, which a sleep does not advance."""
    collect()
    calls = max(1, round(2.0 / (FRAGMENT * max(step_seconds, 5e-4))))
    cpu, wall = [], []
    for _ in range(REPEATS):
        start_cpu, start_wall = time.thread_time(), time.perf_counter()
        for _ in range(calls):
            collect()
        cpu.append((time.thread_time() - start_cpu) / (calls * FRAGMENT) * 1e6)
        wall.append((time.perf_counter() - start_wall) / (calls * FRAGMENT) * 1e6)
    return statistics.median(cpu), statistics.median(wall)

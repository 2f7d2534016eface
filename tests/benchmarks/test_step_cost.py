"""benchmarks/step_cost.py: CPU per env step by the thread clock (sleeps add none), and the ceiling it implies."""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / 'benchmarks'))
from step_cost import report  # noqa: E402
from step_cost_timing import FRAGMENT, time_fragments  # noqa: E402


def test_a_sleep_counts_as_wall_time_and_not_as_cpu():
    cpu, wall = time_fragments(lambda: time.sleep(FRAGMENT * 1e-4), step_seconds=0.05)  # 0.1 ms per "step"
    assert wall >= 100
    assert cpu < wall / 4


def test_busy_work_counts_as_cpu():
    def spin():
        end = time.perf_counter() + FRAGMENT * 1e-4
        while time.perf_counter() < end:
            pass
    cpu, wall = time_fragments(spin, step_seconds=0.05)  # 100 us of spinning per "step"
    assert wall >= 100
    assert cpu > 20  # all of it unless another process took the core for most of the spin


def test_the_ceiling_is_the_cores_over_the_cpu_per_step():
    rows = [{'step_seconds': 0.01, 'tidal_cpu_us': 2000.0, 'rllib_cpu_us': 4000.0, 'torch_add_us': 200.0},
            {'step_seconds': 0.0, 'tidal_cpu_us': 500.0, 'rllib_cpu_us': None, 'torch_add_us': 5.0}]
    table = report({'rows': rows}, cores=2)
    assert '| 10 ms | 2000 | 1,000 | 4000 | 500 | 200.0 |' in table
    assert '| 0 ms | 500 | 4,000 | n/a | n/a | 5.0 |' in table

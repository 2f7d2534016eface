"""Fixtures of the worker tests: one local Ray per test module that asks for it."""
import pytest


@pytest.fixture(scope='module')
def local_ray():
    """A local Ray of 2 CPUs for the module, as tidal starts one: its own (address 'local'), whatever cluster
    `ray start` left on record; workers at normal priority."""
    ray = pytest.importorskip('ray')
    started = not ray.is_initialized()
    if started:
        monkey = pytest.MonkeyPatch()
        monkey.setenv('RAY_worker_niceness', '0')
        ray.init(address='local', num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    if started:
        ray.shutdown()
        monkey.undo()

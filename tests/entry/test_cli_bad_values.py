"""Values that once ended `tidal train` in a traceback: each is one line on stderr and exit code 2, or,
where the value is valid, accepted."""
import math

import pytest

import tidal.entry.pipelines as pipelines
from tidal.entry.cli import main


@pytest.fixture
def started(monkeypatch):
    """The configs `tidal train` would start runs with; no run starts."""
    configs = []
    monkeypatch.setattr(pipelines, 'start_run', lambda cfg, *args: configs.append(cfg))
    return configs


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'Traceback' not in err, err
    return err.strip()


@pytest.mark.parametrize('override, message', [
    ('policy.model=[1, 2]', "config key 'policy.model' must be a mapping, got list ([1, 2])"),
    ('env.env_kwargs=[1]', "config key 'env.env_kwargs' must be a mapping, got list ([1])"),
    ("env.env_kwargs={'max_episode_steps': -5}",
     "gymnasium env 'Pendulum-v1' cannot be made with env.env_kwargs {'max_episode_steps': -5}: "
     "ValueError: Expect the `max_episode_steps` to be positive, actually: -5"),
    ('env.env_id=CarRacing-v3',
     "env 'CarRacing-v3' gives policy.model.obs_shape [96, 96, 3] but model 'continuous_qac' takes int > 0 or "
     "list[int > 0] of length 1; MLP models take flat vectors (use an encoder model for images)"),
])
def test_bad_values_are_one_line_naming_the_key(capsys, started, override, message):
    assert main(['train', 'pendulum_sac', '--max-env-step', '300', '--set', override]) == 2
    assert one_error_line(capsys) == f'tidal: error: {message}'
    assert started == []


def test_an_infinite_stop_value_is_accepted_from_the_command_line(started):
    assert main(['train', 'pendulum_sac', '--max-env-step', '300', '--set', 'env.stop_value=inf']) == 0
    assert started[0].env.stop_value == math.inf

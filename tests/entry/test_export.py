"""`tidal export`: one file that maps env observations to env actions as the eval mode does, checked on real
observations, for each policy family; and its one-line refusals."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import gymnasium
import numpy as np
import onnxruntime
import pytest
import torch

from tidal.base.errors import TidalError
from tidal.config import resolve_config_source, save_config
from tidal.entry.cli import main
from tidal.entry.export import export_policy
from tidal.entry.setup import load_config
from tidal.envs.action_bounds import action_bounds
from tidal.envs.gym_env import GymEnv
from tidal.worker.builders import build_policy
from tidal.worker.checkpoint import save_checkpoint

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.load` is deprecated:DeprecationWarning")
COUNTER_ID = 'tidal_test/Counter-v0'  # registered by tests/conftest.py
FORMATS = ['torchscript', 'onnx']
PARITY = re.compile(r'parity: max \|exported - (eval mode|model)\| = (\S+) over 128 real observations')
EXACT = 'parity: exported == eval mode on all 128 real observations (discrete: exact equality)'


def make_run(tmp_path: Path, config, overrides=(), prepare=None, name='run') -> tuple[Path, object]:
    """A run folder as training leaves it (config.yaml, ckpt/best.pt), its policy's weights moved off their
    initial values by `prepare(policy)` instead of by training, which would take longer."""
    cfg = load_config(config, 0, [f'exp_name={tmp_path / name}', *overrides])
    run = tmp_path / name
    save_config(cfg, run / 'config.yaml')
    policy = build_policy(cfg, enable_field=('eval',))
    torch.manual_seed(1)
    with torch.no_grad():
        for parameter in policy.model.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.3)
    if prepare is not None:
        prepare(policy)
    save_checkpoint({'policy': policy.weights()}, run / 'ckpt' / 'best.pt')
    return run, policy


def parity_of(summary: str) -> float:
    found = PARITY.search(summary)
    assert found, summary
    return float(found.group(2))


def load_exported(path: Path, format: str):
    """The exported file as a function of numpy inputs."""
    if format == 'torchscript':
        module = torch.jit.load(str(path))
        return lambda *xs: module(*(torch.as_tensor(x) for x in xs)).detach().numpy()
    session = onnxruntime.InferenceSession(str(path))
    names = [i.name for i in session.get_inputs()]
    return lambda *xs: session.run(None, dict(zip(names, xs)))[0]


def counter_config(policy_type: str):
    """The counter env with dict observations: the action mask is [1, count % 2], so action 1 is refused
    on even counts."""
    main_config, create_config = resolve_config_source(f'cartpole_{policy_type}')
    main_config['env'].update(env_id=COUNTER_ID, stop_value=None, env_kwargs={'dict_obs': True, 'terminate_at': 50})
    return main_config, create_config


# ----- end to end: a trained run through the CLI ------------------------------------------------------

def test_trained_sac_run_exports_through_the_cli_and_acts_in_the_env_action_range(tmp_path, capsys):
    run = tmp_path / 'sac'
    assert main(['train', 'pendulum_sac', '--max-env-step', '150', '--exp-name', str(run), '--no-progress',
                 '--set', 'policy.random_collect_size=100', '--set', 'policy.learn.batch_size=16',
                 '--set', 'policy.model.actor_hidden_sizes=[16]', '--set', 'policy.model.critic_hidden_sizes=[16]',
                 '--set', 'env.n_evaluator_episode=1']) == 0
    capsys.readouterr()
    for format in FORMATS:
        assert main(['export', str(run), '--format', format]) == 0
        out = capsys.readouterr().out
        path = run / 'export' / f"policy{'.pt' if format == 'torchscript' else '.onnx'}"
        assert f'exported {run}/ckpt/best.pt as {format}: {path}' in out
        assert 'input  obs [batch, 3] float32' in out and 'output action [batch, 1] float32' in out
        assert "actions clipped to [-1, 1], then mapped onto the env's bounds [-2, 2]" in out
        assert parity_of(out) <= 1e-5
        assert not list(path.parent.glob('.*.tmp'))  # written through a temporary file, renamed
        action = np.asarray(load_exported(path, format)(np.random.randn(7, 3).astype(np.float32) * 5))
        assert action.shape == (7, 1) and np.abs(action).max() <= 2.0


def test_a_checkpoint_file_finds_its_run_folder_and_output_goes_where_asked(tmp_path):
    run, _ = make_run(tmp_path, 'pendulum_sac')
    (run / 'ckpt' / 'best.pt').rename(run / 'ckpt' / 'latest.pt')
    result = export_policy(run / 'ckpt' / 'latest.pt', 'torchscript', tmp_path / 'out' / 'actor.pt')
    assert result.path == tmp_path / 'out' / 'actor.pt' and result.path.is_file()
    assert result.checkpoint == run / 'ckpt' / 'latest.pt'


# ----- the env's action scale --------------------------------------------------------------------------

@pytest.mark.parametrize('format', FORMATS)
def test_an_extreme_pre_tanh_mean_maps_to_pendulums_bound_of_2(tmp_path, format):
    def saturate(policy):  # mu = +-50 whatever the observation: tanh(mu) = +-1
        with torch.no_grad():
            policy.model.actor_head.mu.weight.zero_()
            policy.model.actor_head.mu.bias.fill_(50.0 if format == 'torchscript' else -50.0)
    run, _ = make_run(tmp_path, 'pendulum_sac', prepare=saturate)
    act = load_exported(export_policy(run, format).path, format)
    action = np.asarray(act(np.zeros((3, 3), np.float32)))
    assert action.tolist() == ([[2.0]] * 3 if format == 'torchscript' else [[-2.0]] * 3)


def test_the_action_map_is_the_adapters_own_wrappers():
    env = GymEnv({'env_id': 'Pendulum-v1'}).make('evaluator')
    bounds = action_bounds(env)
    assert bounds is not None and bounds.policy_low.tolist() == [-1.0] and bounds.env_high.tolist() == [2.0]
    layer, actions = env, np.array([[-3.0], [-1.0], [-0.25], [0.5], [1.0], [7.0]], np.float32)
    expected = []
    for action in actions:  # what each action wrapper in the chain does to it, outermost first
        layer, value = env, action
        while isinstance(layer, gymnasium.Wrapper):
            if isinstance(layer, gymnasium.ActionWrapper):
                value = layer.action(value)
            layer = layer.env
        expected.append(value)
    np.testing.assert_allclose(bounds.env_action(actions), np.array(expected), atol=1e-6)
    assert action_bounds(GymEnv({'env_id': 'CartPole-v1'}).make('evaluator')) is None


# ----- parity per policy family --------------------------------------------------------------------

@pytest.mark.parametrize('format', FORMATS)
def test_masked_discrete_sac_takes_the_mask_as_an_input_and_never_picks_a_refused_action(tmp_path, format):
    def prefer_action_1(policy):
        with torch.no_grad():
            policy.model.actor_head.logits.bias.copy_(torch.tensor([0.0, 100.0]))
    run, _ = make_run(tmp_path, counter_config('discrete_sac'), prepare=prefer_action_1)
    result = export_policy(run, format)
    summary = result.summary()
    assert 'input  obs [batch, 1] float32' in summary and 'input  action_mask [batch, 2] int8' in summary
    assert 'output action [batch] int64' in summary and EXACT in summary
    act = load_exported(result.path, format)
    obs = np.array([[2.0], [3.0], [4.0], [5.0]], np.float32)
    mask = np.array([[1, 0], [1, 1], [1, 0], [1, 1]], np.int8)
    assert np.asarray(act(obs, mask)).tolist() == [0, 1, 0, 1]


@pytest.mark.parametrize('format', FORMATS)
def test_ppo_freezes_its_observation_statistics_into_the_file(tmp_path, format):
    def observe(policy):  # non-trivial statistics: mean ~(3, -1, 10), std ~(5, 0.5, 2)
        scale, shift = torch.tensor([5.0, 0.5, 2.0]), torch.tensor([3.0, -1.0, 10.0])
        data = torch.randn(500, 3, dtype=torch.float64) * scale + shift
        policy.running_statistics()['obs_rms'].update(data)
    run, policy = make_run(tmp_path, 'pendulum_ppo', ['policy.model.encoder_hidden_sizes=[16,16]'], prepare=observe)
    result = export_policy(run, format)
    assert parity_of(result.summary()) <= 1e-5
    assert "observations normalised by the checkpoint's running mean and std (frozen), clipped to +-10" \
        in result.summary()
    obs = np.array([[3.0, -1.0, 10.0], [100.0, 0.0, 0.0]], np.float32)
    rms = policy.running_statistics()['obs_rms']
    with torch.no_grad():
        mean = policy.model.act(rms.normalize(torch.as_tensor(obs), 10.0), deterministic=True)
    expected = 2.0 * mean.clamp(-1.0, 1.0).numpy()  # Pendulum's [-2, 2]
    np.testing.assert_allclose(np.asarray(load_exported(result.path, format)(obs)), expected, atol=1e-5)


@pytest.mark.parametrize('format', FORMATS)
def test_masked_ppo_with_normalised_observations_matches_the_eval_mode(tmp_path, format):
    run, _ = make_run(tmp_path, counter_config('ppo'), ['policy.normalize.obs=true'],
                      prepare=lambda p: p.running_statistics()['obs_rms'].update(torch.arange(40.0).reshape(40, 1)))
    summary = export_policy(run, format).summary()
    assert 'input  action_mask [batch, 2] int8' in summary and EXACT in summary


class PixelsEnv(gymnasium.Env):
    """Random uint8 images [12, 12, 3] (as an Atari frame stack comes, only smaller); episodes of 10 steps."""

    observation_space = gymnasium.spaces.Box(0, 255, (12, 12, 3), np.uint8)
    action_space = gymnasium.spaces.Discrete(3)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.steps = 0
        return self._image(), {}

    def step(self, action):
        self.steps += 1
        return self._image(), 0.0, self.steps >= 10, False, {}

    def _image(self):
        return self.np_random.integers(0, 256, (12, 12, 3), dtype=np.uint8)


gymnasium.register('tidal_test/Pixels-v0', entry_point=PixelsEnv)


@pytest.mark.parametrize('format', FORMATS)
def test_uint8_images_go_in_as_the_env_gives_them(tmp_path, format):
    main_config, create_config = resolve_config_source('cartpole_ppo')
    main_config['env'].update(env_id='tidal_test/Pixels-v0', stop_value=None)
    run, _ = make_run(tmp_path, (main_config, create_config))
    summary = export_policy(run, format).summary()
    assert 'input  obs [batch, 12, 12, 3] uint8' in summary and EXACT in summary


@pytest.mark.parametrize('config', ['pendulum_td3', 'pendulum_ddpg'])
def test_td3_and_ddpg_export_their_deterministic_actor_scaled_to_the_env(tmp_path, config):
    run, policy = make_run(tmp_path, config)
    result = export_policy(run, 'torchscript')
    assert parity_of(result.summary()) <= 1e-5
    obs = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    expected = 2.0 * policy.eval_mode.forward(torch.as_tensor(obs))['action'].numpy()  # Pendulum's bounds [-2, 2]
    np.testing.assert_allclose(load_exported(result.path, 'torchscript')(obs), expected, atol=1e-5)


def test_ppg_exports_its_policy_head(tmp_path):
    run, _ = make_run(tmp_path, 'cartpole_ppg')
    summary = export_policy(run, 'torchscript').summary()
    assert 'output action [batch] int64' in summary and EXACT in summary


def test_taac_takes_and_returns_its_trajectory(tmp_path):
    run, _ = make_run(tmp_path, 'pendulum_taac_l', ['policy.model.actor_hidden_sizes=[16]',
                                                    'policy.model.critic_hidden_sizes=[16]'])
    result = export_policy(run, 'onnx')
    summary = result.summary()
    assert 'input  prev_tau [batch, 2, 1] float32' in summary and 'output tau [batch, 2, 1] float32' in summary
    assert "taac_l follows a trajectory: feed back output 'tau'" in summary
    assert parity_of(summary) <= 1e-5


def test_taac_with_forced_switches_is_refused_in_one_line(tmp_path):
    run, _ = make_run(tmp_path, 'pendulum_taac', ['policy.trajectory.max_repeat_steps=5'])
    with pytest.raises(TidalError, match=r"^policy 'taac' cannot be exported: it forces switches by a step count "
                                         r"\(max_repeat_steps\)$"):
        export_policy(run, 'torchscript')


def test_a_policy_on_a_learned_representation_exports_h_under_its_held_policy(tmp_path):
    run, _ = make_run(tmp_path, 'cartpole_muzero_repr_ppo')
    summary = export_policy(run, 'torchscript').summary()
    assert 'input  obs [batch, 4] float32' in summary and EXACT in summary


def test_muzero_exports_its_networks_and_says_it_is_no_policy(tmp_path):
    run, _ = make_run(tmp_path, 'cartpole_muzero', ['policy.model.hidden_sizes=[16]', 'policy.model.latent_size=8'])
    summary = export_policy(run, 'torchscript').summary()
    assert 'muzero acts by tree search; exported its networks, not a policy' in summary
    assert 'output next_latent [batch, 8] float32' in summary and PARITY.search(summary).group(1) == 'model'


# ----- refusals ---------------------------------------------------------------------------------

def error_of(capsys, *argv: str) -> str:
    assert main(['export', *argv]) == 2
    return capsys.readouterr().err.strip()


def test_bad_sources_are_one_line_errors(tmp_path, capsys):
    assert error_of(capsys, str(tmp_path / 'nowhere')) == \
        f"tidal: error: '{tmp_path / 'nowhere'}' is neither a run folder nor a checkpoint file"
    assert error_of(capsys, str(tmp_path)) == \
        f"tidal: error: '{tmp_path}' is not a tidal run folder (it has no config.yaml)"
    (tmp_path / 'loose.pt').write_bytes(b'')
    assert error_of(capsys, str(tmp_path / 'loose.pt')) == (
        f"tidal: error: no config.yaml in the folders above checkpoint '{tmp_path / 'loose.pt'}': export needs the "
        f"run folder it was trained in")
    run, _ = make_run(tmp_path, 'pendulum_sac')
    (run / 'ckpt' / 'best.pt').unlink()
    assert error_of(capsys, str(run)) == \
        f"tidal: error: run folder '{run}' has no checkpoint (ckpt/best.pt or ckpt/latest.pt)"


def test_onnx_without_its_packages_names_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, 'onnxruntime', None)  # import onnxruntime raises ImportError
    run, _ = make_run(tmp_path, 'pendulum_sac')
    assert error_of(capsys, str(run), '--format', 'onnx') == \
        'tidal: error: tidal export --format onnx needs onnx and onnxruntime: pip install -e ".[export]"'
    with pytest.raises(TidalError):
        export_policy(run, 'onnx')


def test_a_file_that_does_not_match_the_eval_mode_is_refused_and_not_left_behind(tmp_path, monkeypatch):
    from tidal.entry import export
    monkeypatch.setitem(export.TOLERANCES, 'torchscript', -1.0)  # no difference passes
    run, _ = make_run(tmp_path, 'pendulum_sac')
    with pytest.raises(TidalError, match=r"^exported policy does not match the eval mode: max \|difference\| of "
                                         r"'action' is \S+ > -1$"):
        export_policy(run, 'torchscript')
    assert not (run / 'export' / 'policy.pt').exists() and not list((run / 'export').glob('.*'))

"""`tidal export RUN --hub DIR`: the folder of a Hugging Face model repo, read back with huggingface_hub's own
model-card parser, its agent.pt run on raw gymnasium observations as the Open RL Leaderboard runs it."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import gymnasium
import numpy as np
import pytest
import torch
from huggingface_hub import ModelCard

from tidal.config import read_config, resolve_config_source, save_config
from tidal.entry import hub
from tidal.entry.cli import main
from tidal.entry.hub_eval import load_agent
from tidal.entry.setup import load_config
from tidal.envs.action_bounds import action_bounds
from tidal.envs.gym_env import GymEnv
from tidal.worker.builders import build_policy
from tidal.worker.checkpoint import load_policy_checkpoint, save_checkpoint

MEAN_REWARD = re.compile(r'^-?\d+\.\d\d \+/- \d+\.\d\d$')
SHORT_EVAL = ['--no-progress', '--set', 'env.n_evaluator_episode=1']


def train(tmp_path: Path, config: str, steps: int, *overrides: str) -> Path:
    run = tmp_path / config
    assert main(['train', config, '--max-env-step', str(steps), '--exp-name', str(run), *SHORT_EVAL,
                 *(arg for key in overrides for arg in ('--set', key))]) == 0
    return run


def untrained_run(tmp_path: Path, config, *overrides: str) -> Path:
    """A run folder as training leaves it, its policy as built (enough where only the file's form is checked)."""
    run = tmp_path / 'run'
    cfg = load_config(config, 0, [f'exp_name={run}', *overrides])
    save_config(cfg, run / 'config.yaml')
    save_checkpoint({'policy': build_policy(cfg, enable_field=('eval',)).weights()}, run / 'ckpt' / 'best.pt')
    return run


def run_policy(run: Path):
    """The run's policy in eval mode, deterministic, as the checkpoint left it."""
    cfg = load_config(read_config(str(run / 'config.yaml')))
    cfg.policy.update(device='cpu', cuda=False)
    cfg.policy.eval.deterministic = True
    policy = build_policy(cfg, enable_field=('eval',))
    load_policy_checkpoint(policy, run / 'ckpt' / 'best.pt')
    return policy


def raw_observations(env_id: str, count: int, seed: int = 3) -> np.ndarray:
    """`count` observations of gymnasium.make(env_id), stepped with random actions."""
    env = gymnasium.make(env_id)
    env.action_space.seed(seed)
    obs, _ = env.reset(seed=seed)
    seen = []
    for _ in range(count):
        seen.append(obs)
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            obs, _ = env.reset()
    return np.stack(seen)


def card_of(folder: Path) -> ModelCard:
    card = ModelCard.load(folder / 'README.md')
    assert card.data.library_name == 'tidal'
    return card


def scored_returns(agent_path: Path, env_id: str, episodes: int, seed: int) -> np.ndarray:
    """The returns of agent.pt on gymnasium.make(env_id), episode i seeded seed + i: the leaderboard's loop."""
    agent, env, returns = load_agent(agent_path), gymnasium.make(env_id), []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(agent(torch.as_tensor(obs)[None])[0].numpy())
            total, done = total + float(reward), terminated or truncated
        returns.append(total)
    return np.asarray(returns)


# ----- end to end: trained runs through the CLI ------------------------------------------------------

def test_a_cartpole_run_becomes_a_model_folder_whose_card_the_hub_parser_reads(tmp_path, capsys):
    run = train(tmp_path, 'cartpole_ppo', 2048)
    folder = tmp_path / 'hub'
    capsys.readouterr()
    assert main(['export', str(run), '--hub', str(folder), '--episodes', '3', '--seed', '7']) == 0
    out = capsys.readouterr().out
    assert sorted(path.name for path in folder.iterdir()) == ['README.md', 'agent.pt', 'config.yaml', 'replay.mp4']
    assert sorted(path.name for path in tmp_path.iterdir()) == ['cartpole_ppo', 'hub']  # nothing staged is left
    assert (folder / 'config.yaml').read_text() == (run / 'config.yaml').read_text()
    video = (folder / 'replay.mp4').read_bytes()
    assert len(video) > 1000 and video[4:8] == b'ftyp'  # an MP4 container
    assert 'parity: exported == eval mode on all 128 real observations (discrete: exact equality)' in out

    card = card_of(folder)
    assert card.data.tags == ['reinforcement-learning', 'CartPole-v1', 'tidal', 'ppo']
    [result] = card.data.eval_results
    assert (result.task_type, result.dataset_type, result.dataset_name, result.metric_type) == \
        ('reinforcement-learning', 'CartPole-v1', 'CartPole-v1', 'mean_reward')
    assert MEAN_REWARD.match(result.metric_value), result.metric_value
    returns = scored_returns(folder / 'agent.pt', 'CartPole-v1', 3, seed=7)
    assert result.metric_value == f'{returns.mean():.2f} +/- {returns.std():.2f}'
    assert f"mean_reward {result.metric_value} over 3 episodes of agent.pt on gymnasium.make('CartPole-v1'), " \
           f"seeds 7..9" in out
    assert 'episode i reset with\nseed 7 + i' in card.text and 'upload_folder' in card.text

    obs = raw_observations('CartPole-v1', 64)
    expected = run_policy(run).eval_mode.forward(torch.as_tensor(obs))['action'].numpy()
    assert load_agent(folder / 'agent.pt')(torch.as_tensor(obs)).numpy().tolist() == expected.tolist()


def test_pendulum_agent_pt_normalises_raw_observations_and_acts_in_the_envs_bounds(tmp_path, capsys):
    run = train(tmp_path, 'pendulum_ppo', 2048, 'policy.model.encoder_hidden_sizes=[16,16]')
    folder = tmp_path / 'hub'
    capsys.readouterr()
    assert main(['export', str(run), '--hub', str(folder), '--episodes', '2']) == 0
    out = capsys.readouterr().out
    assert "observations normalised by the checkpoint's running mean and std (frozen), clipped to +-10" in out
    assert "actions clipped to [-1, 1], then mapped onto the env's bounds [-2, 2]" in out

    policy = run_policy(run)
    assert policy.running_statistics()['obs_rms'].count > 1000  # the statistics are the trained ones
    obs = raw_observations('Pendulum-v1', 64)
    action = policy.eval_mode.forward(torch.as_tensor(obs))['action'].numpy()
    bounds = action_bounds(GymEnv({'env_id': 'Pendulum-v1'}).make('evaluator'))
    got = load_agent(folder / 'agent.pt')(torch.as_tensor(obs)).numpy()
    assert got.shape == (64, 1) and got.dtype == np.float32 and np.abs(got).max() <= 2.0
    np.testing.assert_allclose(got, bounds.env_action(action), atol=1e-5)

    [result] = card_of(folder).data.eval_results
    assert result.dataset_name == 'Pendulum-v1' and MEAN_REWARD.match(result.metric_value)
    returns = scored_returns(folder / 'agent.pt', 'Pendulum-v1', 2, seed=0)  # the run's seed
    assert result.metric_value == f'{returns.mean():.2f} +/- {returns.std():.2f}'


def test_agent_pt_loads_and_acts_with_torch_alone(tmp_path):
    run = untrained_run(tmp_path, 'cartpole_ppo')
    assert main(['export', str(run), '--hub', str(tmp_path / 'hub'), '--episodes', '1']) == 0
    script = ("import sys, torch; sys.modules['tidal'] = None; agent = torch.jit.load(sys.argv[1]); "
              "print(agent(torch.zeros(5, 4)).tolist())")
    done = subprocess.run([sys.executable, '-W', 'ignore', '-c', script, str(tmp_path / 'hub' / 'agent.pt')],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(eval(done.stdout)) == 5


def test_an_existing_folder_keeps_its_other_files(tmp_path):
    run = untrained_run(tmp_path, 'cartpole_ppo')
    folder = tmp_path / 'hub'
    folder.mkdir()
    (folder / '.gitattributes').write_text('*.pt filter=lfs\n')  # a clone of the model repo, say
    assert main(['export', str(run), '--hub', str(folder), '--episodes', '1']) == 0
    assert sorted(path.name for path in folder.iterdir()) == ['.gitattributes', 'README.md', 'agent.pt',
                                                              'config.yaml', 'replay.mp4']
    assert sorted(path.name for path in tmp_path.iterdir()) == ['hub', 'run']


class Float64Pendulum(gymnasium.ObservationWrapper):
    """Pendulum with float64 observations, as MuJoCo's envs give them: tidal's adapter casts them to float32."""

    def __init__(self, **kwargs):
        super().__init__(gymnasium.make('Pendulum-v1', **kwargs))
        space = self.env.observation_space
        self.observation_space = gymnasium.spaces.Box(space.low.astype(np.float64), space.high.astype(np.float64),
                                                      space.shape, np.float64)

    def observation(self, observation):
        return observation.astype(np.float64)


gymnasium.register('tidal_test/Pendulum64-v0', entry_point=Float64Pendulum, max_episode_steps=50)


def test_float64_observations_go_into_agent_pt_as_gymnasium_gives_them(tmp_path, capsys):
    main_config, create_config = resolve_config_source('pendulum_ppo')
    main_config['env'].update(env_id='tidal_test/Pendulum64-v0')
    run = untrained_run(tmp_path, (main_config, create_config))
    capsys.readouterr()
    assert main(['export', str(run), '--hub', str(tmp_path / 'hub'), '--episodes', '1']) == 0
    assert 'input  obs [batch, 3] float64' in capsys.readouterr().out
    obs = np.random.default_rng(0).normal(size=(8, 3))
    agent = load_agent(tmp_path / 'hub' / 'agent.pt')
    np.testing.assert_array_equal(agent(torch.as_tensor(obs)).numpy(),
                                  agent(torch.as_tensor(obs.astype(np.float32)).double()).numpy())


# ----- refusals ---------------------------------------------------------------------------------

def error_of(capsys, *argv: str) -> str:
    capsys.readouterr()
    assert main(['export', *argv]) == 2
    return capsys.readouterr().err.strip()


def test_a_policy_that_is_no_observations_to_actions_map_is_refused_and_leaves_no_agent_pt(tmp_path, capsys):
    run = untrained_run(tmp_path, 'cartpole_muzero', 'policy.model.hidden_sizes=[16]', 'policy.model.latent_size=8')
    assert error_of(capsys, str(run), '--hub', str(tmp_path / 'hub')) == (
        "tidal: error: policy 'muzero' cannot go to the Open RL Leaderboard: its agent.pt would take obs, latent, "
        "action and give representation, policy_logits, value, next_latent, reward, where the leaderboard feeds "
        "observations only and steps the env with the one output")
    assert sorted(path.name for path in tmp_path.iterdir()) == ['run']  # no folder, no agent.pt, nothing staged


def test_an_env_whose_observations_are_no_box_is_refused(tmp_path, capsys):
    main_config, create_config = resolve_config_source('cartpole_ppo')
    main_config['env'].update(env_id='tidal_test/Counter-v0', stop_value=None, env_kwargs={'dict_obs': True})
    run = untrained_run(tmp_path, (main_config, create_config))
    error = error_of(capsys, str(run), '--hub', str(tmp_path / 'hub'))
    assert error.startswith("tidal: error: tidal export --hub needs observations as gymnasium.make("
                            "'tidal_test/Counter-v0') gives them, which the Open RL Leaderboard feeds agent.pt")


def test_hub_with_another_format_or_an_output_file_is_one_line(tmp_path, capsys):
    run = untrained_run(tmp_path, 'cartpole_ppo')
    expected = 'tidal: error: --hub writes agent.pt (TorchScript) into its folder: drop --format and --output'
    assert error_of(capsys, str(run), '--hub', str(tmp_path / 'hub'), '--format', 'onnx') == expected
    assert error_of(capsys, str(run), '--hub', str(tmp_path / 'hub'), '-o', 'x.pt') == expected


def test_a_missing_drawing_package_is_one_line_naming_it_and_writes_nothing(tmp_path, capsys, monkeypatch):
    run = untrained_run(tmp_path, 'cartpole_ppo')
    monkeypatch.setitem(sys.modules, 'pygame', None)  # as if it were not installed: CartPole draws with it
    assert error_of(capsys, str(run), '--hub', str(tmp_path / 'hub')) == (
        "tidal: error: env 'CartPole-v1' draws its frames with pygame, which is not installed: "
        'pip install -e ".[hub]"')
    assert sorted(path.name for path in tmp_path.iterdir()) == ['run']


def test_an_export_that_fails_after_writing_leaves_no_folder(tmp_path, monkeypatch):
    """The files are staged beside the folder: a failure while scoring agent.pt (written by then) removes them."""
    run = untrained_run(tmp_path, 'cartpole_ppo')
    monkeypatch.setattr(hub, 'require_frames', lambda env_id, env_kwargs: None)  # let the failure come late
    monkeypatch.setitem(sys.modules, 'pygame', None)
    with pytest.raises(gymnasium.error.DependencyNotInstalled, match='pygame is not installed'):
        hub.export_hub(run, tmp_path / 'hub', episodes=1)
    assert sorted(path.name for path in tmp_path.iterdir()) == ['run']

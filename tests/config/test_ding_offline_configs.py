"""DI-engine's offline config files (dizoo/d4rl's and classic control's bc, cql, iql and td3_bc files, in
tests/config/ding_configs as DI-engine ships them) run unchanged through `tidal -m serial_offline` and
`-m serial_bc`: D4RL ids read the Minari dataset of the same env and level, DI-engine's hdf5 files are read as
they are, and the offline algorithms tidal lacks are refused in one line.

The Minari datasets here are small ones of random Hopper episodes, written under a test's own Minari root by the
ids D4RL's files map to; the hdf5 files hold random Pendulum episodes in DI-engine's columns.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from tidal.config import read_config
from tidal.config.ding.tables import DING_DEFAULTS
from tidal.worker.offline_data import episode_returns, normalized_rewards

from test_ding_configs import DING_CONFIGS, SMALL_EVAL, run_cli  # tests/config is on the import path
from test_dingcompat import compiled

D4RL_LEVELS = ('medium', 'medium-expert')
OFFLINE_RUNS = {  # file -> (DI-engine mode, policy type)
    'hopper_medium_td3bc_config.py': ('serial_offline', 'td3_bc'),
    'hopper_medium_iql_config.py': ('serial_offline', 'iql'),
    'hopper_medium_cql_config.py': ('serial_offline', 'cql'),
    'hopper_medium_expert_bc_config.py': ('serial_bc', 'bc'),
    'pendulum_td3_bc_config.py': ('serial_offline', 'td3_bc'),
    'pendulum_cql_config.py': ('serial_offline', 'cql'),
    'cartpole_bc_config.py': ('serial_bc', 'bc'),
}
REFUSED = {
    'hopper_medium_bcq_config.py': "tidal: error: DI-engine policy type 'bcq' is not supported: tidal has no BCQ",
    'hopper_medium_edac_config.py': "tidal: error: DI-engine policy type 'edac' is not supported: tidal has no EDAC",
    'hopper_medium_dt_config.py': "tidal: error: DI-engine policy type 'dt' is not supported: tidal has no Decision "
                                  "Transformer",
}


def random_episodes(env_id: str, count: int, seed: int) -> list[dict[str, np.ndarray]]:
    """`count` episodes of uniformly random actions, as tidal's transition columns."""
    import gymnasium
    env = gymnasium.make(env_id)
    rng = np.random.default_rng(seed)
    episodes = []
    for index in range(count):
        obs, _ = env.reset(seed=seed + index)
        rows: dict[str, list] = {field: [] for field in ('obs', 'action', 'reward', 'next_obs', 'terminated',
                                                         'truncated')}
        ended = False
        while not ended:
            action = rng.uniform(-1, 1, env.action_space.shape).astype(np.float32)
            next_obs, reward, terminated, truncated, _ = env.step(env.action_space.high * action)
            for field, value in zip(rows, (obs, action, reward, next_obs, terminated, truncated)):
                rows[field].append(value)
            obs, ended = next_obs, terminated or truncated
        episodes.append({field: np.asarray(values) for field, values in rows.items()})
    env.close()
    return episodes


@pytest.fixture(scope='module')
def d4rl_root(tmp_path_factory):
    """A Minari root holding mujoco/hopper/{medium,medium-expert}-v0: 10 random episodes each."""
    pytest.importorskip('mujoco')
    pytest.importorskip('minari')
    from tidal.entry.setup import load_config
    from tidal.worker.minari_datasets import save_episodes
    root = tmp_path_factory.mktemp('minari')
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv('MINARI_DATASETS_PATH', str(root))
        for offset, level in enumerate(D4RL_LEVELS):
            save_episodes(f'mujoco/hopper/{level}-v0', random_episodes('Hopper-v5', 10, 100 * offset),
                          load_config('hopper_td3_bc').env, (-20.0, 3000.0), 'random Hopper-v5 episodes')
    return root


def write_ding_hdf5(path: Path, env_id: str = 'Pendulum-v1', episodes: int = 2, steps: int = 200) -> int:
    """Random transitions in DI-engine's hdf5 columns (its hdf5_save): obs, action, reward [N, 1], done, next_obs;
    `done` marks each episode's last step (at most `steps`), as DI-engine's collector records a time limit too.
    Returns N."""
    import gymnasium
    h5py = pytest.importorskip('h5py')
    env = gymnasium.make(env_id)
    env.action_space.seed(0)
    columns: dict[str, list] = {name: [] for name in ('obs', 'action', 'reward', 'done', 'next_obs')}
    for episode in range(episodes):
        obs, _ = env.reset(seed=episode)
        for step in range(steps):
            action = env.action_space.sample()
            next_obs, reward, terminated, _, _ = env.step(action)
            done = terminated or step == steps - 1
            for name, value in zip(columns, (obs, np.atleast_1d(action), [reward], done, next_obs)):
                columns[name].append(value)
            obs = next_obs
            if done:
                break
    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, 'w') as file:
        for name, values in columns.items():
            file.create_dataset(name, data=np.asarray(values))
    return len(columns['done'])


def run_offline(name: str, folder: Path, *extra: str) -> tuple[Path, list[str]]:
    """`tidal -m MODE -c FILE -s 0` in `folder`, with one evaluation episode; (run folder, stderr lines)."""
    mode = OFFLINE_RUNS[name][0]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        code, lines = run_cli('-m', mode, '-c', str(DING_CONFIGS / name), '-s', '0', *SMALL_EVAL, *extra,
                              '--no-progress')
    assert code == 0, lines
    return folder / read_config(str(DING_CONFIGS / name))[0]['exp_name'], lines


def saved(run_dir: Path) -> dict:
    return read_config(str(run_dir / 'config.yaml'))[0]


@pytest.mark.parametrize('name', ['hopper_medium_td3bc_config.py', 'hopper_medium_iql_config.py',
                                  'hopper_medium_cql_config.py'])
def test_d4rl_file_learns_from_the_minari_dataset_of_its_id(d4rl_root, tmp_path, monkeypatch, name):
    monkeypatch.setenv('MINARI_DATASETS_PATH', str(d4rl_root))
    run_dir, lines = run_offline(name, tmp_path, '--train-iter', '10')
    cfg = saved(run_dir)
    assert (cfg['env']['env_id'], cfg['policy']['collect']['data_path']) == ('Hopper-v5', 'mujoco/hopper/medium-v0')
    assert [line for line in lines if 'DI-engine key' in line] and not [line for line in lines if 'warning' in line]
    assert (tmp_path / run_dir.name / 'summary.json').is_file()
    policy = cfg['policy']
    if OFFLINE_RUNS[name][1] == 'iql':  # DI-engine's exp(A / 0.05) clipped at 20, on rewards scaled by the returns
        learn = policy['learn']
        assert (learn['beta'], learn['max_weight'], learn['expectile'], learn['batch_size']) == (20.0, 20.0, 0.7, 4096)
        assert policy['collect']['reward_norm'] == 'return_range'
        assert policy['model']['actor_hidden_sizes'] == [512] * 4 and policy['model']['value_hidden_sizes'] == [512] * 3
    elif OFFLINE_RUNS[name][1] == 'cql':
        learn = policy['learn']
        assert (learn['cql_weight'], learn['alpha'], learn['auto_alpha'], learn['learning_rate_policy']) == \
            (5.0, 0.2, False, 1e-4)
    else:
        assert policy['model']['actor_hidden_sizes'] == [256, 256] and policy['learn']['alpha'] == 2.5
    assert policy['collect']['normalize_states'] is False  # DI-engine normalises only with env.norm_obs


def test_d4rl_bc_file_ends_after_its_train_epoch_passes(d4rl_root, tmp_path, monkeypatch):
    """train_epoch=15 passes over the dataset in batches of 256, as DI-engine's offline entry counts them."""
    monkeypatch.setenv('MINARI_DATASETS_PATH', str(d4rl_root))
    run_dir, lines = run_offline('hopper_medium_expert_bc_config.py', tmp_path)
    cfg = saved(run_dir)
    import minari
    transitions = minari.load_dataset('mujoco/hopper/medium-expert-v0').total_steps
    summary = (run_dir / 'summary.json').read_text()
    assert f'"train_iter": {15 * math.ceil(transitions / 256)}' in summary
    policy = cfg['policy']
    assert (policy['continuous'], policy['learn']['optimizer'], policy['learn']['momentum'],
            policy['learn']['weight_decay'], policy['learn']['learning_rate']) == (True, 'sgd', 0.9, 1e-4, 1e-5)
    assert policy['model']['actor_hidden_sizes'] == [512] * 5 and policy['collect']['normalize_states'] is True
    assert policy['eval']['evaluator']['eval_freq'] == 1000  # DI-engine's -1: after every pass


@pytest.mark.parametrize('name, data_path', [('pendulum_td3_bc_config.py', 'td3/expert_demos.hdf5'),
                                             ('pendulum_cql_config.py', 'pendulum_sac_data_generation/expert_demos.hdf5')])
def test_classic_control_file_reads_its_ding_hdf5_file(tmp_path, name, data_path):
    rows = write_ding_hdf5(tmp_path / data_path)
    run_dir, _ = run_offline(name, tmp_path, '--train-iter', '10')
    cfg = saved(run_dir)
    assert (cfg['env']['env_id'], cfg['policy']['collect']['data_path']) == ('Pendulum-v1', f'./{data_path}')
    assert f"learning offline from './{data_path}'" in (run_dir / 'log.txt').read_text()
    assert rows == 400


def test_discrete_bc_file_reads_integer_actions_from_hdf5_with_sgd(tmp_path):
    """DI-engine's cartpole_bc file, its data path given on the command line (its serial_pipeline_bc takes one)."""
    rows = write_ding_hdf5(tmp_path / 'cartpole_demos.hdf5', 'CartPole-v1', episodes=4)
    run_dir, _ = run_offline('cartpole_bc_config.py', tmp_path, '--set', 'policy.collect.data_path=cartpole_demos.hdf5')
    policy = saved(run_dir)['policy']
    assert (policy['continuous'], policy['learn']['optimizer'], policy['learn']['learning_rate'],
            policy['model']['encoder_hidden_size_list']) == (False, 'sgd', 0.01, [64, 64, 128])
    assert f'"train_iter": {20 * math.ceil(rows / 64)}' in (run_dir / 'summary.json').read_text()  # train_epoch=20


def test_ding_discrete_cql_file_is_refused_for_its_quantiles_and_runs_without_them(tmp_path, monkeypatch):
    """DI-engine's cartpole_cql learns QR-DQN's quantiles, which tidal's discrete_cql (on DQN) does not; without
    them the file runs, its 3-step windows inside the dataset's episodes."""
    monkeypatch.chdir(tmp_path)
    code, lines = run_cli('-m', 'serial_offline', '-c', str(DING_CONFIGS / 'cartpole_cql_config.py'), '-s', '0',
                          '--train-iter', '10', '--no-progress')
    assert code == 2 and lines == ["tidal: error: config key 'policy.model.num_quantiles' is 64: DI-engine's discrete "
                                   "CQL learns QR-DQN's quantiles; tidal's discrete_cql learns DQN's expected values "
                                   "(remove num_quantiles and learn.kappa to run it)"]
    main_config, create_config = read_config(str(DING_CONFIGS / 'cartpole_cql_config.py'))
    del main_config['policy']['model']['num_quantiles'], main_config['policy']['learn']['kappa']
    write_ding_hdf5(tmp_path / main_config['policy']['collect']['data_path'], 'CartPole-v1', episodes=4)
    from tidal.entry.pipelines import train
    policy = train((main_config, create_config), seed=0, max_train_iter=10, progress=False)
    assert policy._cfg.nstep == 3 and policy._cfg.learn.cql_weight == 4.0


def test_a_missing_hdf5_file_is_refused_in_one_line_naming_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, lines = run_cli('-m', 'serial_offline', '-c', str(DING_CONFIGS / 'pendulum_td3_bc_config.py'), '-s', '0',
                          '--train-iter', '10', '--no-progress')
    assert code == 2 and lines[-1] == ("tidal: error: policy.collect.data_path: DI-engine hdf5 file "
                                       "'./td3/expert_demos.hdf5' does not exist"), lines


def test_a_d4rl_id_whose_minari_dataset_is_not_on_disk_is_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv('MINARI_DATASETS_PATH', str(tmp_path / 'empty'))
    monkeypatch.chdir(tmp_path)
    code, lines = run_cli('-m', 'serial_offline', '-c', str(DING_CONFIGS / 'hopper_medium_iql_config.py'), '-s', '0',
                          '--train-iter', '10', '--no-progress')
    assert code == 2 and lines == [
        f"tidal: error: D4RL dataset 'hopper-medium-v2' (env.env_id) is the Minari dataset 'mujoco/hopper/medium-v0', "
        f"which is not under Minari's root '{tmp_path / 'empty'}' (MINARI_DATASETS_PATH): download it (minari "
        f"download mujoco/hopper/medium-v0) or build a local one (tidal build-datasets)"]
    assert list(tmp_path.iterdir()) == []


def test_a_d4rl_level_minari_does_not_publish_is_to_be_built(tmp_path, monkeypatch):
    main_config, create_config = read_config(str(DING_CONFIGS / 'hopper_medium_td3bc_config.py'))
    main_config['env']['env_id'] = 'halfcheetah-medium-replay-v2'
    monkeypatch.setenv('MINARI_DATASETS_PATH', str(tmp_path))
    with pytest.raises(Exception, match=r"'halfcheetah-medium-replay-v2' \(env.env_id\) is the Minari dataset "
                                        r"'mujoco/halfcheetah/medium-replay-v0', .*: Minari publishes no medium-replay "
                                        r"level of halfcheetah; build a local one \(tidal build-datasets\)"):
        compiled(main_config, create_config)


@pytest.mark.parametrize('name', sorted(REFUSED))
def test_an_offline_algorithm_tidal_lacks_is_refused_in_one_line(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    code, lines = run_cli('-m', 'serial_offline', '-c', str(DING_CONFIGS / name), '-s', '0', '--train-iter', '10')
    assert code == 2 and len(lines) == 1 and lines[0].startswith(REFUSED[name]), lines
    assert lines[0].endswith("tidal's offline policies are bc, td3_bc, iql, cql, rebrac and discrete_cql")


@pytest.mark.parametrize('env_id, error', [
    ('pen-human-v0', "DI-engine env type 'd4rl': env.env_id 'pen-human-v0' is not a D4RL MuJoCo locomotion id"),
    ('hopper-medium', "DI-engine env type 'd4rl': env.env_id 'hopper-medium' is not a D4RL MuJoCo locomotion id"),
])
def test_d4rl_ids_other_than_mujoco_locomotion_are_refused(env_id, error):
    with pytest.raises(Exception, match=error):
        compiled({'env': {'env_id': env_id}, 'policy': {}}, {'env': {'type': 'd4rl'}, 'policy': {'type': 'iql'}})


@pytest.mark.parametrize('main, error', [
    ({'policy': {'collect': {'data_type': 'naive', 'data_path': 'x.pkl'}}},
     "config key 'policy.collect.data_type' is 'naive': tidal does not unpickle DI-engine's transition lists"),
    ({'policy': {'collect': {'data_type': 'hdf5', 'data_path': 'x.pkl'}}},
     "config key 'policy.collect.data_path' is 'x.pkl', but policy.collect.data_type 'hdf5' reads a DI-engine hdf5 "
     "file"),
    ({'policy': {'learn': {'with_lagrange': True, 'lagrange_thresh': 10.0}, 'collect': {'data_path': 'x.hdf5'}}},
     "tidal's CQL keeps a fixed penalty weight"),
    ({'env': {'norm_obs': {'use_norm': True}}, 'policy': {'collect': {'data_path': 'x.hdf5'}}},
     "config key 'env.norm_obs' is {'use_norm': True}: an offline run normalises observations by its dataset's"),
    ({'env': {'reward_norm': 'cql_antmaze'}, 'policy': {'collect': {'data_path': 'x.hdf5'}}},
     "config key 'env.reward_norm' is 'cql_antmaze'"),
])
def test_ding_offline_keys_tidal_cannot_honour_are_refused(main, error):
    with pytest.raises(Exception, match=error.replace('(', r'\(').replace(')', r'\)').replace('{', r'\{')
                       .replace('}', r'\}')):
        compiled(main, {'env': {'type': 'pendulum'}, 'policy': {'type': 'cql'}})


def test_a_tidal_iql_config_keeps_its_own_beta():
    """DI-engine's IQL beta divides the advantage, tidal's multiplies it: only a DI-engine file's is inverted."""
    ding, _ = compiled({'policy': {'learn': {'beta': 0.25}}}, {'env': {'type': 'pendulum'}, 'policy': {'type': 'iql'}})
    own, _ = compiled({'env': {'env_id': 'Pendulum-v1'}, 'policy': {'learn': {'beta': 0.25}}},
                      {'env': {'type': 'gym'}, 'policy': {'type': 'iql'}})
    assert (ding.policy.learn.beta, own.policy.learn.beta) == (4.0, 0.25)
    assert ding.policy.learn.max_weight == DING_DEFAULTS['iql']['policy.learn.max_weight'] != own.policy.learn.max_weight


def test_return_range_scales_rewards_by_the_whole_episodes_returns():
    reward = torch.tensor([1.0, 2.0, 3.0, 4.0, 10.0])
    terminated = torch.tensor([False, True, False, False, False])
    truncated = torch.tensor([False, False, False, True, False])  # the last row's episode is not whole
    assert episode_returns(reward, terminated, truncated) == [3.0, 7.0]
    scaled = normalized_rewards({'reward': reward, 'terminated': terminated, 'truncated': truncated},
                                'return_range', 'test')
    assert torch.allclose(scaled, reward * 1000 / 4.0)
    standardized = normalized_rewards({'reward': reward}, 'standardize', 'test')
    assert torch.allclose(standardized, (reward - reward.mean()) / reward.std())


def test_ding_hdf5_rows_split_into_episodes_where_done_or_the_next_row_starts_elsewhere(tmp_path):
    """DI-engine's `done` is the termination; a row whose next_obs is not the next row's obs ends an episode too
    (as truncated: DI-engine keeps no truncation), and so does the last row."""
    from tidal.config.layered import load_layered
    from tidal.worker.offline_data import load_offline_dataset
    h5py = pytest.importorskip('h5py')
    obs = np.arange(18, dtype=np.float32).reshape(6, 3)
    next_obs = obs[[1, 2, 2, 4, 5, 5]] + np.array([0, 0, 9, 0, 0, 0], dtype=np.float32)[:, None]
    with h5py.File(tmp_path / 'demos.hdf5', 'w') as file:
        for name, values in {'obs': obs, 'next_obs': next_obs, 'action': np.zeros((6, 1), np.int64),
                             'reward': np.ones((6, 1), np.float32), 'done': [False, True, False, False, False, False]
                             }.items():
            file.create_dataset(name, data=np.asarray(values))
    cfg = load_layered('pendulum_bc', 0, [f'policy.collect.data_path={tmp_path / "demos.hdf5"}']).cfg
    data = load_offline_dataset(cfg)
    assert data.columns['terminated'].tolist() == [False, True, False, False, False, False]
    assert data.columns['truncated'].tolist() == [False, False, True, False, False, True]
    assert data.columns['action'].dtype == torch.long and data.columns['action'].shape == (6,)
    assert data.columns['reward'].shape == (6,)

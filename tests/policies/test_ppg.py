"""PPG's auxiliary phase: pi_old frozen at its start, the aux buffer's life cycle, whole-sequence minibatches."""
import dataclasses
import math

import pytest
import torch

from tidal.config import resolve_config_source
from tidal.worker.feeds.ppg import AuxPhaseFeed
from tidal.entry.setup import load_config
from tidal.worker.builders import build_env_manager, build_policy, set_seed
from tidal.base.errors import ConfigError
from tidal.base.modes import EnvLayout, Timestep
from tidal.policies.ppg import PPGPolicy
from tidal.worker.collector import SampleCollector
from tidal.worker.learner import Learner


def make_ppg(**model):
    cfg = PPGPolicy.default_config()
    cfg.model.update(obs_shape=3, action_shape=3, encoder_hidden_sizes=[16, 16], **model)
    cfg.learn.learning_rate = 1e-2  # large steps: a few updates move the policy measurably
    return PPGPolicy(cfg)


def aux_batch(rows=32):
    generator = torch.Generator().manual_seed(0)
    return {'obs': torch.randn(rows, 3, generator=generator), 'return': 5 + torch.randn(rows, generator=generator)}


def policy_batch(policy, envs=32):
    """A PPO batch collected by the policy itself: one step of `envs` envs."""
    generator = torch.Generator().manual_seed(1)
    obs, next_obs = torch.randn(envs, 3, generator=generator), torch.randn(envs, 3, generator=generator)
    no = torch.zeros(envs, dtype=torch.bool)
    step = Timestep(next_obs=next_obs, reward=torch.randn(envs, generator=generator), terminated=no, truncated=no,
                    first=no)
    mode = policy.collect_mode
    transition = mode.process_transition(obs, mode.forward(obs), step)
    return {**mode.get_train_sample(transition, EnvLayout(num_envs=envs, steps=1)), 'env_step': 0}


def test_aux_policy_kl_is_zero_at_the_start_of_a_phase_and_grows_with_updates():
    torch.manual_seed(0)
    policy = make_ppg()
    batch = policy_batch(policy)
    for _ in range(5):  # the policy phase moves the policy away from the one PPG was built with
        policy.learn_mode.forward(batch)
    stale = policy.aux_mode.forward(aux_batch())  # no reset: pi_old is still the initial policy
    assert float(stale['aux_policy_kl']) > 1e-4

    policy.aux_mode.reset()
    first = policy.aux_mode.forward(aux_batch())
    assert abs(float(first['aux_policy_kl'])) < 1e-6
    for _ in range(5):
        later = policy.aux_mode.forward(aux_batch())
    assert float(later['aux_policy_kl']) > 1e-4
    assert set(policy.aux_mode.monitor_vars()) <= set(later)


def test_aux_update_trains_the_shared_encoder_through_the_aux_value_head():
    torch.manual_seed(0)
    policy = make_ppg(share_encoder=True)
    policy.cfg.aux.policy_kl_loss_weight = 0.0  # only the value losses move the network
    assert policy.model.value_encoder is None
    encoder = [p.detach().clone() for p in policy.model.encoder.parameters()]
    value_head = [p.detach().clone() for p in policy.model.value_head.parameters()]
    policy.aux_mode.reset()
    policy.aux_mode.forward(aux_batch())
    assert all(not torch.equal(a, b) for a, b in zip(encoder, policy.model.encoder.parameters()))
    assert any(not torch.equal(a, b) for a, b in zip(value_head, policy.model.value_head.parameters()))


# ----- the aux phase feed on real CartPole rollouts -------------------------------------------
ENVS, N_SAMPLE, INTERVAL, LENGTH, MINI_BATCH, AUX_EPOCHS = 2, 16, 2, 4, 3, 2
STEPS = N_SAMPLE // ENVS


def build_feed(*overrides):
    main_config, create_config = resolve_config_source('cartpole_ppg')
    cfg = load_config((main_config, create_config), seed=0, overrides=[
        f'env.collector_env_num={ENVS}', 'env.evaluator_env_num=1', f'policy.collect.n_sample={N_SAMPLE}',
        'policy.learn.batch_size=8', 'policy.learn.epoch_per_collect=1', f'policy.aux.interval={INTERVAL}',
        f'policy.aux.mini_batch_length={LENGTH}', f'policy.aux.mini_batch_size={MINI_BATCH}',
        f'policy.aux.num_updates_per_train_iter={AUX_EPOCHS}', 'policy.model.encoder_hidden_sizes=[16]',
        *overrides])
    set_seed(cfg.seed)
    policy = build_policy(cfg)
    collector = SampleCollector(build_env_manager(cfg, 'collector'), policy.collect_mode, policy.device)
    learner = Learner(policy.learn_mode, policy.device)
    feed = AuxPhaseFeed(cfg, policy.views(), collector, learner)
    collector.reset(seed=cfg.seed)
    return feed


@pytest.fixture
def recorded_feed():
    """A feed whose rollouts and aux batches are recorded as they pass."""
    feed = build_feed()
    rollouts, batches = [], []
    collect, aux_forward = feed.collector.collect, feed.aux_mode.forward

    def recording_collect(n_sample):
        rollout = collect(n_sample)
        rollouts.append({key: rollout[key].clone() for key in ('obs', 'return')})
        return rollout

    def recording_forward(batch):
        batches.append({key: value.clone() for key, value in batch.items() if key != 'env_step'})
        return aux_forward(batch)

    feed.collector.collect = recording_collect
    feed.aux_mode = dataclasses.replace(feed.aux_mode, forward=recording_forward)
    yield feed, rollouts, batches
    feed.collector.close()


def test_aux_buffer_fills_for_interval_rollouts_then_a_phase_empties_it(recorded_feed):
    feed, _, batches = recorded_feed
    sequences = INTERVAL * ENVS * STEPS // LENGTH
    updates_per_phase = AUX_EPOCHS * math.ceil(sequences / MINI_BATCH)
    sizes, updates = [], []
    for _ in range(2 * INTERVAL):
        feed.step(None)
        sizes.append(len(feed.buffer))
        updates.append(len(batches))
    assert sizes == [ENVS * STEPS, 0, ENVS * STEPS, 0]
    assert updates == [0, updates_per_phase, updates_per_phase, 2 * updates_per_phase]
    assert feed.learner.train_iter == 2 * INTERVAL * math.ceil(N_SAMPLE / 8)  # policy-phase updates counted
    assert set(feed.learner._phase_info) >= {'aux_policy_kl', 'aux_value_loss'}


def test_aux_minibatches_are_whole_sequences_of_one_env_in_time_order(recorded_feed):
    feed, rollouts, batches = recorded_feed
    for _ in range(INTERVAL):
        feed.step(None)
    # every sequence the phase may visit: rollout r, env i, steps k * LENGTH ... (k + 1) * LENGTH - 1
    sequences = {}
    for r, rollout in enumerate(rollouts):
        obs = rollout['obs'].reshape(STEPS, ENVS, -1)
        returns = rollout['return'].reshape(STEPS, ENVS)
        for i in range(ENVS):
            for k in range(STEPS // LENGTH):
                rows = slice(k * LENGTH, (k + 1) * LENGTH)
                sequences[(r, i, k)] = (obs[rows, i], returns[rows, i])
    per_epoch = math.ceil(len(sequences) / MINI_BATCH)
    assert len(batches) == AUX_EPOCHS * per_epoch
    for epoch in range(AUX_EPOCHS):
        visited = []
        for batch in batches[epoch * per_epoch:(epoch + 1) * per_epoch]:
            assert set(batch) == {'obs', 'return'}
            obs, returns = batch['obs'].reshape(-1, LENGTH, 4), batch['return'].reshape(-1, LENGTH)
            for seq_obs, seq_return in zip(obs, returns):
                match = [key for key, (o, ret) in sequences.items() if torch.equal(o, seq_obs)
                         and torch.equal(ret, seq_return)]
                assert len(match) == 1, 'an aux sequence is not a time-ordered run of one env'
                visited.append(match[0])
        assert sorted(visited) == sorted(sequences)  # each sequence once per epoch


def test_sequence_starts_step_envs_apart_within_each_rollout():
    feed = build_feed()
    try:
        feed.buffer.extend({'obs': torch.zeros(2 * ENVS * STEPS, 4), 'return': torch.zeros(2 * ENVS * STEPS)})
        starts = feed.sequence_starts()
        # rollout r, sequence k, env i starts at r * 16 + k * 8 + i
        expected = [r * ENVS * STEPS + k * LENGTH * ENVS + i for r in range(2) for k in range(STEPS // LENGTH)
                    for i in range(ENVS)]
        assert starts.tolist() == expected
    finally:
        feed.collector.close()


def test_disabled_aux_phase_never_fills_the_buffer():
    feed = build_feed('policy.aux.enabled=false')
    try:
        for _ in range(INTERVAL + 1):
            feed.step(None)
            assert len(feed.buffer) == 0
        assert 'aux' not in feed.learner._phases
    finally:
        feed.collector.close()


def test_mini_batch_length_that_does_not_divide_the_steps_per_env_is_a_config_error():
    with pytest.raises(ConfigError, match=r'policy\.aux\.mini_batch_length \(3\) must divide the steps per env '
                                          r'of a rollout \(8 '):
        build_feed('policy.aux.mini_batch_length=3')


@pytest.mark.parametrize('aux_lr', [None, 4e-3])
def test_the_aux_learning_rate_decays_with_the_policy_phase(aux_lr):
    cfg = PPGPolicy.default_config()
    cfg.model.update(obs_shape=3, action_shape=3, encoder_hidden_sizes=[16])
    cfg.learn.update(learning_rate=1e-2, lr_decay=True, decay_env_steps=1000)
    cfg.aux.learning_rate = aux_lr
    policy = PPGPolicy(cfg)
    base = aux_lr or 1e-2
    for env_step, remaining in ((0, 1.0), (250, 0.75), (1000, 0.0), (4000, 0.0)):
        policy.aux_mode.reset()
        policy.aux_mode.forward({**aux_batch(), 'env_step': env_step})
        assert policy._aux_optimizer.param_groups[0]['lr'] == pytest.approx(base * remaining)


def test_defaults_scale_rewards_and_both_phases_fit_the_same_returns():
    """With PPG's defaults (not a zoo config) on Acrobot, whose unscaled returns reach -100, rewards are scaled
    and the aux phase's value heads regress on exactly the returns the policy phase's value head saw."""
    assert PPGPolicy.default_config().normalize.reward is True
    main_config = {'exp_name': 'acrobot_ppg', 'env': {'env_id': 'Acrobot-v1', 'collector_env_num': ENVS,
                                                      'evaluator_env_num': 1}}
    create_config = {'env': {'type': 'gym'}, 'env_manager': {'type': 'base'}, 'policy': {'type': 'ppg'}}
    cfg = load_config((main_config, create_config), seed=0, overrides=[
        f'policy.collect.n_sample={N_SAMPLE}', 'policy.learn.batch_size=8', 'policy.learn.epoch_per_collect=1',
        f'policy.aux.interval={INTERVAL}', f'policy.aux.mini_batch_length={LENGTH}'])
    set_seed(cfg.seed)
    policy = build_policy(cfg)
    collector = SampleCollector(build_env_manager(cfg, 'collector'), policy.collect_mode, policy.device)
    learner = Learner(policy.learn_mode, policy.device)
    feed = AuxPhaseFeed(cfg, policy.views(), collector, learner)
    collector.reset(seed=cfg.seed)
    policy_targets, aux_rows = {}, []
    train, aux_forward = learner.train, feed.aux_mode.forward

    def recording_train(batch):
        policy_targets.update({tuple(o.tolist()): float(r) for o, r in zip(batch['obs'], batch['return'])})
        return train(batch)

    def recording_aux(batch):
        aux_rows.extend(zip(batch['obs'], batch['return']))
        return aux_forward(batch)

    learner.train = recording_train
    feed.aux_mode = dataclasses.replace(feed.aux_mode, forward=recording_aux)
    try:
        for _ in range(INTERVAL):
            feed.step(None)
    finally:
        collector.close()
    assert 'reward_rms' in policy.running_statistics()
    assert len(aux_rows) == AUX_EPOCHS_DEFAULT * INTERVAL * N_SAMPLE
    for obs, target in aux_rows:
        assert float(target) == policy_targets[tuple(obs.tolist())]


AUX_EPOCHS_DEFAULT = PPGPolicy.default_config().aux.num_updates_per_train_iter

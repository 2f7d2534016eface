"""Checkpoints: round trips, crafted files that must not run code, corruption, write failures, policy fit."""
import errno
import os
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from easydict import EasyDict
from torch import nn

from tidal.base.errors import CheckpointError
from tidal.policies import SACPolicy
from tidal.worker import checkpoint as checkpoint_module
from tidal.worker.checkpoint import load_checkpoint, load_policy_weights, policy_state, save_checkpoint
from tidal.worker.rng import rng_state


class Payload:
    """Unpickling this runs a shell command that leaves a marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f'touch {self.marker}',)


def nested_state() -> dict:
    torch.manual_seed(0)
    net = nn.Linear(3, 2)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    net(torch.randn(4, 3)).pow(2).sum().backward()
    optimizer.step()
    return {'model': net.state_dict(), 'optimizer': optimizer.state_dict(), 'rng': rng_state(),
            'columns': {'obs': torch.randn(5, 3), 'done': torch.tensor([True, False]),
                        'half': torch.randn(4, 2).to(torch.bfloat16), 'strided': torch.arange(12.).view(3, 4).t()},
            'train_iter': 7, 'big': 2 ** 100, 'best_return': -1.5, 'last_return': None,
            'names': ['a', 'b'], 'betas': (0.9, 0.999)}


def assert_same(a, b) -> None:
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and torch.equal(a, b)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            assert_same(a[key], b[key])
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    else:
        assert a == b


def flip_tensor_byte(src: Path, dst: Path) -> None:
    """Rewrite the torch zip archive with one byte changed in its first tensor data entry."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, 'w', zipfile.ZIP_STORED) as zout:
        flipped = False
        for info in zin.infolist():
            data = zin.read(info.filename)
            if not flipped and '/data/' in info.filename and '/.data/' not in info.filename and data:
                data = bytes([data[0] ^ 0x01]) + data[1:]
                flipped = True
            zout.writestr(info, data)
    assert flipped


# ----- round trips ---------------------------------------------------------------------------

def test_nested_state_round_trips_exactly(tmp_path):
    state = nested_state()
    path = save_checkpoint(state, tmp_path / 'ckpt' / 'latest.pt')
    assert [p.name for p in path.parent.iterdir()] == ['latest.pt']
    assert_same(load_checkpoint(path), state)


def test_file_holds_the_tidal_layout(tmp_path):
    path = save_checkpoint({'w': torch.ones(2)}, tmp_path / 'a.pt')
    raw = torch.load(path, weights_only=True)
    assert set(raw) == {'format', 'version', 'checksum', 'state'}
    assert (raw['format'], raw['version'], len(raw['checksum'])) == ('tidal-checkpoint', 1, 64)


def test_checksum_depends_on_key_dtype_and_shape():
    base = checkpoint_module._checksum({'w': torch.zeros(4)}, 'test')
    assert base == checkpoint_module._checksum({'w': torch.zeros(4)}, 'test')
    assert base != checkpoint_module._checksum({'v': torch.zeros(4)}, 'test')
    assert base != checkpoint_module._checksum({'w': torch.zeros(4, dtype=torch.int32)}, 'test')
    assert base != checkpoint_module._checksum({'w': torch.zeros(2, 2)}, 'test')


# ----- crafted files -------------------------------------------------------------------------

def test_crafted_torch_file_is_refused_without_running_code(tmp_path):
    marker = tmp_path / 'pwned'
    torch.save({'format': 'tidal-checkpoint', 'state': Payload(marker)}, tmp_path / 'best.pt')
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(tmp_path / 'best.pt')
    assert str(info.value) == (
        f"checkpoint '{tmp_path / 'best.pt'}' holds Python objects that tidal does not load (it is not a "
        'tidal checkpoint, or it was crafted): it refers to posix.system')
    assert not marker.exists()


@pytest.mark.parametrize('protocol', [2, pickle.DEFAULT_PROTOCOL])
def test_crafted_plain_pickle_is_refused_without_running_code(tmp_path, protocol):
    marker = tmp_path / 'pwned'
    with open(tmp_path / 'best.pt', 'wb') as file:
        pickle.dump(Payload(marker), file, protocol=protocol)
    with pytest.raises(CheckpointError, match='holds Python objects that tidal does not load') as info:
        load_checkpoint(tmp_path / 'best.pt')
    assert '\n' not in str(info.value)
    assert not marker.exists()


def test_torch_file_without_the_tidal_layout_is_refused(tmp_path):
    torch.save({'model': {'w': torch.ones(2)}}, tmp_path / 'plain.pt')
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(tmp_path / 'plain.pt')
    assert str(info.value) == (f"checkpoint '{tmp_path / 'plain.pt'}' is not a tidal checkpoint (it has no "
                               "'format': 'tidal-checkpoint' entry)")


# ----- corruption ----------------------------------------------------------------------------

def test_flipped_byte_in_tensor_data_is_reported_as_corruption(tmp_path):
    save_checkpoint({'model': {'w': torch.randn(64, 3)}}, tmp_path / 'good.pt')
    flip_tensor_byte(tmp_path / 'good.pt', tmp_path / 'bad.pt')
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(tmp_path / 'bad.pt')
    assert str(info.value) == (f"checkpoint '{tmp_path / 'bad.pt'}' is corrupted: its tensor data does not "
                               'match the recorded checksum')


@pytest.mark.parametrize('keep', [0, 10, 0.5, -1])
def test_truncated_file_is_a_one_line_error(tmp_path, keep):
    data = save_checkpoint(nested_state(), tmp_path / 'good.pt').read_bytes()
    keep = int(len(data) * keep) if isinstance(keep, float) else keep
    (tmp_path / 'cut.pt').write_bytes(data[:keep])
    with pytest.raises(CheckpointError, match=r"checkpoint '.*cut\.pt' cannot be read") as info:
        load_checkpoint(tmp_path / 'cut.pt')
    assert '\n' not in str(info.value)


def test_missing_file_is_named(tmp_path):
    with pytest.raises(CheckpointError, match=r"^checkpoint '.*nope\.pt' not found$"):
        load_checkpoint(tmp_path / 'nope.pt')


# ----- writing -------------------------------------------------------------------------------

def test_full_disk_is_one_line_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    def no_space(*args, **kwargs):
        raise OSError(errno.ENOSPC, 'No space left on device')

    monkeypatch.setattr(torch, 'save', no_space)
    with pytest.raises(CheckpointError) as info:
        save_checkpoint({'w': torch.ones(2)}, tmp_path / 'latest.pt')
    assert str(info.value) == f"cannot write checkpoint '{tmp_path / 'latest.pt'}': No space left on device"
    assert list(tmp_path.iterdir()) == []


def test_failed_write_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    path = save_checkpoint({'w': torch.ones(2)}, tmp_path / 'latest.pt')
    monkeypatch.setattr(os, 'fsync', lambda fd: (_ for _ in ()).throw(OSError(errno.EIO, 'Input/output error')))
    with pytest.raises(CheckpointError, match='Input/output error'):
        save_checkpoint({'w': torch.zeros(2)}, path)
    monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir()] == ['latest.pt']
    assert torch.equal(load_checkpoint(path)['w'], torch.ones(2))


def test_a_real_full_disk_is_one_line_keeps_the_previous_checkpoint_and_leaves_no_partial_file(small_disk):
    path = save_checkpoint({'w': torch.ones(1000)}, small_disk.path / 'ckpt' / 'latest.pt')
    small_disk.fill(leave=64 * 1024)
    with pytest.raises(CheckpointError) as info:  # torch reports it as a RuntimeError from its zip writer
        save_checkpoint({'w': torch.zeros(1 << 18)}, path)
    assert str(info.value) == f"cannot write checkpoint '{path}': No space left on device"
    assert [p.name for p in path.parent.iterdir()] == ['latest.pt']
    assert torch.equal(load_checkpoint(path)['w'], torch.ones(1000))


def test_torch_zip_writer_failure_is_named_by_the_write_error_under_it(tmp_path, monkeypatch):
    def zip_writer_fails(obj, file):
        file.write(b'PK partial')
        try:
            raise OSError(errno.ENOSPC, 'No space left on device')
        except OSError:  # what torch.save raises while handling its file's write error
            raise RuntimeError('[enforce fail at inline_container.cc:672] . unexpected pos 827072 vs 826960')

    monkeypatch.setattr(torch, 'save', zip_writer_fails)
    with pytest.raises(CheckpointError) as info:
        save_checkpoint({'w': torch.ones(2)}, tmp_path / 'latest.pt')
    assert str(info.value) == f"cannot write checkpoint '{tmp_path / 'latest.pt'}': No space left on device"
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert list(tmp_path.iterdir()) == []


def test_a_runtime_error_that_is_no_write_failure_is_not_hidden(tmp_path, monkeypatch):
    def bug(obj, file):
        raise RuntimeError('a bug in a tensor')

    monkeypatch.setattr(torch, 'save', bug)
    with pytest.raises(RuntimeError, match='^a bug in a tensor$'):
        save_checkpoint({'w': torch.ones(2)}, tmp_path / 'latest.pt')
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason='root writes into read-only folders')
def test_read_only_folder_is_one_line(tmp_path):
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(CheckpointError, match=r"^cannot write checkpoint '.*': Permission denied$"):
            save_checkpoint({'w': torch.ones(2)}, tmp_path / 'latest.pt')
    finally:
        tmp_path.chmod(0o700)


@pytest.mark.parametrize('value, kind', [(np.zeros(3), 'numpy.ndarray'), (np.float64(1.0), 'numpy.float64'),
                                         (Payload(Path('x')), f'{Payload.__module__}.Payload'),
                                         (EasyDict(a=1), 'easydict.EasyDict')])
def test_state_that_would_not_load_back_is_refused_at_save(tmp_path, value, kind):
    state = {'replay_buffer': {'columns': [torch.ones(1), value]}}
    with pytest.raises(CheckpointError) as info:
        save_checkpoint(state, tmp_path / 'latest.pt')
    assert str(info.value).startswith(f"cannot save checkpoint '{tmp_path / 'latest.pt'}': "
                                      f"'replay_buffer.columns[1]' holds a {kind}, which checkpoints do not store")
    assert list(tmp_path.iterdir()) == []


# ----- policy weights ------------------------------------------------------------------------

def make_sac(hidden: int) -> SACPolicy:
    cfg = SACPolicy.default_config()
    cfg.type = 'sac'
    cfg.model.update(obs_shape=3, action_shape=1, actor_hidden_sizes=[hidden, hidden],
                     critic_hidden_sizes=[hidden, hidden])
    return SACPolicy(cfg, enable_field=['eval'])


def test_policy_weights_that_fit_load(tmp_path):
    trained, fresh = make_sac(8), make_sac(8)
    path = save_checkpoint({'policy': {'model': trained.model.state_dict()}}, tmp_path / 'best.pt')
    load_policy_weights(fresh, policy_state(load_checkpoint(path), path), path)
    assert all(torch.equal(a, b) for a, b in zip(trained.model.parameters(), fresh.model.parameters()))


def test_policy_of_another_size_is_one_line_naming_the_first_mismatch(tmp_path):
    path = save_checkpoint({'policy': {'model': make_sac(16).model.state_dict()}}, tmp_path / 'best.pt')
    with pytest.raises(CheckpointError) as info:
        load_policy_weights(make_sac(4), policy_state(load_checkpoint(path), path), path)
    message = str(info.value)
    assert '\n' not in message
    assert message.startswith(f"checkpoint '{path}' does not fit policy 'sac' as configured: size mismatch for ")
    assert ': checkpoint [16, 3], model [4, 3] (and ' in message
    assert message.endswith('more differences); use the config the checkpoint was trained with')


def test_policy_with_missing_keys_is_one_line(tmp_path):
    weights = make_sac(8).model.state_dict()
    first = next(iter(weights))
    del weights[first]
    with pytest.raises(CheckpointError) as info:
        load_policy_weights(make_sac(8), {'model': weights}, 'best.pt')
    assert str(info.value) == (f"checkpoint 'best.pt' does not fit policy 'sac' as configured: missing key "
                               f"'{first}'; use the config the checkpoint was trained with")


def test_policy_state_without_an_entry_its_policy_reads_is_one_line():
    class Stub:
        cfg = EasyDict(type='taac')

        def load_weights(self, state):
            state['switch_temperature']

    with pytest.raises(CheckpointError, match=r"^checkpoint 'best.pt' does not fit policy 'taac' as configured: "
                                              r"it has no 'switch_temperature' entry; use the config"):
        load_policy_weights(Stub(), {'model': {}}, 'best.pt')

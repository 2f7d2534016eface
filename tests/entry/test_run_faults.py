"""A run folder that cannot be written ends the run with one line and leaves no temporary file."""
from __future__ import annotations

import errno
import re

import pytest
import torch

from tidal import serial_pipeline
from tidal.entry.run import RunFolderError
from tidal.base.errors import CheckpointError, TidalError
from tidal.worker.checkpoint import load_checkpoint
from tidal.worker.logger import RunLogger

SHORT = ['policy.random_collect_size=20', 'policy.learn.batch_size=8', 'env.n_evaluator_episode=1',
         'policy.model.actor_hidden_sizes=[8]', 'policy.model.critic_hidden_sizes=[8]', 'env.stop_value=null']


def train(tmp_path, name='run'):
    return serial_pipeline('pendulum_sac', max_env_step=60, progress=False,
                           overrides=[*SHORT, f'exp_name={tmp_path / name}'])


def test_full_disk_while_logging_is_one_line_naming_the_run_folder(tmp_path, monkeypatch):
    def no_space(self, row):
        raise OSError(errno.ENOSPC, 'No space left on device', str(self.run_dir / 'evals.csv'))
    monkeypatch.setattr(RunLogger, 'evaluation', no_space)
    with pytest.raises(RunFolderError) as caught:
        train(tmp_path)
    assert str(caught.value) == (f"cannot write to the run folder '{tmp_path / 'run'}': No space left on device "
                                 f"('{tmp_path / 'run' / 'evals.csv'}')")
    assert not list((tmp_path / 'run').rglob('*.tmp'))


def test_full_disk_while_checkpointing_leaves_no_temporary_file(tmp_path, monkeypatch):
    def no_space(*args, **kwargs):
        raise OSError(errno.ENOSPC, 'No space left on device')
    monkeypatch.setattr(torch, 'save', no_space)
    with pytest.raises(CheckpointError, match=r"cannot write checkpoint '.*latest.pt': No space left on device"):
        train(tmp_path)
    assert not list((tmp_path / 'run').rglob('*.tmp'))


def test_read_only_run_folder_is_one_line_and_removes_the_new_folder(tmp_path, monkeypatch):
    def read_only(self, run_dir, *args, **kwargs):
        raise OSError(errno.EROFS, 'Read-only file system', str(run_dir))
    monkeypatch.setattr(RunLogger, '__init__', read_only)
    with pytest.raises(TidalError, match=f"cannot write the run folder '{tmp_path / 'run'}': Read-only file system"):
        train(tmp_path)
    assert not (tmp_path / 'run').exists()



@pytest.mark.parametrize('leave', [0, 16 * 1024, 32 * 1024, 64 * 1024])
def test_a_real_full_disk_ends_the_run_in_one_line_whichever_file_fills_it(small_disk, capsys, leave):
    """The disk fills while writing config.yaml, a checkpoint, log.txt, evals.csv, the events or the plot."""
    small_disk.fill(leave)
    with pytest.raises(TidalError) as caught:
        train(small_disk.path)
    run = small_disk.path / 'run'
    assert re.fullmatch(f"cannot write (the run folder|to the run folder|checkpoint) '{re.escape(str(run))}[^']*': "
                        f"No space left on device( \\('.*'\\))?", str(caught.value))
    assert 'Traceback' not in capsys.readouterr().err
    assert not list(small_disk.path.rglob('*.tmp'))
    for checkpoint in (run / 'ckpt').glob('*.pt'):  # those written before the disk filled load as they were
        load_checkpoint(checkpoint)

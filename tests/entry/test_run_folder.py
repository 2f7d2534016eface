"""The run folder a run writes to: its exp_name, or a new stamped sibling when that folder already holds a run,
said in one line and never shared with another process starting in the same second."""
import multiprocessing
import re
from pathlib import Path

import pytest

from tidal.entry.setup import new_run_dir


def test_an_empty_or_missing_folder_is_the_run_folder(tmp_path, capsys):
    (tmp_path / 'empty').mkdir()
    assert new_run_dir(str(tmp_path / 'empty')) == tmp_path / 'empty'
    assert new_run_dir(str(tmp_path / 'new' / 'run')) == tmp_path / 'new' / 'run'
    assert capsys.readouterr().err == ''


def test_a_folder_holding_a_run_gives_a_stamped_sibling_and_says_so_in_one_line(tmp_path, capsys):
    held = tmp_path / 'run'
    held.mkdir()
    (held / 'config.yaml').write_text('seed: 0\n')
    first, second = new_run_dir(str(held)), new_run_dir(str(held))
    assert re.fullmatch(r'run_\d{6}_\d{6}(_\d+)?', first.name) and first.is_dir() and not any(first.iterdir())
    assert second != first and second.is_dir()
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"tidal: '{held}' already holds a run, so this run writes to '{folder}' "
                     '(give --exp-name to choose the folder)' for folder in (first, second)]
    assert (held / 'config.yaml').read_text() == 'seed: 0\n'


def _claim(args: tuple[str, multiprocessing.synchronize.Barrier]) -> str:
    exp_name, barrier = args
    barrier.wait()
    return str(new_run_dir(exp_name))


def test_processes_starting_together_never_share_a_folder(tmp_path):
    held = tmp_path / 'run'
    held.mkdir()
    (held / 'config.yaml').write_text('seed: 0\n')
    context = multiprocessing.get_context('fork')
    with context.Manager() as manager:
        barrier = manager.Barrier(4)
        pool = context.Pool(4)
        try:
            folders = pool.map(_claim, [(str(held), barrier)] * 4)
        finally:  # close and join, not the context manager's terminate, which can hang on a busy machine
            pool.close()
            pool.join()
    assert len(set(folders)) == 4 and all(Path(folder).is_dir() for folder in folders)


@pytest.mark.parametrize('taken', [1, 3])
def test_a_taken_stamp_gets_the_next_number(tmp_path, monkeypatch, taken):
    held = tmp_path / 'run'
    held.mkdir()
    (held / 'config.yaml').write_text('seed: 0\n')
    monkeypatch.setattr('tidal.entry.setup.time.strftime', lambda _: '261128_120000')
    for number in range(1, taken + 1):
        (tmp_path / ('run_261128_120000' if number == 1 else f'run_261128_120000_{number}')).mkdir()
    assert new_run_dir(str(held)).name == f'run_261128_120000_{taken + 1}'

"""The run logger's files: a resumed TensorBoard writer never reopens the killed process's file; evals.csv's
columns; a full disk."""
import csv
import errno
import threading

from tidal.worker.logger import RunLogger
from tidal.worker.plot import EVAL_COLUMNS


def test_a_writer_opened_in_the_same_second_as_the_last_keeps_its_file_intact(tmp_path):
    killed = RunLogger(tmp_path)
    killed.scalars('train', {'loss': 1.0}, env_step=10, train_iter=1)
    position = killed.position(10)
    killed.close()
    [first] = (tmp_path / 'log').glob('events.out.tfevents.*')
    written = first.read_bytes()

    resumed = RunLogger(tmp_path, resume_from=position)  # well within the same second on any machine
    resumed.scalars('train', {'loss': 2.0}, env_step=20, train_iter=2)
    resumed.close()
    files = sorted((tmp_path / 'log').glob('events.out.tfevents.*'))
    assert len(files) == 2
    assert first.read_bytes() == written


EVAL_ROW = dict(env_step=100, train_iter=1, wall_time=1.5, return_mean=-5.0, return_std=0.5, episode_length_mean=200.0)


def test_evals_csv_has_the_collect_return_column_nan_where_no_episode_finished(tmp_path):
    logger = RunLogger(tmp_path)
    logger.evaluation({**EVAL_ROW, 'collect_return_mean': float('nan')})
    logger.evaluation({**EVAL_ROW, 'env_step': 200, 'collect_return_mean': -7.25})
    logger.close()
    with open(tmp_path / 'evals.csv', newline='') as f:
        rows = list(csv.reader(f))
    assert rows == [list(EVAL_COLUMNS), ['100', '1', '1.5', '-5.0', '0.5', '200.0', 'nan'],
                    ['200', '1', '1.5', '-5.0', '0.5', '200.0', '-7.25']]


def test_a_resumed_older_run_appends_in_the_columns_of_its_evals_csv(tmp_path):
    old_columns = list(EVAL_COLUMNS[:-1])  # written before collect_return_mean existed
    (tmp_path / 'evals.csv').write_text(','.join(old_columns) + '\n0,0,0.0,-10.0,1.0,200\n')
    logger = RunLogger(tmp_path)
    logger.evaluation({**EVAL_ROW, 'collect_return_mean': -7.25})
    logger.close()
    with open(tmp_path / 'evals.csv', newline='') as f:
        rows = list(csv.reader(f))
    assert rows == [old_columns, ['0', '0', '0.0', '-10.0', '1.0', '200'], ['100', '1', '1.5', '-5.0', '0.5', '200.0']]


def test_a_full_disk_raises_in_the_callers_thread_and_never_in_tensorboards(small_disk, monkeypatch):
    thread_errors = []
    monkeypatch.setattr(threading, 'excepthook', thread_errors.append)
    logger = RunLogger(small_disk.path / 'run')
    small_disk.fill()
    caught = []

    def log_on_a_full_disk():
        # more events than tensorboardX's file buffer takes, so its thread writes (and fails) on its own, and
        # more than its queue holds, which a dead writer thread would leave blocking
        for step in range(200):
            for write in (lambda: logger.scalars('train', {f'loss_{i}': 1.0 for i in range(4)}, step, step),
                          lambda: logger.evaluation({**EVAL_ROW, 'collect_return_mean': 1.0})):
                try:
                    write()
                except OSError as err:
                    caught.append(err.errno)
        for write in (lambda: logger.position(200), logger.close):
            try:
                write()
            except OSError as err:
                caught.append(err.errno)

    worker = threading.Thread(target=log_on_a_full_disk, daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive(), 'logging blocked on a full disk'
    assert thread_errors == []
    assert len(caught) == 402 and set(caught) == {errno.ENOSPC}


def test_a_resume_cuts_the_event_files_back_to_the_checkpoint_even_after_a_record_cut_short(tmp_path):
    from tensorboardX.proto.event_pb2 import Event

    from tidal.worker.event_files import event_records
    killed = RunLogger(tmp_path)
    killed.scalars('train', {'loss': 1.0}, env_step=10, train_iter=1)
    position = killed.position(10)
    killed.scalars('train', {'loss': 2.0}, env_step=20, train_iter=2)
    killed.scalars('train', {'loss': 3.0}, env_step=30, train_iter=3)
    killed.close()
    [first] = (tmp_path / 'log').glob('events.out.tfevents.*')
    with open(first, 'r+b') as file:  # the kill landed inside the last record's write
        file.truncate(first.stat().st_size - 3)

    resumed = RunLogger(tmp_path, resume_from=position)
    resumed.scalars('train', {'loss': 4.0}, env_step=20, train_iter=2)
    resumed.close()
    steps = [(path.name[-1], event.step, value.simple_value)
             for path in sorted((tmp_path / 'log').glob('events.out.tfevents.*'))
             for event in map(Event.FromString, event_records(path)) for value in event.summary.value]
    assert steps == [('0', 10, 1.0), ('1', 20, 4.0)]

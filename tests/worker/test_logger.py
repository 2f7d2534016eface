"""The run logger's TensorBoard files: a resumed writer never reopens the killed process's file."""
from tidal.worker.logger import RunLogger


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

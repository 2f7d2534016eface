"""The parts a pipeline combines: collectors, evaluator, learner, replay buffers, logs and checkpoints."""
from tidal.worker.checkpoint import load_checkpoint, save_checkpoint
from tidal.worker.collector import EpisodeCollector, SampleCollector
from tidal.worker.demos import Demos, load_demos, save_demos
from tidal.worker.evaluator import EvalResult, Evaluator
from tidal.worker.learner import Learner
from tidal.worker.logger import RunLogger
from tidal.worker.prioritized_buffer import PrioritizedReplayBuffer
from tidal.worker.prioritized_trajectory_buffer import PrioritizedTrajectoryBuffer
from tidal.worker.replay_buffer import ReplayBuffer
from tidal.worker.trajectory_buffer import TrajectoryBuffer

__all__ = ['Demos', 'EpisodeCollector', 'EvalResult', 'Evaluator', 'Learner', 'PrioritizedReplayBuffer',
           'PrioritizedTrajectoryBuffer', 'ReplayBuffer', 'RunLogger', 'SampleCollector', 'TrajectoryBuffer', 'load_checkpoint', 'load_demos', 'save_checkpoint',
           'save_demos']

"""A seed group's shares as processes on this machine: `python -m tidal.entry.group_worker` each, in a session of
its own (so that the driver alone hears the terminal's Ctrl-C and hands it on as SIGTERM), its output and its
progress read by threads of the driver."""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import IO, Any, Callable, Optional, Sequence

from easydict import EasyDict

from tidal.base.device import policy_device
from tidal.entry.group_shares import ShareExit, local_processes

KILL_WAIT_S = 10.0  # how long close() waits for a process it killed


@dataclass
class Worker:
    """One share's process and what the driver last heard from it."""

    seeds: list[int]
    proc: subprocess.Popen
    live: list[int]
    error: Optional[str] = None  # the error that kept it from building its seeds
    streams: int = 3  # stdout, stderr and the progress pipe, until each reaches its end


class ProcessRunner:
    """Each share in a process of its own; on cuda with several visible GPUs (and no `cuda:N` named), process k
    sees only the k-th of them (modulo their number)."""

    def __init__(self, cfg: EasyDict) -> None:
        device = policy_device(cfg.policy)
        self.gpus: list[str] = _visible_gpus() if device.type == 'cuda' and device.index is None else []
        self.workers: list[Worker] = []
        self.events: queue.Queue = queue.Queue()

    def processes(self, cfg: EasyDict, seeds: int) -> tuple[int, str]:
        return local_processes(cfg, seeds)

    def start(self, group_dir: os.PathLike, shares: Sequence[Sequence[int]]) -> None:
        for index, share in enumerate(shares):
            read_end, write_end = os.pipe()
            env = {**os.environ, 'PYTHONUNBUFFERED': '1'}
            if len(self.gpus) > 1:
                env['CUDA_VISIBLE_DEVICES'] = self.gpus[index % len(self.gpus)]
            cmd = [sys.executable, '-m', 'tidal.entry.group_worker', os.fspath(group_dir),
                   '--seeds', ','.join(map(str, share)), '--progress-fd', str(write_end)]
            try:
                proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(write_end,),
                                        start_new_session=True, env=env, text=True, errors='replace')
            finally:
                os.close(write_end)
            assert proc.stdout is not None and proc.stderr is not None
            self.workers.append(Worker(list(share), proc, list(share)))
            self._read(index, proc.stdout, lambda line: ('line', line, False))
            self._read(index, proc.stderr, lambda line: ('line', line, True))
            self._read(index, os.fdopen(read_end, errors='replace'), _progress)

    def _read(self, index: int, stream: IO[str], event: Callable[[str], tuple[Any, ...]]) -> None:
        def pump() -> None:
            with stream:
                for line in stream:
                    self.events.put((index, *event(line.rstrip('\n'))))
            self.events.put((index, 'end'))
        threading.Thread(target=pump, daemon=True).start()

    def wait(self, on_steps: Callable[[dict[int, int]], None],
             on_line: Callable[[str, bool], None]) -> list[ShareExit]:
        while any(worker.streams for worker in self.workers):
            try:
                index, kind, *rest = self.events.get(timeout=1.0)
            except queue.Empty:
                self._unblock()
                continue
            worker = self.workers[index]
            if kind == 'end':
                worker.streams -= 1
            elif kind == 'line':
                on_line(*rest)
            elif kind == 'steps':
                steps, live = rest
                worker.live = live
                on_steps(steps)
            elif kind == 'error':
                worker.error = rest[0]
                self.stop_all()  # the others build the same config: they would fail alike
        return [self._exit(worker) for worker in self.workers]

    def _unblock(self) -> None:
        """A process that ended while a child of its own (an env's subprocess) holds its pipes open: stop
        waiting for what it can no longer write."""
        for worker in self.workers:
            if worker.streams and worker.proc.poll() is not None:
                _kill_group(worker.proc, signal.SIGKILL)
                worker.streams = 0

    def _exit(self, worker: Worker) -> ShareExit:
        code = worker.proc.wait()
        if worker.error is not None:
            return ShareExit(worker.seeds, signum=None, error=worker.error)
        if code == 0:
            return ShareExit(worker.seeds)
        if code - 128 in (signal.SIGTERM, signal.SIGINT):
            return ShareExit(worker.seeds, signum=code - 128)
        how = (f'was killed by {signal.Signals(-code).name}' if code < 0 and -code in signal.valid_signals()
               else f'exited with code {code}')
        return ShareExit(worker.seeds, worker.live, died=f'its process (pid {worker.proc.pid}) {how}')

    def stop_all(self) -> None:
        for worker in self.workers:
            if worker.proc.poll() is None:
                try:
                    os.kill(worker.proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass

    def close(self) -> None:
        """Kill every process still running, with what it started (its session), and wait for it."""
        for worker in self.workers:
            _kill_group(worker.proc, signal.SIGKILL)
            try:
                worker.proc.wait(KILL_WAIT_S)
            except subprocess.TimeoutExpired:
                pass


def _progress(line: str) -> tuple[Any, ...]:
    """A worker's report: its seeds' env steps and which seeds still train."""
    report = json.loads(line)
    if 'error' in report:
        return 'error', report['error']
    return 'steps', {int(seed): step for seed, step in report['steps'].items()}, report['live']


def _kill_group(proc: subprocess.Popen, signum: int) -> None:
    """Send `signum` to the process's session (it leads one: start_new_session), so its own children go too."""
    try:
        os.killpg(proc.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _visible_gpus() -> list[str]:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES entries for its workers."""
    visible = os.environ.get('CUDA_VISIBLE_DEVICES')
    if visible is not None:
        return [entry.strip() for entry in visible.split(',') if entry.strip()]
    import torch
    return [str(index) for index in range(torch.cuda.device_count())]


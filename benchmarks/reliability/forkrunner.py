"""Runs many `python -m tidal ...` cases quickly: import tidal once, then fork one child per case.

Starting Python and importing torch, gymnasium and tidal costs about 3 s per process, which would
dominate a list of several hundred config cases that mostly fail within milliseconds. This runner
imports them once and forks a child per case. The child does what `python -m tidal ARGS` does in a
fresh process: its own working directory and process group, stdin from /dev/null, stdout and stderr
into files, `sys.path[0]` set to the working directory, `tidal/__main__.py` run as `__main__`, an
uncaught exception printed by `sys.excepthook` with exit code 1, non-daemon threads joined and atexit
handlers run before the process exits.

Protocol: one JSON request per line on stdin,
    {"argv": [...], "cwd": DIR, "stdout": FILE, "stderr": FILE, "timeout": SECONDS, "mem_gb": GB}
one JSON answer per line on stdout,
    {"rc": INT or null, "timed_out": BOOL, "seconds": FLOAT}
(`rc` is negative when the child died from a signal other than the runner's timeout kill).
"""
import atexit
import json
import os
import resource
import runpy
import signal
import sys
import threading
import time


def preload() -> None:
    """Import what every tidal run imports, so that each forked case starts warm.

    `torch._dynamo` is imported by the first `torch.optim.Adam(...)` of a process (1.3 s here)."""
    import importlib
    for name in ('numpy', 'torch', 'torch._dynamo', 'gymnasium', 'gymnasium.envs.classic_control', 'yaml',
                 'easydict', 'tqdm', 'tensorboardX', 'matplotlib', 'tidal', 'tidal.entry.cli',
                 'tidal.entry.pipelines', 'tidal.entry.evaluate'):
        try:
            importlib.import_module(name)
        except Exception:  # a module the tested tree does not have: the case imports what it needs
            pass


def _exit_code(code: object) -> int:
    """The process exit status Python derives from `sys.exit(code)`."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except Exception:
        pass
    return 1


def child(request: dict) -> None:
    """Become `python -m tidal ARGS` in the request's folder; never returns."""
    code = 1
    try:
        os.setpgid(0, 0)
        os.chdir(request['cwd'])
        null = os.open(os.devnull, os.O_RDONLY)
        out = os.open(request['stdout'], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        err = os.open(request['stderr'], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        for fd in (null, out, err):
            os.close(fd)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if request.get('mem_gb'):
            limit = int(request['mem_gb'] * 2 ** 30)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        os.environ.update(request.get('env', {}))
        sys.path[0] = os.getcwd()
        sys.argv = [os.path.join(os.path.dirname(sys.modules['tidal'].__file__), '__main__.py')
                    if 'tidal' in sys.modules else '-m'] + list(request['argv'])
        try:
            runpy.run_module('tidal', run_name='__main__', alter_sys=True)
            code = 0
        except SystemExit as exit_:
            code = _exit_code(exit_.code)
        except BaseException:
            sys.excepthook(*sys.exc_info())
            code = 1
        try:
            threading._shutdown()  # what Python does at exit: wait for non-daemon threads
        except Exception:
            pass
        try:
            atexit._run_exitfuncs()
        except BaseException:
            pass
    except BaseException:
        try:
            import traceback
            traceback.print_exc()
        except BaseException:
            pass
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def run(request: dict) -> dict:
    sys.stdout.flush()
    sys.stderr.flush()
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        child(request)
    deadline = start + float(request.get('timeout', 60))
    status, timed_out = None, False
    while status is None:
        done, raw = os.waitpid(pid, os.WNOHANG)
        if done:
            status = raw
        elif time.perf_counter() > deadline:
            timed_out = True
            _kill_group(pid)
            _, status = os.waitpid(pid, 0)
        else:
            time.sleep(0.01)
    seconds = time.perf_counter() - start
    _kill_group(pid)  # workers a case left behind (subprocess env managers)
    rc = None if timed_out else os.waitstatus_to_exitcode(status)
    return {'rc': rc, 'timed_out': timed_out, 'seconds': round(seconds, 3)}


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def main() -> None:
    preload()
    answers = sys.stdout
    print(json.dumps({'ready': True}), file=answers, flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        answer = run(json.loads(line))
        print(json.dumps(answer), file=answers, flush=True)


if __name__ == '__main__':
    main()

"""Run the tidal CLI with a full disk or a read-only run folder, simulated inside the process.

    python diskfault.py MODE [tidal CLI arguments...]

Root ignores file permissions and a real full disk would hurt everything else on the machine, so the
faults are injected by patching Python: `builtins.open` (write modes, and every write() on a file opened
for writing), `os.mkdir`, `os.replace`, `os.rename` and `torch.save`. Only paths inside the working
directory (where the run folder lives) fail; the rest of the file system works as usual.

Modes:
  enospc_ckpt         every torch.save writes half of its bytes, then raises ENOSPC (disk full mid-write)
  enospc_replace      os.replace / os.rename raise ENOSPC
  enospc_after_start  from the first evaluation on (first open of evals.csv), every write raises ENOSPC
  erofs_start         the working folder is read-only from the start (mkdir, open for writing, ... raise EROFS)
  erofs_after_start   the run folder turns read-only at the first evaluation

Each injected fault appends one line to the file named by RELIABILITY_FAULT_LOG (when set), so the
suite can tell a fault that was handled from one that never fired. Uncaught exceptions propagate
as they would from `python -m tidal`.
"""
import builtins
import errno
import io
import os
import sys

MODES = ('enospc_ckpt', 'enospc_replace', 'enospc_after_start', 'erofs_start', 'erofs_after_start')


class Faults:
    def __init__(self, mode: str, root: str) -> None:
        self.mode = mode
        self.root = os.path.realpath(root)
        self.errno = errno.EROFS if mode.startswith('erofs') else errno.ENOSPC
        self.armed = mode in ('erofs_start',)
        self.log = os.environ.get('RELIABILITY_FAULT_LOG')
        self.real_open = builtins.open

    def inside(self, path) -> bool:
        try:
            full = os.path.realpath(os.fspath(path))
        except TypeError:
            return False
        return full == self.root or full.startswith(self.root + os.sep)

    def fail(self, what: str, path) -> None:
        if self.log:
            with self.real_open(self.log, 'a') as f:
                f.write(f'{self.mode} {what} {os.path.basename(os.fspath(path))}\n')
        raise OSError(self.errno, os.strerror(self.errno), os.fspath(path))

    def arm_on(self, path) -> None:
        if self.mode.endswith('after_start') and not self.armed and os.path.basename(os.fspath(path)) == 'evals.csv':
            self.armed = True


class FaultyFile:
    """A file opened for writing whose writes fail once the fault is armed."""

    def __init__(self, raw, faults: Faults, path) -> None:
        self._raw, self._faults, self._path = raw, faults, path

    def write(self, data):
        if self._faults.armed:
            self._faults.fail('write', self._path)
        return self._raw.write(data)

    def writelines(self, lines):
        if self._faults.armed:
            self._faults.fail('write', self._path)
        return self._raw.writelines(lines)

    def flush(self):
        if self._faults.armed:
            self._faults.fail('flush', self._path)
        return self._raw.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._raw.close()
        return False

    def __iter__(self):
        return iter(self._raw)

    def __getattr__(self, name):
        return getattr(self._raw, name)


def install(mode: str, root: str) -> Faults:
    import torch
    faults = Faults(mode, root)
    real_open, real_mkdir = builtins.open, os.mkdir
    real_replace, real_rename, real_save = os.replace, os.rename, torch.save
    writes_fail = mode in ('enospc_after_start', 'erofs_start', 'erofs_after_start')

    def faulty_open(file, mode='r', *args, **kwargs):
        writing = isinstance(file, (str, bytes, os.PathLike)) and any(c in mode for c in 'wax+')
        if writing and faults.inside(file):
            faults.arm_on(file)
            if writes_fail and faults.armed:
                faults.fail('open', file)
            handle = real_open(file, mode, *args, **kwargs)
            return FaultyFile(handle, faults, file) if writes_fail else handle
        return real_open(file, mode, *args, **kwargs)

    def faulty_mkdir(path, *args, **kwargs):
        if mode.startswith('erofs') and faults.armed and faults.inside(path):
            faults.fail('mkdir', path)
        return real_mkdir(path, *args, **kwargs)

    def faulty_move(real):
        def move(src, dst, *args, **kwargs):
            fire = mode == 'enospc_replace' or (writes_fail and faults.armed)
            if fire and (faults.inside(src) or faults.inside(dst)):
                faults.fail('replace', dst)
            return real(src, dst, *args, **kwargs)
        return move

    def faulty_save(obj, f, *args, **kwargs):
        target = f if isinstance(f, (str, bytes, os.PathLike)) else getattr(f, 'name', None)
        inside = target is not None and faults.inside(target)
        if inside and mode == 'enospc_ckpt':
            buffer = io.BytesIO()
            real_save(obj, buffer, *args, **kwargs)
            data = buffer.getvalue()
            if isinstance(f, (str, bytes, os.PathLike)):
                with real_open(f, 'wb') as out:
                    out.write(data[:len(data) // 2])
            else:
                f.write(data[:len(data) // 2])
            faults.fail('torch.save', target)
        if inside and writes_fail and faults.armed:
            faults.fail('torch.save', target)
        return real_save(obj, f, *args, **kwargs)

    builtins.open = faulty_open
    io.open = faulty_open
    os.mkdir = faulty_mkdir
    os.replace = faulty_move(real_replace)
    os.rename = faulty_move(real_rename)
    torch.save = faulty_save
    return faults


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in MODES:
        print(f'usage: diskfault.py {{{",".join(MODES)}}} [tidal arguments...]', file=sys.stderr)
        return 64
    mode, argv = sys.argv[1], sys.argv[2:]
    install(mode, os.getcwd())
    sys.argv = ['tidal'] + argv
    from tidal.entry.cli import main as tidal_main
    return tidal_main(argv)


if __name__ == '__main__':
    sys.exit(main())

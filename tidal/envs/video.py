"""Recording episodes: an env made with `render=True` renders frames only for the episodes it is asked to record.

gymnasium's `RecordVideo` picks episodes by its own counter of resets and names the files itself, refuses to
start without moviepy, and its MP4s (moviepy's) lose each episode's last frame. The evaluator needs exactly
the episodes it counts (env i's first episodes after its seeded reset), under names that say which
evaluation they show, and a GIF where no MP4 encoder is installed. `EpisodeRecorder` captures the frames
`RecordVideo` does (the reset frame, then one per step: an episode of n steps has n + 1 frames) and writes
every one of them, MP4 through imageio-ffmpeg's ffmpeg, GIF through Pillow.
"""
from __future__ import annotations

import importlib.util
import os
import re
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, SupportsFloat

import gymnasium
import numpy as np

from tidal.base.errors import EnvError

#: Formats a video can be written in, by file suffix.
VIDEO_FORMATS = ('mp4', 'gif')
_MP4_MODULE = 'imageio_ffmpeg'  # ships an ffmpeg binary
#: What gymnasium's own envs draw their frames with (classic control and Box2D: pygame), which the video and hub
#: extras install; a missing one is named with the extra's pip command.
DRAWING_PACKAGES = ('pygame',)
VIDEO_INSTALL = 'pip install -e ".[video]"'


class EpisodeRecorder(gymnasium.Wrapper):
    """Writes the next episodes to the files in `planned_videos` (set through the vector env's `set_attr`),
    one file per episode, starting at the next reset; records nothing once the plan is used up.

    An episode's file is written when the episode's env resets (in the step that ends it, with gymnasium's
    same-step autoreset); an unfinished episode is dropped on close, since no evaluation counted it.
    """

    def __init__(self, env: gymnasium.Env, name: str) -> None:
        super().__init__(env)
        self.name = name  # the env id, for errors
        require_rgb_array(name, env.metadata)
        if env.render_mode != 'rgb_array':
            raise EnvError(f"env '{name}' cannot be recorded: it was made with render_mode={env.render_mode!r}, "
                           f"not 'rgb_array' (its env type's _make_raw must pass render_mode on)")
        self.fps = int(env.metadata.get('render_fps') or 30)
        self._planned: list[str] = []
        self._path: Optional[str] = None  # file of the episode being recorded
        self._frames: list[np.ndarray] = []

    @property
    def planned_videos(self) -> list[str]:
        return list(self._planned)

    @planned_videos.setter
    def planned_videos(self, paths: list[str]) -> None:
        self._planned, self._path, self._frames = [str(path) for path in paths], None, []

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict[str, Any]] = None) -> tuple[Any, dict]:
        if self._path is not None:
            write_video(self._path, self._frames, self.fps)
            self._path, self._frames = None, []
        obs, info = self.env.reset(seed=seed, options=options)
        if self._planned:
            self._path = self._planned.pop(0)
            self._capture()
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict]:
        result = self.env.step(action)
        if self._path is not None:
            self._capture()
        return result

    def close(self) -> None:
        self._path, self._frames = None, []
        super().close()

    def _capture(self) -> None:
        frame = _last_frame(self.env.render())
        if not isinstance(frame, np.ndarray):
            raise EnvError(f"env '{self.name}' returned {type(frame).__name__} from render(), not an rgb_array frame")
        self._frames.append(frame)


def require_rgb_array(name: str, metadata: Mapping[str, Any]) -> None:
    """Refuse, in one line naming env `name`, an env whose metadata declares no 'rgb_array' render mode."""
    modes = list(metadata.get('render_modes') or [])
    if 'rgb_array' not in modes:
        raise EnvError(f"env '{name}' cannot be recorded: it renders no 'rgb_array' frames "
                       f"(its render modes: {', '.join(modes) or 'none'})")


def _last_frame(frame: Any) -> Any:
    """What render() gave, less the list that envs batching their frames until render() give (its last)."""
    if isinstance(frame, list):
        return frame[-1] if frame else None
    return frame


def check_recordable(make_env: Callable[[], gymnasium.Env], name: str, install: str = VIDEO_INSTALL) -> None:
    """Render one frame of a fresh env made for recording, so that an env that cannot render fails in one line
    before anything runs; a drawing package missing is named, with `install`, the pip command of the extra that
    brings it. The probe's reset leaves numpy's global generator as it was."""
    with warnings.catch_warnings():  # gymnasium's and GLFW's warnings: the error below says it in one line
        warnings.filterwarnings('ignore', message='.*render_mode')
        warnings.filterwarnings('ignore', module='glfw')
        env = make_env()  # EpisodeRecorder refuses an env without rgb_array frames
        state = np.random.get_state()
        try:
            env.reset(seed=0)
            frame = env.render()
        except Exception as err:
            package = _missing_drawing_package(err)
            if package is not None:
                raise EnvError(f"env '{name}' draws its frames with {package}, which is not installed: {install}") \
                    from err
            raise EnvError(f"env '{name}' cannot render frames: {type(err).__name__}: {' '.join(str(err).split())}"
                           f"{_gl_hint(err)}") from err
        finally:
            np.random.set_state(state)
            env.close()
    frame = _last_frame(frame)
    if not isinstance(frame, np.ndarray) or frame.ndim != 3:
        raise EnvError(f"env '{name}' cannot be recorded: render() returned {type(frame).__name__}, "
                       f"not an [H, W, 3] rgb_array frame")


def _missing_drawing_package(err: BaseException) -> Optional[str]:
    """The package of DRAWING_PACKAGES whose import failed behind `err` (gymnasium raises DependencyNotInstalled
    from the ImportError), else None."""
    cause: Optional[BaseException] = err
    while cause is not None:
        package = (cause.name or '').split('.')[0] if isinstance(cause, ImportError) else ''
        if package in DRAWING_PACKAGES:
            return package
        cause = cause.__cause__ or cause.__context__
    return None


def _gl_hint(err: BaseException) -> str:
    """MuJoCo renders through OpenGL: without a display it needs an offscreen backend named in MUJOCO_GL."""
    text = f'{type(err).__module__} {err}'.lower()
    if not re.search(r'mujoco|opengl|\begl\b|glfw|osmesa|glgeterror', text):
        return ''
    chosen = os.environ.get('MUJOCO_GL')
    tried = f' (MUJOCO_GL={chosen} failed)' if chosen else ''
    return f'; on a machine without a display set MUJOCO_GL=egl (or osmesa){tried}'


def mp4_encoder_missing() -> Optional[str]:
    """Why MP4 cannot be written here ('imageio_ffmpeg is not installed'), or None where it can."""
    return f'{_MP4_MODULE} is not installed' if importlib.util.find_spec(_MP4_MODULE) is None else None


def resolve_video_format(requested: Optional[str]) -> tuple[str, Optional[str]]:
    """The format to write (`requested`, else MP4) and, where MP4 was wanted but cannot be written here, the
    one line that says GIF is written instead."""
    if requested is not None and requested not in VIDEO_FORMATS:
        raise EnvError(f"unknown video format '{requested}'; choose one of {', '.join(VIDEO_FORMATS)}")
    if requested == 'gif':
        return 'gif', None
    missing = mp4_encoder_missing()
    if missing is None:
        return 'mp4', None
    if requested == 'mp4':
        raise EnvError(f'cannot write MP4 videos: {missing} ({VIDEO_INSTALL})')
    return 'gif', f'no MP4 encoder ({missing}; {VIDEO_INSTALL}): recording GIF instead'


def write_video(path: str | os.PathLike, frames: list[np.ndarray], fps: int) -> None:
    """Write `frames` (RGB uint8, [H, W, 3]) to `path` as MP4 or GIF, by its suffix."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == '.gif':
        _write_gif(path, frames, fps)
    else:
        _write_mp4(path, frames, fps)


def _write_mp4(path: Path, frames: list[np.ndarray], fps: int) -> None:
    """H.264 in yuv420p, which every player reads; that needs even sides (a frame of odd size is scaled up)."""
    import imageio_ffmpeg
    height, width = frames[0].shape[:2]
    writer = imageio_ffmpeg.write_frames(str(path), (width, height), fps=fps, codec='libx264', pix_fmt_out='yuv420p',
                                         macro_block_size=2, ffmpeg_log_level='error')
    writer.send(None)  # starts ffmpeg
    try:
        for frame in frames:
            writer.send(np.ascontiguousarray(frame, dtype=np.uint8))
    finally:
        writer.close()


def _write_gif(path: Path, frames: list[np.ndarray], fps: int) -> None:
    """Pillow (already needed by matplotlib) writes GIF; a GIF counts frame time in hundredths of a second."""
    from PIL import Image
    images = [Image.fromarray(np.asarray(frame, dtype=np.uint8)) for frame in frames]
    duration = max(2, round(100 / fps)) * 10  # ms; browsers slow down frames shorter than 20 ms
    images[0].save(path, save_all=True, append_images=images[1:], duration=duration, loop=0)

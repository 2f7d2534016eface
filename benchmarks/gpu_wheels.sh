#!/usr/bin/env bash
# The packages tidal needs beyond PyTorch, as wheels for a GPU machine's Python 3.12 (x86-64) that has PyTorch
# but cannot reach a package index: into benchmarks/.wheels/ (git-ignored), the versions installed here; and
# Stable-Baselines3 with what it needs beyond them and the GPU image (pandas, cloudpickle are there), for
# compile_speed.py's SB3 arm.
# There: pip install --no-index --no-deps --target SITE benchmarks/.wheels/*.whl, then PYTHONPATH=SITE:. and
# MUJOCO_GL=disable python3 benchmarks/gpu_check.py (no part renders; an image without EGL's libraries fails
# to import mujoco with MUJOCO_GL=egl).
set -euo pipefail
cd "$(dirname "$0")"
version() { python3 -m pip show "$1" | sed -n 's/^Version: //p'; }
for package in easydict tensorboardX gymnasium farama-notifications mujoco mujoco-core mujoco-studio websockets glfw pyopengl; do
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --platform any -d .wheels "$package==$(version "$package")"
done
for package in stable-baselines3==2.9.2 pytz tzdata; do
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        --platform any -d .wheels "$package"
done
ls .wheels

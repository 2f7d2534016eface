from setuptools import find_packages, setup

setup(
    name='tidal',
    version='0.1.0',
    description='A registry-driven reinforcement-learning framework in PyTorch',
    long_description=open('README.md', encoding='utf-8').read(),
    long_description_content_type='text/markdown',
    packages=find_packages(include=['tidal', 'tidal.*']),
    python_requires='>=3.9',
    # torch is deliberately unpinned: install the build for your machine first
    # (`pip install torch==2.13.0` for the CPU build); any torch>=2.1 satisfies this range.
    install_requires=[
        'torch>=2.1',
        'numpy>=1.24',
        'numba>=0.60',  # compiles the MuZero search's tree kernels (tidal/mcts/kernels.py)
        'easydict>=1.10',
        'tensorboardX>=2.6',
        'gymnasium>=1.1',
        'pyyaml>=6.0',
        'tqdm>=4.60',
        'matplotlib>=3.6',
    ],
    extras_require={
        # the multi-agent tests run MPE, the DI-engine config tests Box2D, MuJoCo and Atari envs, the Ray tests Ray
        'test': ['pytest>=7', 'mpe2', 'pettingzoo', 'box2d>=2.3.10', 'pygame>=2.1', 'mujoco>=3', 'imageio>=2.14',
                 'ale-py>=0.9', 'opencv-python-headless>=4.5', 'ray>=2.9', 'import-linter>=2.0', 'mypy>=1.10',
                 'types-PyYAML', 'types-tqdm', 'optuna>=4', 'onnx>=1.16', 'onnxruntime>=1.18',
                 'onnxscript>=0.2', 'imageio-ffmpeg>=0.5', 'huggingface_hub>=0.20',
                 'mkdocs>=1.6', 'mkdocs-material>=9.5', 'mkdocstrings[python]>=0.26', 'black>=24',  # CI builds the docs
                 'minari[create,hdf5]>=0.5,<0.6', 'wandb>=0.19.10', 'mlflow-skinny>=2.10', 'sqlalchemy>=2',
                 'alembic>=1.8'],
        'dist': ['ray>=2.9'],
        # logger.backends: W&B (several runs in one process need reinit='create_new'); MLflow's client without
        # its server, with what its SQLite store (sqlite:///mlflow.db) needs
        'wandb': ['wandb>=0.19.10'],
        'mlflow': ['mlflow-skinny>=2.10', 'sqlalchemy>=2', 'alembic>=1.8'],
        # mkdocs serve / build; Black formats the API reference's signatures (mkdocs.yml: separate_signature), which
        # mkdocstrings otherwise prints unformatted with a line asking for Black or Ruff
        'docs': ['mkdocs>=1.6', 'mkdocs-material>=9.5', 'mkdocstrings[python]>=0.26', 'black>=24'],
        'tune': ['optuna>=4'],  # tidal tune; studies are stored in SQLite
        'export': ['onnx>=1.16', 'onnxruntime>=1.18', 'onnxscript>=0.2'],  # tidal export --format onnx and its parity check
        # tidal eval --video writes MP4 (else GIF with Pillow); gymnasium's classic-control envs draw with pygame
        'video': ['imageio>=2.14', 'imageio-ffmpeg>=0.5', 'pygame>=2.1'],
        # tidal export --hub: replay.mp4 (drawn as for --video), and huggingface_hub to parse the model card and
        # upload the folder
        'hub': ['imageio>=2.14', 'imageio-ffmpeg>=0.5', 'pygame>=2.1', 'huggingface_hub>=0.20'],
        'mujoco': ['mujoco>=3', 'imageio>=2.14'],  # gymnasium's MuJoCo envs import imageio
        'atari': ['ale-py>=0.9', 'opencv-python-headless>=4.5'],  # ale-py ships the ROMs; gymnasium's
        # AtariPreprocessing resizes frames with OpenCV
        'box2d': ['box2d>=2.3.10', 'pygame>=2.1'],
        'minatar': ['minatar>=1.0.15'],
        'marl': ['mpe2', 'pettingzoo'],
        # collect-demos --format minari and SQIL's Minari datasets: DataCollector needs jax ('create'), the
        # datasets' default storage h5py ('hdf5')
        'minari': ['minari[create,hdf5]>=0.5,<0.6'],
        'envpool': ['envpool>=1.2,<1.3'],  # env_manager.type='envpool'; with its assets about 0.7 GB
    },
    entry_points={'console_scripts': ['tidal=tidal.entry.cli:main']},
)

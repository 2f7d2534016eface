"""The run-level keys of a config, declared as every class declares its own: a `config` dict with rules."""
from __future__ import annotations


class RunConfig:
    """Top-level keys of a compiled config, beside its env, env_manager and policy sections."""

    config: dict = dict(
        # (str) Name of the run folder; empty means '<policy type>_<env id>'.
        exp_name='',
        # (int in [0, 2**63 - 1]) Seed of the run; compile_config's `seed` argument (the CLI's -s) wins.
        seed=0,
        # (list[str]) Modules to import before names are looked up (a user's own policy, model or env).
        import_names=[],
        # (int in [0, 1024]) CPU threads for torch; 0 keeps torch's default (one per core). Small networks
        # run fastest on 1 whenever anything else uses the other cores, where extra threads spin and stall.
        torch_threads=1,
        # (bool) Flush subnormal floats to zero on CPU. Adam's second moments of rarely-moving weights
        # decay into subnormals, which make every matmul that touches them several times slower.
        flush_denormal=True,
        # (bool) Let CUDA matmuls and cuDNN convolutions round float32 inputs to TF32 (faster on Ampere and later
        # GPUs, about 1e-3 relative error). Off by default, so that a GPU run agrees with the CPU's to float32
        # rounding (PyTorch alone leaves cuDNN's convolutions on TF32).
        tf32=False,
        logger=dict(
            # (list[str in {'tensorboard', 'wandb', 'mlflow'}]) Where the run's scalars go besides log.txt and
            # evals.csv, each getting the same scalars at the same env steps; 'wandb' and 'mlflow' need their
            # extras (pip install -e ".[wandb]") and also get the config, curve.png and summary.json.
            backends=['tensorboard'],
            wandb=dict(
                # (str) W&B project the run goes to.
                project='tidal',
                # (str) W&B entity (user or team); '' is the account's default.
                entity='',
                # (str in {'', 'online', 'offline'}) W&B mode; '' leaves it to W&B (WANDB_MODE, else online).
                mode='',
            ),
            mlflow=dict(
                # (str) MLflow tracking URI: a local store ('sqlite:///mlflow.db') or a server
                # ('http://host:5000'); '' is MLFLOW_TRACKING_URI when set, else a store in the run folder
                # (mlflow/mlflow.db; a seed group's in the group's folder).
                tracking_uri='',
                # (str) MLflow experiment the run goes to; made if it does not exist.
                experiment='tidal',
            ),
        ),
        collector=dict(
            # (str in {'local', 'ray'}) Where the collector's envs step: 'local', in this process; 'ray', on
            # Ray actors, each with its own vector env and a copy of the policy's collect mode.
            type='local',
            # (int in [1, 4096]) Ray rollout workers (type 'ray'), one CPU each.
            num_workers=1,
            # (int in [0, 4096]) Envs per Ray worker; 0 splits env.collector_env_num evenly over the workers.
            envs_per_worker=0,
            # (str in {'sync', 'async'}) 'sync': every collection waits for all workers, with the newest
            # weights (a single worker then acts exactly as the local collector). 'async': workers keep
            # collecting while the learner trains: off-policy (Ape-X style) on what has arrived; on-policy
            # (PPO, PPG) the next rollout with the weights before this one is learnt (a lag of one rollout).
            # 'async' needs type 'ray'.
            mode='sync',
            # (int in [0, 1_000_000]) 'async': drop a worker's batch that is more than this many learner
            # rounds (collections) older than the current weights, rather than learn from it.
            max_staleness=4,
            # (int in [0, 1000]) Times Ray restarts a worker whose process died or whose env raised; one
            # more failure in a row stops the run with the worker's error.
            max_restarts=3,
        ),
        seed_group=dict(
            # (int in [0, 4096]) Processes a seed group (--seeds) spreads its seeds over, each training its share of
            # the seeds stacked; 0 picks one per usable core (one per visible GPU on cuda), at most one per seed.
            processes=0,
            # (bool) Run the group's processes as Ray tasks on the cluster `ray.address` names, each placed by its
            # CPU (or GPU) needs; the group folder must then be on storage that every node shares.
            on_ray=False,
            # (str in {'auto', 'stacked', 'in_turn'}) How each process trains its share: 'stacked', the seeds'
            # updates made together over weights stacked along a seed dimension; 'in_turn', one seed after another,
            # each the plain run that -s SEED makes; 'auto' stacks unless the update is too large for stacking to
            # pay on a CPU (its model's parameters times its batch rows above 40M; always stacked on cuda).
            share='auto',
        ),
        ray=dict(
            # (str) The Ray cluster: '' starts a local Ray in this process; 'auto' joins the cluster this
            # machine is part of (`ray start --head`); 'host:port' joins that head node.
            address='',
            # (int in [0, 4096]) CPUs a local Ray may use; 0 lets Ray count them. Ignored when joining.
            num_cpus=0,
        ),
    )

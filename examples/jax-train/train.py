#!/usr/bin/env python3
"""Data-parallel JAX training, one process per worker, launched by podrun (podrun.yaml beside it).

A small MLP learns a synthetic regression problem with optax's Adam. The processes form one
JAX runtime (jax.distributed.initialize from podrun's JAX_* variables); the batch is sharded
over every device of every process (a 1-D mesh, axis "data"), the weights are replicated, and
the mean loss and its gradients are reduced across processes by XLA's collectives (gloo on CPU,
ICI/DCN on TPU). Each process prints, at a steady rate,

  step N loss X

(`(checkpoint saved)` after it every CHECKPOINT_EVERY steps; the first step says how long it
took to compile and run, the first line how long importing JAX, joining the gang and preparing
the model took) and at the end

  final weights sha256: <hex>

The run is deterministic: an uninterrupted run and one stopped (preempted, killed) and resumed
any number of times end with the same digest, for the same process count and options, because

  * the batch of step s on process p is made from its own generator seeded from (seed, s, p),
    never from a stream that a restart would rewind;
  * a checkpoint holds all that carries from a step to the next: the weights and Adam's state
    (count and moments), saved as the exact float32 bytes;
  * the reductions run in a fixed order for a given process count.

Checkpoints: each process writes its own file, CHECKPOINT_DIR/ckpt-<step>.p<process>.npz
(written to a temporary name, fsync'd, renamed: a file with that name is always whole), and
keeps its last 3. CHECKPOINT_DIR may be per worker (the default, ./checkpoints in the workdir)
or shared by all (a bucket, NFS): the names do not collide. When PODRUN_RESUMED_FROM is set
(podrun's later attempts: failure, hang, preemption) the processes agree on the newest step
that every one of them has saved (an all-gather) and go on from the step after it; on a fresh
start each process removes its own old checkpoints, so a resume never picks up another run's.
After a preemption that replaced the VMs, only a shared CHECKPOINT_DIR survives.

SIGUSR1 prints every thread's Python stack to stderr (faulthandler): the spec's
`stacks: {signal: SIGUSR1}` makes podrun send it before a hang report, so the report shows
where each process waits.

Knobs (environment; the spec's env or `podrun launch -e`): STEPS (60), CHECKPOINT_EVERY (10),
CHECKPOINT_DIR (checkpoints), STEP_SECONDS (0.1: a pause per step, to make the run last),
BATCH_SIZE (32 per device), SEED (1234), LR (0.01), HIDDEN (64).
"""

import faulthandler
import hashlib
import os
import signal
import sys
import time

STARTED = time.monotonic()
sys.stdout.reconfigure(line_buffering=True)
sys.stderr.reconfigure(line_buffering=True)
faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)

try:
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    from jax.experimental import multihost_utils
    from jax.sharding import Mesh, NamedSharding, PartitionSpec
except ImportError as e:
    print(f"train.py: {e.name} is not installed for {sys.executable}: pip install -r "
          "requirements.txt (the spec's setup does), or point PYTHON at an interpreter that has "
          "jax and optax", file=sys.stderr)
    sys.exit(2)

IMPORTED = time.monotonic()
FEATURES = 16
KEEP_CHECKPOINTS = 3


def env_value(name, default, kind=int):
    raw = os.environ.get(name, "")
    try:
        return kind(raw) if raw else default
    except ValueError:
        sys.exit(f"train.py: {name}={raw!r} is not a {kind.__name__}")


STEPS = env_value("STEPS", 60)
CHECKPOINT_EVERY = env_value("CHECKPOINT_EVERY", 10)
CHECKPOINT_DIR = os.environ.get("CHECKPOINT_DIR") or "checkpoints"
STEP_SECONDS = env_value("STEP_SECONDS", 0.1, float)
BATCH_SIZE = env_value("BATCH_SIZE", 32)
SEED = env_value("SEED", 1234)
LR = env_value("LR", 0.01, float)
HIDDEN = env_value("HIDDEN", 64)


def initialize():
    """Joins the JAX runtime of all processes (podrun's JAX_* variables, else auto-detection)."""
    address = os.environ.get("JAX_COORDINATOR_ADDRESS")
    num, pid = os.environ.get("JAX_NUM_PROCESSES"), os.environ.get("JAX_PROCESS_ID")
    if address and num and pid:
        # JAX reads JAX_COORDINATOR_ADDRESS itself, never the count and the id: pass them.
        jax.distributed.initialize(coordinator_address=address, num_processes=int(num),
                                   process_id=int(pid))
    else:
        jax.distributed.initialize()  # a Cloud TPU VM: from the TPU metadata


def teacher():
    """The function to learn: fixed random weights of a 2-layer net (numpy, seeded)."""
    rng = np.random.default_rng([SEED, 0xfeed])
    return (rng.standard_normal((FEATURES, 32)).astype(np.float32),
            rng.standard_normal((32, 1)).astype(np.float32) / np.float32(np.sqrt(32)))


def local_batch(step, process, local_devices, w1, w2):
    """This process's share of step `step`'s batch: BATCH_SIZE rows per local device."""
    rng = np.random.default_rng([SEED, step, process])
    x = rng.standard_normal((BATCH_SIZE * local_devices, FEATURES)).astype(np.float32)
    y = np.tanh(x @ w1) @ w2
    return x, y


def init_params():
    """The initial weights (numpy, seeded: no XLA compilation before the first step)."""
    rng = np.random.default_rng([SEED, 0x1417])

    def dense(fan_in, fan_out):
        return (rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32)
    return {
        "w1": dense(FEATURES, HIDDEN),
        "b1": np.zeros((HIDDEN,), np.float32),
        "w2": dense(HIDDEN, HIDDEN),
        "b2": np.zeros((HIDDEN,), np.float32),
        "w3": dense(HIDDEN, 1),
    }


def forward(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    h = jnp.tanh(h @ params["w2"] + params["b2"])
    return h @ params["w3"]


def replicated(tree, sharding):
    """Host arrays (the same on every process) as global arrays replicated on every device."""
    return jax.tree_util.tree_map(
        lambda a: jax.make_array_from_callback(np.shape(a), sharding, lambda index: np.asarray(a)[index]),
        tree)


def to_host(tree):
    """Replicated global arrays as numpy arrays (each process holds a full copy)."""
    return jax.tree_util.tree_map(lambda a: np.asarray(a.addressable_data(0)), tree)


def checkpoint_path(step, process):
    return os.path.join(CHECKPOINT_DIR, f"ckpt-{step:08d}.p{process}.npz")


def my_checkpoints(process):
    """The steps this process has checkpoints of, oldest first."""
    suffix = f".p{process}.npz"
    steps = []
    for name in os.listdir(CHECKPOINT_DIR):
        if name.startswith("ckpt-") and name.endswith(suffix):
            try:
                steps.append(int(name[len("ckpt-"):-len(suffix)]))
            except ValueError:
                pass
    return sorted(steps)


def save_checkpoint(step, process, state):
    leaves = jax.tree_util.tree_leaves(to_host(state))
    final = checkpoint_path(step, process)
    temporary = final + ".tmp"
    with open(temporary, "wb") as f:
        np.savez(f, step=np.int64(step), **{f"leaf{i}": leaf for i, leaf in enumerate(leaves)})
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, final)
    directory = os.open(CHECKPOINT_DIR, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    for old in my_checkpoints(process)[:-KEEP_CHECKPOINTS]:
        os.remove(checkpoint_path(old, process))


def load_checkpoint(step, process, like):
    """The state saved at `step`, shaped as `like` (host arrays)."""
    leaves, treedef = jax.tree_util.tree_flatten(like)
    with np.load(checkpoint_path(step, process)) as saved:
        if int(saved["step"]) != step or len(saved.files) != len(leaves) + 1:
            raise RuntimeError(f"{checkpoint_path(step, process)} is not a checkpoint of this run")
        loaded = [saved[f"leaf{i}"] for i in range(len(leaves))]
    for got, want in zip(loaded, leaves):
        if got.shape != np.shape(want) or got.dtype != np.asarray(want).dtype:
            raise RuntimeError(f"{checkpoint_path(step, process)}: shapes differ from this run's "
                               "(another HIDDEN?)")
    return jax.tree_util.tree_unflatten(treedef, loaded)


def main():
    initialize()
    jax.devices()  # the backend (on CPU: with its cross-process collectives) is made here
    joined = time.monotonic()
    process, processes = jax.process_index(), jax.process_count()
    local_devices = jax.local_device_count()
    me = f"process {process}/{processes}"
    mesh = Mesh(np.array(jax.devices()), ("data",))
    batch_sharding = NamedSharding(mesh, PartitionSpec("data"))
    everywhere = NamedSharding(mesh, PartitionSpec())
    optimizer = optax.adam(LR)

    @jax.jit
    def train_step(params, opt_state, x, y):
        def loss_fn(p):
            return jnp.mean((forward(p, x) - y) ** 2)  # over the global batch: a cross-process mean
        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    params = init_params()
    host_state = (params, to_host(jax.jit(optimizer.init)(replicated(params, everywhere))))
    os.makedirs(CHECKPOINT_DIR, exist_ok=True)
    resumed_from = os.environ.get("PODRUN_RESUMED_FROM", "")
    start = 0
    if resumed_from:
        mine = my_checkpoints(process)
        newest = np.asarray(multihost_utils.process_allgather(np.int64(mine[-1] if mine else 0)))
        start = int(newest.min())
        if start and start not in mine:
            raise RuntimeError(f"{me}: no checkpoint of step {start} in {CHECKPOINT_DIR}, which "
                               f"other processes have (kept: {mine})")
        if start:
            host_state = load_checkpoint(start, process, host_state)
    else:
        for old in my_checkpoints(process):
            os.remove(checkpoint_path(old, process))
    state = replicated(host_state, everywhere)
    # No "step N" in this line: podrun's default progress pattern would take it for a step.
    print(f"{me}: jax {jax.__version__}, {jax.device_count()} devices "
          f"({local_devices} local, {jax.devices()[0].platform}), attempt "
          f"{os.environ.get('PODRUN_ATTEMPT', '1')}"
          + (f" (resumed from: {resumed_from})" if resumed_from else "")
          + f", steps {start + 1}-{STEPS}, checkpoints in {CHECKPOINT_DIR}; "
          f"import {IMPORTED - STARTED:.2f} s, initialize {joined - IMPORTED:.2f} s, "
          f"prepare {time.monotonic() - joined:.2f} s")

    w1, w2 = teacher()
    params, opt_state = state
    for step in range(start + 1, STEPS + 1):
        began = time.monotonic()
        x, y = local_batch(step, process, local_devices, w1, w2)
        x = jax.make_array_from_process_local_data(batch_sharding, x)
        y = jax.make_array_from_process_local_data(batch_sharding, y)
        params, opt_state, loss = train_step(params, opt_state, x, y)
        loss = float(loss.addressable_data(0))
        note = f" (first: compiled and run in {time.monotonic() - began:.2f} s)" if step == start + 1 else ""
        if step % CHECKPOINT_EVERY == 0 or step == STEPS:
            save_checkpoint(step, process, (params, opt_state))
            note = " (checkpoint saved)"
        print(f"step {step} loss {loss:.6f}{note}")
        time.sleep(max(0.0, STEP_SECONDS - (time.monotonic() - began)))

    digest = hashlib.sha256()
    for leaf in jax.tree_util.tree_leaves(to_host(params)):
        digest.update(np.ascontiguousarray(leaf, np.float32).tobytes())
    print(f"{me}: final weights sha256: {digest.hexdigest()}")
    jax.distributed.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())

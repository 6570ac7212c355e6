#!/usr/bin/env python3
"""Multi-host JAX, one process per worker, launched by podrun.

jax.distributed.initialize() joins every process of the pod into one JAX runtime; then a
pmap'd psum runs over all devices of all hosts. Each process checks the results and prints

  process K/N: D global devices (L local, platform P), psum(1)=D ok, psum(process_index)=S ok

exiting 0, or prints `process K/N: FAILED: ...` and exits 1.

Coordinates: podrun sets JAX_COORDINATOR_ADDRESS (worker 0's address and the spec's
coordinator_port), JAX_NUM_PROCESSES and JAX_PROCESS_ID on every worker; when they are set
they are passed to initialize() explicitly (JAX itself reads JAX_COORDINATOR_ADDRESS from the
environment, but never the process count or id). Without them (e.g. started by hand on a Cloud
TPU VM) initialize() auto-detects the pod from the TPU metadata.

Verified with CPU JAX (one CPU device per process, collectives through gloo) on 4 local
workers and a 4-worker test pod; not run on a TPU.
"""

import os
import sys

sys.stdout.reconfigure(line_buffering=True)
sys.stderr.reconfigure(line_buffering=True)

try:
    import jax
    import jax.numpy as jnp
except ImportError as e:
    print(f"jax_multihost: jax is not installed for {sys.executable} ({e}): "
          "pip install 'jax[tpu]' on a TPU VM (pip install jax on a CPU machine), or point "
          "PYTHON at an interpreter that has it", file=sys.stderr)
    sys.exit(2)


def initialize():
    """Joins the pod; returns a description of how, for the log."""
    address = os.environ.get("JAX_COORDINATOR_ADDRESS")
    num = os.environ.get("JAX_NUM_PROCESSES")
    pid = os.environ.get("JAX_PROCESS_ID")
    if address and num and pid:
        jax.distributed.initialize(coordinator_address=address, num_processes=int(num),
                                   process_id=int(pid))
        return f"coordinator {address}, from podrun's JAX_* variables"
    # On a Cloud TPU VM pod everything is auto-detected.
    jax.distributed.initialize()
    return "auto-detected"


def main():
    label = (f"process {os.environ.get('JAX_PROCESS_ID', '?')}/"
             f"{os.environ.get('JAX_NUM_PROCESSES', '?')}")
    try:
        how = initialize()
    except Exception as e:  # noqa: BLE001
        print(f"{label}: FAILED: jax.distributed.initialize(): {type(e).__name__}: {e}",
              file=sys.stderr)
        return 1

    rank, nproc = jax.process_index(), jax.process_count()
    label = f"process {rank}/{nproc}"
    local, total = jax.local_device_count(), jax.device_count()
    platform = jax.devices()[0].platform
    if rank == 0:
        print(f"{label}: jax {jax.__version__}, {how}")
    print(f"{label}: devices {[str(d) for d in jax.local_devices()]}")

    # One value per local device; psum over the pmap axis sums over every device of every host.
    ones = jnp.ones((local,), dtype=jnp.float32)
    mine = jnp.full((local,), float(rank), dtype=jnp.float32)
    psum = jax.pmap(lambda x: jax.lax.psum(x, "i"), axis_name="i")
    got_count = [int(v) for v in psum(ones)]
    got_ranks = [int(v) for v in psum(mine)]
    # Every host of a pod has the same number of devices.
    want_ranks = local * nproc * (nproc - 1) // 2

    errors = []
    if total != local * nproc:
        errors.append(f"{total} global devices, but {nproc} processes x {local} local")
    if any(v != total for v in got_count):
        errors.append(f"psum(1) gave {got_count}, expected {total} on every device")
    if any(v != want_ranks for v in got_ranks):
        errors.append(f"psum(process_index) gave {got_ranks}, expected {want_ranks}")
    if nproc != int(os.environ.get("JAX_NUM_PROCESSES", nproc)):
        errors.append(f"{nproc} processes joined, JAX_NUM_PROCESSES says "
                      f"{os.environ['JAX_NUM_PROCESSES']}")
    if errors:
        print(f"{label}: FAILED: " + "; ".join(errors), file=sys.stderr)
        return 1
    print(f"{label}: {total} global devices ({local} local, platform {platform}), "
          f"psum(1)={total} ok, psum(process_index)={want_ranks} ok")
    jax.distributed.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Data-parallel training with torch.distributed, one process per worker, launched by podrun.

A tiny MLP learns a synthetic regression problem (generated from a fixed seed, so every rank
builds the same dataset); a DistributedSampler gives each rank its own shard and
DistributedDataParallel averages the gradients. Then the script checks the gang for real:

  * an all-reduce of each rank's number must give 0 + 1 + ... + (world - 1) on every rank;
  * every rank hashes its final weights and all-gathers the digests: all must be identical.

Each rank ends with one line such as
  rank 2/4: allreduce ok (sum=6), weights sha256=<hex> identical on all ranks
and exits 0, or prints `rank 2/4: FAILED: ...` and exits 1.

Rendezvous is torch's env:// method, from the variables podrun sets on every worker:
MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE (and LOCAL_RANK). Backend: gloo on CPU. When
torch_xla is importable (a Cloud TPU VM), the same training runs on the TPU through PyTorch
XLA's PJRT runtime instead; see main().

Knobs (environment, all optional): EPOCHS (default 5), STEPS (at most this many steps per
epoch; 0 = the whole shard), BATCH_SIZE (per rank, default 32), SAMPLES (default 4096),
LR (default 0.05), SEED (default 1234), DIST_TIMEOUT (seconds, default 60: how long a rank
waits for the others at the rendezvous and in a collective before giving up),
TORCH_DDP_BACKEND (gloo | xla; default xla when torch_xla is importable, else gloo).
"""

import hashlib
import os
import socket
import sys
import time
from datetime import timedelta

# Unbuffered lines: under podrun stdout is a pipe, and the merged log should show each
# line when it is printed, not when the process exits.
sys.stdout.reconfigure(line_buffering=True)
sys.stderr.reconfigure(line_buffering=True)

try:
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, TensorDataset
    from torch.utils.data.distributed import DistributedSampler
except ImportError as e:
    print(f"torch_ddp: PyTorch is not installed for {sys.executable} ({e}): "
          "pip install torch (or, on Debian, apt-get install python3-torch), "
          "or point PYTHON at an interpreter that has it", file=sys.stderr)
    sys.exit(2)


def env_int(name, default):
    value = os.environ.get(name, "")
    if value == "":
        return default
    try:
        return int(value)
    except ValueError:
        sys.exit(f"torch_ddp: {name}={value!r} is not an integer")


def env_float(name, default):
    value = os.environ.get(name, "")
    if value == "":
        return default
    try:
        return float(value)
    except ValueError:
        sys.exit(f"torch_ddp: {name}={value!r} is not a number")


EPOCHS = env_int("EPOCHS", 5)
STEPS = env_int("STEPS", 0)
BATCH_SIZE = env_int("BATCH_SIZE", 32)
SAMPLES = env_int("SAMPLES", 4096)
LR = env_float("LR", 0.05)
SEED = env_int("SEED", 1234)
DIST_TIMEOUT = env_int("DIST_TIMEOUT", 60)
FEATURES = 16


class CheckFailed(Exception):
    pass


def make_dataset():
    """y = sin(x . w1) + 0.5 * (x . w2)^2 / F + noise; the same on every rank (fixed seed)."""
    g = torch.Generator().manual_seed(SEED)
    x = torch.randn(SAMPLES, FEATURES, generator=g)
    w1 = torch.randn(FEATURES, generator=g) / FEATURES ** 0.5
    w2 = torch.randn(FEATURES, generator=g)
    y = torch.sin(x @ w1) + 0.5 * (x @ w2) ** 2 / FEATURES
    y = y + 0.01 * torch.randn(SAMPLES, generator=g)
    return TensorDataset(x, y.unsqueeze(1))


def make_model():
    torch.manual_seed(SEED)  # DDP broadcasts rank 0's weights anyway; this keeps runs repeatable
    return nn.Sequential(
        nn.Linear(FEATURES, 64), nn.Tanh(),
        nn.Linear(64, 64), nn.Tanh(),
        nn.Linear(64, 1),
    )


def weights_digest(model):
    """(sum of all parameters, sha256 of their concatenated float32 bytes), computed on the CPU."""
    h = hashlib.sha256()
    total = 0.0
    for p in model.parameters():
        t = p.detach().to("cpu", torch.float32).contiguous()
        h.update(t.numpy().tobytes())
        total += float(t.double().sum())
    return total, h.hexdigest()


def train(device, step_done=lambda: None, backend="gloo"):
    """The training and the checks, in one process of the gang (the group is initialized)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    me = f"rank {rank}/{world}"
    host = socket.gethostname()
    worker = os.environ.get("PODRUN_WORKER_ID", "?")
    print(f"{me}: host {host} (podrun worker {worker}), device {device}, pid {os.getpid()}")
    if rank == 0:
        print(f"{me}: torch {torch.__version__}, backend {backend}, world size {world}, "
              f"master {os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}, "
              f"job {os.environ.get('PODRUN_JOB_ID', '-')}")
        print(f"{me}: {SAMPLES} samples x {FEATURES} features, batch {BATCH_SIZE} per rank "
              f"({BATCH_SIZE * world} global), {EPOCHS} epochs, lr {LR}, seed {SEED}")

    # 1. The gang sees every member: sum of the ranks.
    t = torch.tensor([float(rank)], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    step_done()
    allreduce_sum = int(round(t.item()))
    expected = world * (world - 1) // 2
    if allreduce_sum != expected:
        raise CheckFailed(f"all-reduce of the ranks gave {allreduce_sum}, expected {expected}")

    # 2. Data-parallel training.
    dataset = make_dataset()
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True, seed=SEED)
    loader = DataLoader(dataset, batch_size=BATCH_SIZE, sampler=sampler, drop_last=True)
    model = make_model().to(device)
    ddp = DDP(model, gradient_as_bucket_view=True) if backend == "xla" else DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=LR, momentum=0.9)
    loss_fn = nn.MSELoss()
    if rank == 0:
        params = sum(p.numel() for p in model.parameters())
        print(f"{me}: model {params} parameters, {len(sampler)} samples per rank, "
              f"{len(loader) if STEPS <= 0 else min(STEPS, len(loader))} steps per epoch")

    start = time.monotonic()
    global_step = 0  # what `podrun top` and `podrun report` read (the spec's progress:)
    for epoch in range(1, EPOCHS + 1):
        sampler.set_epoch(epoch)
        epoch_start = time.monotonic()
        total = torch.zeros(2, dtype=torch.float64 if backend != "xla" else torch.float32,
                            device=device)
        for step, (x, y) in enumerate(loader):
            if STEPS > 0 and step >= STEPS:
                break
            x, y = x.to(device), y.to(device)
            opt.zero_grad()
            loss = loss_fn(ddp(x), y)
            loss.backward()
            opt.step()
            step_done()
            global_step += 1
            total[0] += loss.detach().to(total.dtype) * x.shape[0]
            total[1] += x.shape[0]
        local_loss = (total[0] / total[1]).item()
        dist.all_reduce(total, op=dist.ReduceOp.SUM)
        step_done()
        global_loss = (total[0] / total[1]).item()
        print(f"{me}: epoch {epoch}/{EPOCHS} step {global_step} loss {local_loss:.6f} on my shard")
        if rank == 0:
            print(f"{me}: epoch {epoch}/{EPOCHS} global loss {global_loss:.6f} "
                  f"({int(total[1].item())} samples, {time.monotonic() - epoch_start:.2f}s)")

    # 3. Identical weights everywhere: all-gather every rank's digest.
    total_sum, digest = weights_digest(model)
    print(f"{me}: weights sum {total_sum:.8f} sha256 {digest}")
    mine = torch.tensor(list(bytes.fromhex(digest)), dtype=torch.int32, device=device)
    gathered = [torch.zeros_like(mine) for _ in range(world)]
    dist.all_gather(gathered, mine)
    step_done()
    digests = [bytes(g.cpu().tolist()).hex() for g in gathered]
    differ = [r for r, d in enumerate(digests) if d != digest]
    if differ:
        raise CheckFailed(f"my weights sha256={digest} differ from rank(s) "
                          + ", ".join(f"{r} ({digests[r]})" for r in differ))
    if rank == 0:
        print(f"{me}: trained in {time.monotonic() - start:.2f}s")
    dist.barrier()
    print(f"{me}: allreduce ok (sum={allreduce_sum}), weights sha256={digest} "
          f"identical on all ranks")


def fail(who, e):
    """Reports a failed check or a broken gang, then exits without waiting on the others."""
    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    if isinstance(e, CheckFailed):
        print(f"{who}: FAILED: {msg}", file=sys.stderr)
    else:
        print(f"{who}: FAILED: {type(e).__name__}: {msg} "
              f"(a peer rank died, hangs or is unreachable)", file=sys.stderr)
    # os._exit: a broken process group can block a normal interpreter exit.
    os._exit(1)


def main_gloo():
    missing = [v for v in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE")
               if not os.environ.get(v)]
    if missing:
        sys.exit("torch_ddp: " + ", ".join(missing) + " not set; run me with podrun launch "
                 "(or torchrun), which set MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE")
    torch.set_num_threads(1)  # one process per worker; on a shared CPU more threads only contend
    who = f"rank {os.environ['RANK']}/{os.environ['WORLD_SIZE']}"
    try:
        # env:// reads MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE. Rank 0 hosts the store.
        dist.init_process_group("gloo", init_method="env://",
                                timeout=timedelta(seconds=DIST_TIMEOUT))
    except Exception as e:  # noqa: BLE001 - any rendezvous failure is reported the same way
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        print(f"{who}: FAILED: no rendezvous of all {os.environ['WORLD_SIZE']} ranks at "
              f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']} "
              f"(DIST_TIMEOUT={DIST_TIMEOUT}s): {type(e).__name__}: {first}", file=sys.stderr)
        os._exit(1)
    try:
        train(torch.device("cpu"))
        dist.destroy_process_group()
    except Exception as e:  # noqa: BLE001
        fail(who, e)


# --- PyTorch XLA (TPU) ---------------------------------------------------------------------
# On a Cloud TPU VM the same script runs on every host (podrun launch --tpu ...). PJRT is
# PyTorch XLA's runtime: xmp.spawn starts one process per local TPU device, and the "xla://"
# init method takes the ranks and the world size (all devices of all hosts) from the TPU
# runtime, which knows the pod from TPU_WORKER_ID / TPU_WORKER_HOSTNAMES (set by podrun on
# pods that are not discovered Cloud TPUs; set by the TPU runtime itself on Cloud TPU VMs).
# Not exercised here (no TPU, no torch_xla on this machine): only the gloo path is verified.

def _xla_process(index):
    import torch_xla.core.xla_model as xm
    import torch_xla.distributed.xla_backend  # noqa: F401 - registers the "xla" backend

    dist.init_process_group("xla", init_method="xla://")
    who = f"rank {dist.get_rank()}/{dist.get_world_size()}"
    try:
        # mark_step cuts the lazily traced graph: run it on the TPU after every step.
        train(xm.xla_device(), step_done=xm.mark_step, backend="xla")
    except Exception as e:  # noqa: BLE001
        fail(who, e)


def main_xla():
    os.environ.setdefault("PJRT_DEVICE", "TPU")
    import torch_xla.distributed.xla_multiprocessing as xmp
    xmp.spawn(_xla_process, args=())


def main():
    backend = os.environ.get("TORCH_DDP_BACKEND", "")
    if backend == "":
        try:
            import torch_xla  # noqa: F401
            backend = "xla"
        except ImportError:
            backend = "gloo"
    if backend == "xla":
        main_xla()
    elif backend == "gloo":
        main_gloo()
    else:
        sys.exit(f"torch_ddp: TORCH_DDP_BACKEND={backend!r}: expected gloo or xla")


if __name__ == "__main__":
    main()

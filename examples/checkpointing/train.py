#!/usr/bin/env python3
"""Data-parallel training that survives preemption: checkpoints, resumes, same final weights.

One process per worker, launched by podrun (see podrun.yaml beside this file). A small MLP
learns a synthetic regression problem with SGD and momentum; the ranks average their gradients
with one all_reduce per step (gloo, on the CPU). Every N steps rank 0 saves a checkpoint
(step, model state, optimizer state); when the job starts again (podrun's `restarts:` after a
preemption, or a new launch) every rank loads the latest one and goes on from the step after it.

The point of the example: the final weights are BIT-IDENTICAL whether the run was interrupted
or not, any number of times, at any step. That holds because nothing depends on how far a
process got before it started:

  * the batch of step s on rank r comes from its own torch.Generator seeded from
    (seed, s, r), never from a global RNG stream that a restart would rewind;
  * the checkpoint holds everything that carries over from one step to the next: the weights
    and the optimizer's momentum buffers (bytes, restored exactly);
  * gradients are set to None every step (a fresh tensor, not "zeros + g": the sign of a zero
    could differ), and the all_reduce sums them in a fixed order for a given WORLD_SIZE.

Determinism is across runs with the same WORLD_SIZE (another world size sums in another order
and sees other batches); a checkpoint written with another world size or seed is refused.

THE CHECKPOINT DIRECTORY MUST BE SHARED BY ALL WORKERS (a mount such as the spec's gcsfuse
bucket, NFS, or any shared storage): rank 0 writes it, every rank reads it when resuming. At
start rank 0 writes a small token file there and every rank must read it back, so a directory
that is not shared fails at once with a clear message, not after the first preemption.

Checkpoints are written so that a damaged or partial file is never loaded: rank 0 serializes to
memory, writes a temporary file in the same directory, fsyncs it and os.replace()s it to
ckpt-<step>.pt, then writes the pointer file `latest` ("ckpt-<step>.pt sha256:<hex>") the same
way. Only replaced files have the names that are read; the pointer names the file and its
digest, and every rank checks the digest before loading. The last 2 checkpoints are kept.
A barrier after each save keeps any rank from running ahead of the checkpoint.

SIGTERM (podrun stop, Ctrl-C at the launcher, a preempted VM shutting down) and SIGINT end the
process cleanly between steps, exit status 143 (130 for SIGINT); a signal that arrives while
rank 0 writes a checkpoint is acted on once the write is complete, so no partial file is left.
SIGKILL can leave a temporary file behind; it is never read, and the next start removes it.

Output (rank 0):
  attempt 2 (resumed from: preemption) starting at step 41 of 200
  step 50 loss 0.123456 (checkpoint saved)
  ...
  final weights sha256: <hex>
  done

Options (each also from the environment, for a spec's `env:` or `podrun launch -e`):
  --steps N             STEPS             total steps (default 200)
  --checkpoint-every N  CHECKPOINT_EVERY  steps between checkpoints (default 10)
  --checkpoint-dir DIR  CHECKPOINT_DIR    where checkpoints go (default ./checkpoints); SHARED
  --step-seconds S      STEP_SECONDS      sleep per step, to make a run last (default 0)
  --seed N              SEED              data, initial weights (default 1234)
  --batch-size N        BATCH_SIZE        per rank (default 32)
  --lr X                LR                learning rate (default 0.05)
  DIST_TIMEOUT (seconds, default 60): rendezvous and collectives.

Rendezvous is torch's env:// method from the variables podrun sets on every worker:
MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE. PODRUN_ATTEMPT and PODRUN_RESUMED_FROM are shown on
the first line (PODRUN_RESUMED_FROM is absent on a first attempt).

Tested on one machine with 2 ranks (see README.md): an uninterrupted run and runs killed with
SIGKILL or SIGTERM at random steps, then resumed, end with the same sha256 (and byte-identical
checkpoint and final.pt files).
"""

import argparse
import hashlib
import io
import os
import re
import signal
import sys
import time
import uuid
from contextlib import contextmanager
from datetime import timedelta

# Line-buffered: under podrun stdout is a pipe, and the merged log should show each line when
# it is printed, not when the process exits.
sys.stdout.reconfigure(line_buffering=True)
sys.stderr.reconfigure(line_buffering=True)

try:
    import torch
    import torch.distributed as dist
    import torch.nn as nn
except ImportError as e:
    print(f"train.py: PyTorch is not installed for {sys.executable} ({e}): "
          "pip install torch (or, on Debian, apt-get install python3-torch)", file=sys.stderr)
    sys.exit(2)

FEATURES = 16
HIDDEN = 64
CKPT_RE = re.compile(r"^ckpt-(\d+)\.pt$")
# Left behind by a process killed (SIGKILL) while writing; never read.
LEFTOVER_RE = re.compile(r"^\.(ckpt-\d+\.pt|latest|final\.pt|\.shared-check-[0-9a-f]+)\.tmp\.\d+$"
                         r"|^\.shared-check-[0-9a-f]+$")
# How long a rank waits to see a file rank 0 wrote (shared storage such as gcsfuse may cache a
# directory's listing or a file's absence for a few seconds).
SEE_TIMEOUT = 30.0


# --- options -------------------------------------------------------------------------------

def env_value(name, default, kind):
    value = os.environ.get(name, "")
    if value == "":
        return default
    try:
        return kind(value)
    except ValueError:
        sys.exit(f"train.py: {name}={value!r} is not {'an integer' if kind is int else 'a number'}")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=env_value("STEPS", 200, int),
                   help="total training steps (env STEPS; default 200)")
    p.add_argument("--checkpoint-every", type=int,
                   default=env_value("CHECKPOINT_EVERY", 10, int),
                   help="save a checkpoint every N steps (env CHECKPOINT_EVERY; default 10)")
    p.add_argument("--checkpoint-dir",
                   default=os.environ.get("CHECKPOINT_DIR") or os.path.join(os.getcwd(),
                                                                            "checkpoints"),
                   help="checkpoint directory, shared by all workers (env CHECKPOINT_DIR; "
                        "default ./checkpoints)")
    p.add_argument("--step-seconds", type=float, default=env_value("STEP_SECONDS", 0.0, float),
                   help="sleep this long in each step (env STEP_SECONDS; default 0)")
    p.add_argument("--seed", type=int, default=env_value("SEED", 1234, int),
                   help="seed of the data and the initial weights (env SEED; default 1234)")
    p.add_argument("--batch-size", type=int, default=env_value("BATCH_SIZE", 32, int),
                   help="samples per rank and step (env BATCH_SIZE; default 32)")
    p.add_argument("--lr", type=float, default=env_value("LR", 0.05, float),
                   help="learning rate (env LR; default 0.05)")
    a = p.parse_args()
    if a.steps < 1 or a.checkpoint_every < 1 or a.batch_size < 1:
        p.error("--steps, --checkpoint-every and --batch-size must be at least 1")
    if a.step_seconds < 0:
        p.error("--step-seconds must not be negative")
    a.checkpoint_dir = os.path.abspath(os.path.expanduser(a.checkpoint_dir))
    return a


# --- clean shutdown ------------------------------------------------------------------------

class Stopping(BaseException):
    """Raised by the signal handler; a BaseException so that no `except Exception` eats it."""


class _Signals:
    received = None   # the signal number, once one came
    critical = 0      # > 0 while a checkpoint is being written: the signal waits for it
    deferred = False  # one came while a checkpoint was being written
    raised = False


def on_signal(signum, _frame):
    _Signals.received = signum
    if _Signals.critical > 0:
        _Signals.deferred = True
    elif not _Signals.raised:
        _Signals.raised = True
        raise Stopping(signum)


@contextmanager
def uninterrupted():
    """A signal that arrives in here is acted on when the block is done, not in the middle."""
    _Signals.critical += 1
    try:
        yield
    finally:
        _Signals.critical -= 1
    if _Signals.critical == 0 and _Signals.received is not None and not _Signals.raised:
        _Signals.raised = True
        raise Stopping(_Signals.received)


# --- files ---------------------------------------------------------------------------------

def fsync_dir(path):
    """Makes a rename in `path` durable. Some FUSE filesystems cannot fsync a directory: fine."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(path, data):
    """Writes `data` to a temporary file beside `path`, fsyncs it, then os.replace()s it: a
    reader sees the old file or the whole new one, never part of it."""
    directory, name = os.path.split(path)
    tmp = os.path.join(directory, f".{name}.tmp.{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(directory)


def serialize(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def checkpoint_files(directory):
    """{step: file name} of the complete checkpoints (temporary files have other names)."""
    found = {}
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return found
    for name in names:
        m = CKPT_RE.match(name)
        if m:
            found[int(m.group(1))] = name
    return found


def remove_leftovers(directory):
    """Temporary files of a process killed by SIGKILL while writing (never read anyway), and
    the token file of a start that did not get as far as removing it."""
    for name in os.listdir(directory):
        if LEFTOVER_RE.match(name):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass


def read_pointer(directory):
    """(step, sha256 hex) from `latest`, or None when it is absent or not well-formed."""
    try:
        with open(os.path.join(directory, "latest")) as f:
            text = f.read()
    except OSError:
        return None
    m = re.fullmatch(r"ckpt-(\d+)\.pt sha256:([0-9a-f]{64})\n", text)
    return (int(m.group(1)), m.group(2)) if m else None


def choose_checkpoint(directory):
    """Rank 0: the checkpoint to resume from, as (step, sha256 hex, bytes), or None.

    The one `latest` names, if its digest matches; else (no pointer: killed between writing a
    checkpoint and its pointer; or a pointer to a file that is gone or damaged) the newest
    complete checkpoint file that torch can load and that says it is that step."""
    pointer = read_pointer(directory)
    damaged = None
    if pointer is not None:
        step, digest = pointer
        try:
            with open(os.path.join(directory, f"ckpt-{step}.pt"), "rb") as f:
                data = f.read()
            if hashlib.sha256(data).hexdigest() == digest:
                return step, digest, data
            damaged = step
            print(f"rank 0: ckpt-{step}.pt does not match the digest in `latest`: not loaded",
                  file=sys.stderr)
        except OSError as e:
            print(f"rank 0: `latest` names ckpt-{step}.pt, which cannot be read ({e})",
                  file=sys.stderr)
    for step, name in sorted(checkpoint_files(directory).items(), reverse=True):
        if step == damaged:
            continue
        try:
            with open(os.path.join(directory, name), "rb") as f:
                data = f.read()
            state = torch.load(io.BytesIO(data), map_location="cpu")
            if isinstance(state, dict) and state.get("step") == step:
                return step, hashlib.sha256(data).hexdigest(), data
        except Exception as e:  # noqa: BLE001 - any damage: try the next older one
            print(f"rank 0: {name} cannot be loaded ({type(e).__name__}): skipped",
                  file=sys.stderr)
    return None


def read_when_visible(path, check):
    """Reads `path` until check(bytes) holds, for up to SEE_TIMEOUT seconds (shared storage
    may show a file rank 0 just wrote a little later). Returns the bytes or None."""
    deadline = time.monotonic() + SEE_TIMEOUT
    while True:
        try:
            with open(path, "rb") as f:
                data = f.read()
            if check(data):
                return data
        except OSError:
            pass
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.5)


# --- the model and the data ----------------------------------------------------------------

def make_model(seed):
    torch.manual_seed(seed)  # the initial weights; a resumed run loads its weights instead
    return nn.Sequential(
        nn.Linear(FEATURES, HIDDEN), nn.Tanh(),
        nn.Linear(HIDDEN, HIDDEN), nn.Tanh(),
        nn.Linear(HIDDEN, 1),
    )


def teacher(seed):
    """The function to learn: y = sin(x . w1) + 0.5 * (x . w2)^2 / F, fixed by the seed."""
    g = torch.Generator().manual_seed(seed)
    w1 = torch.randn(FEATURES, generator=g) / FEATURES ** 0.5
    w2 = torch.randn(FEATURES, generator=g)
    return w1, w2


def batch(seed, step, rank, size, w1, w2):
    """The batch of `step` on `rank`: from a generator of its own, seeded from (seed, step,
    rank), so it is the same whether this process started at step 1 or at step 1001."""
    key = hashlib.sha256(f"checkpointing/{seed}/{step}/{rank}".encode()).digest()
    g = torch.Generator().manual_seed(int.from_bytes(key[:8], "little") >> 1)
    x = torch.randn(size, FEATURES, generator=g)
    y = torch.sin(x @ w1) + 0.5 * (x @ w2) ** 2 / FEATURES
    y = y + 0.01 * torch.randn(size, generator=g)
    return x, y.unsqueeze(1)


def weights_sha256(model):
    """sha256 over the state_dict's tensors' bytes, in state_dict order: comparable between runs."""
    h = hashlib.sha256()
    for tensor in model.state_dict().values():
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


# --- collectives on small values -----------------------------------------------------------

def broadcast_bytes(data, size):
    """Rank 0's `data` (at most `size` bytes) on every rank."""
    t = torch.zeros(size + 1, dtype=torch.int64)
    if dist.get_rank() == 0:
        t[0] = len(data)
        t[1:1 + len(data)] = torch.tensor(list(data), dtype=torch.int64)
    dist.broadcast(t, src=0)
    return bytes(t[1:1 + int(t[0])].tolist())


def all_gather_int(value):
    t = torch.tensor([value], dtype=torch.int64)
    out = [torch.zeros_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(out, t)
    return [int(x.item()) for x in out]


# --- training ------------------------------------------------------------------------------

class Fatal(Exception):
    def __init__(self, message, code=1):
        super().__init__(message)
        self.code = code


def resume(args, model, opt, rank, world):
    """Every rank: checks that the checkpoint directory is shared, then loads the checkpoint
    rank 0 chose (the same one everywhere). Returns (its step, its sha256), or (0, None)."""
    directory = args.checkpoint_dir
    chosen = None
    if rank == 0:
        os.makedirs(directory, exist_ok=True)
        remove_leftovers(directory)
        token = uuid.uuid4().hex.encode()
        write_atomic(os.path.join(directory, f".shared-check-{token.decode()}"), token)
        chosen = choose_checkpoint(directory)
        header = token + (b"" if chosen is None else
                          f"{chosen[0]} {chosen[1]}".encode())
    else:
        header = b""
    header = broadcast_bytes(header, 128)
    token, rest = header[:32], header[32:].decode()
    step, digest = (int(rest.split()[0]), rest.split()[1]) if rest else (0, None)

    # 1. Does every rank see the directory rank 0 writes in? (A new file name each start: a
    #    FUSE filesystem's attribute cache cannot answer for it with an older file's.)
    check = os.path.join(directory, f".shared-check-{token.decode()}")
    seen = rank == 0 or read_when_visible(check, lambda d: d == token) is not None
    blind = [r for r, ok in enumerate(all_gather_int(int(seen))) if not ok]
    if rank == 0:
        try:
            os.unlink(check)
        except OSError:
            pass
    if blind:
        raise Fatal(f"checkpoint dir {directory} is not shared by all workers: rank(s) "
                    f"{', '.join(map(str, blind))} do not see the file rank 0 wrote there. "
                    "Put it on storage every worker mounts (the spec's mounts:, e.g. a gcsfuse "
                    "bucket or NFS) and point CHECKPOINT_DIR at it", code=2)
    if digest is None:
        return 0, None

    # 2. The same checkpoint, checked by its digest, on every rank.
    if rank == 0:
        data = chosen[2]
    else:
        data = read_when_visible(os.path.join(directory, f"ckpt-{step}.pt"),
                                 lambda d: hashlib.sha256(d).hexdigest() == digest)
    missing = [r for r, ok in enumerate(all_gather_int(int(data is not None))) if not ok]
    if missing:
        raise Fatal(f"rank(s) {', '.join(map(str, missing))} cannot read ckpt-{step}.pt "
                    f"(sha256 {digest[:12]}...) in {directory} as rank 0 does")
    state = torch.load(io.BytesIO(data), map_location="cpu")
    if state.get("seed") != args.seed or state.get("world_size") != world:
        raise Fatal(f"ckpt-{step}.pt in {directory} is of a run with seed {state.get('seed')} "
                    f"and world size {state.get('world_size')}, not {args.seed} and {world}: "
                    "its continuation would not match; use another --checkpoint-dir", code=2)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    return step, digest


def save_checkpoint(args, model, opt, step, world, previous):
    """Rank 0: ckpt-<step>.pt, then `latest`, each atomically; then deletes all but this one
    and `previous`. A SIGTERM meanwhile waits until all of it is done."""
    directory = args.checkpoint_dir
    with uninterrupted():
        data = serialize({"step": step, "model": model.state_dict(),
                          "optimizer": opt.state_dict(), "seed": args.seed,
                          "world_size": world})
        write_atomic(os.path.join(directory, f"ckpt-{step}.pt"), data)
        pointer = f"ckpt-{step}.pt sha256:{hashlib.sha256(data).hexdigest()}\n"
        write_atomic(os.path.join(directory, "latest"), pointer.encode())
        for old, name in checkpoint_files(directory).items():
            if old not in (step, previous):
                try:
                    os.unlink(os.path.join(directory, name))
                except OSError:
                    pass


def train(args, rank, world):
    torch.set_num_threads(1)  # one process per worker; also one fixed order of float sums
    torch.use_deterministic_algorithms(True)
    model = make_model(args.seed)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    params = list(model.parameters())
    w1, w2 = teacher(args.seed)
    loss_fn = nn.MSELoss()

    last, loaded = resume(args, model, opt, rank, world)
    start = last + 1
    if rank == 0:
        attempt = os.environ.get("PODRUN_ATTEMPT") or "1"
        resumed_from = os.environ.get("PODRUN_RESUMED_FROM") or "none"
        print(f"attempt {attempt} (resumed from: {resumed_from}) starting at step "
              f"{min(start, args.steps + 1)} of {args.steps}")
        if loaded:
            print(f"loaded ckpt-{last}.pt (sha256 {loaded[:12]}...) from {args.checkpoint_dir}")
        if start > args.steps:
            print(f"the checkpoint is of step {last}: training is already done")

    previous = last
    began = time.monotonic()
    for step in range(start, args.steps + 1):
        x, y = batch(args.seed, step, rank, args.batch_size, w1, w2)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        # One all_reduce per step: every gradient and the loss, summed then averaged.
        flat = torch.cat([p.grad.reshape(-1) for p in params] + [loss.detach().reshape(1)])
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        flat /= world
        offset = 0
        for p in params:
            n = p.numel()
            p.grad.copy_(flat[offset:offset + n].view_as(p))
            offset += n
        opt.step()
        if args.step_seconds > 0:
            time.sleep(args.step_seconds)
        if step % args.checkpoint_every == 0 or step == args.steps:
            if rank == 0:
                save_checkpoint(args, model, opt, step, world, previous)
                print(f"step {step} loss {flat[-1].item():.6f} (checkpoint saved)")
            previous = step
            dist.barrier()  # nobody runs ahead of a checkpoint that may not be there yet

    digest = weights_sha256(model)
    digests = gather_digests(digest)
    differ = [r for r, d in enumerate(digests) if d != digest]
    if differ:
        raise Fatal(f"my weights (sha256 {digest}) differ from rank(s) "
                    f"{', '.join(map(str, differ))}")
    if rank == 0:
        with uninterrupted():
            write_atomic(os.path.join(args.checkpoint_dir, "final.pt"),
                         serialize(model.state_dict()))
        if start <= args.steps:
            print(f"trained steps {start}-{args.steps} in {time.monotonic() - began:.2f}s")
        print(f"final weights sha256: {digest}")
    dist.barrier()
    if rank == 0:
        print("done")


def gather_digests(digest):
    """Every rank's hex digest, on every rank."""
    mine = torch.tensor(list(bytes.fromhex(digest)), dtype=torch.int64)
    out = [torch.zeros_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(out, mine)
    return [bytes(t.tolist()).hex() for t in out]


def run(args, rank, world, who):
    """The whole process; returns its exit status."""
    try:
        dist.init_process_group("gloo", init_method="env://",
                                timeout=timedelta(seconds=env_value("DIST_TIMEOUT", 60, int)))
        train(args, rank, world)
        return 0
    except Stopping:
        return 128 + _Signals.received
    except Fatal as e:
        print(f"{who}: FAILED: {e}", file=sys.stderr)
        return e.code
    except Exception as e:  # noqa: BLE001 - a peer that died, a full disk, ...
        if _Signals.received is not None:  # a peer stopped by the same signal broke a collective
            return 128 + _Signals.received
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        print(f"{who}: FAILED: {type(e).__name__}: {first} (a peer rank died, hangs or is "
              "unreachable, or the checkpoint dir cannot be written)", file=sys.stderr)
        return 1


def main():
    args = parse_args()
    missing = [v for v in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE")
               if not os.environ.get(v)]
    if missing:
        sys.exit("train.py: " + ", ".join(missing) + " not set; run me with podrun launch "
                 "(or torchrun), which set MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE")
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    who = f"rank {rank}/{world}"
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        code = run(args, rank, world, who)
        _Signals.raised = True  # from here on a signal is only noted
    except Stopping:  # one that came while run() was handling another exception
        code = 0
    if _Signals.received is not None:
        name = signal.Signals(_Signals.received).name
        during = (" (it came while a checkpoint was being written: that write was finished "
                  "first)" if _Signals.deferred else "")
        print(f"{who}: {name}: stopped without a partial checkpoint{during}; the next start "
              "resumes from the latest one", file=sys.stderr)
        code = 128 + _Signals.received
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit: a broken process group can block a normal interpreter exit.
    os._exit(code)


if __name__ == "__main__":
    main()

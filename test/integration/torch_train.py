"""A deterministic two-rank PyTorch training job that checkpoints on SIGUSR1 (issue 5, point 7).

Run as a Slurm step, one task per node: `srun python3 -u torch_train.py --out FILE`. Rank and
world size come from SLURM_PROCID / SLURM_NTASKS; the ranks meet over gloo at 127.0.0.1 (every
node of the test cluster is this machine) on a port derived from the job id and restart count.

Its only signal handling is its own SIGUSR1 handler, which sets a flag. At the next step
boundary the ranks agree (all_reduce MAX of the flag); if any rank was signalled, rank 0 saves
{step, model, optimizer} to $SLURM_CHECKPOINT_DIR/ckpt.pt (written to a temporary name, then
renamed) and every rank exits 0. On start, an existing checkpoint is loaded and training continues
from its step. At the end rank 0 saves the final weights to --out and prints their SHA-256.

Same seed, same data, one thread per rank, two ranks summing with gloo: a run interrupted and
resumed ends with weights bitwise equal to an uninterrupted one.
"""

import argparse
import os
import signal
import sys
import time

signalled = []  # (epoch) of each SIGUSR1


def on_usr1(signo, frame):
    signalled.append(time.time())


# Before the slow imports: a USR1 that comes early is remembered, not fatal.
signal.signal(signal.SIGUSR1, on_usr1)

import hashlib  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

SEED = 1234
SAMPLES = 1024
FEATURES = 32
BATCH = 32  # per rank


def log(rank, text):
    print(f"rank {rank}: {text}", flush=True)


def make_model():
    torch.manual_seed(SEED)
    return torch.nn.Sequential(
        torch.nn.Linear(FEATURES, 64), torch.nn.Tanh(),
        torch.nn.Linear(64, 64), torch.nn.Tanh(),
        torch.nn.Linear(64, 4))


def make_data():
    g = torch.Generator().manual_seed(SEED + 1)
    x = torch.randn(SAMPLES, FEATURES, generator=g)
    w = torch.randn(FEATURES, 4, generator=g)
    y = torch.sin(x @ w) + 0.1 * torch.randn(SAMPLES, 4, generator=g)
    return x, y


def batch(x, y, step, rank, world):
    """This rank's batch for a step: a function of (step, rank) only."""
    start = ((step * world + rank) * BATCH) % SAMPLES
    idx = torch.arange(start, start + BATCH) % SAMPLES
    return x[idx], y[idx]


def weights_digest(model):
    h = hashlib.sha256()
    for name, p in model.state_dict().items():
        h.update(name.encode())
        h.update(p.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=240)
    ap.add_argument("--step-sleep", type=float, default=0.1, help="seconds per step, so a preemption lands mid-run")
    ap.add_argument("--out", required=True, help="final weights (torch.save of the state dict), by rank 0")
    ap.add_argument("--ckpt-dir", default=None, help="default $SLURM_CHECKPOINT_DIR; none: no checkpoint")
    args = ap.parse_args()

    rank = int(os.environ["SLURM_PROCID"])
    world = int(os.environ["SLURM_NTASKS"])
    jobid = int(os.environ["SLURM_JOB_ID"])
    restart = int(os.environ.get("SLURM_RESTART_COUNT", "0"))
    ckpt_dir = args.ckpt_dir or os.environ.get("SLURM_CHECKPOINT_DIR")
    ckpt = os.path.join(ckpt_dir, "ckpt.pt") if ckpt_dir else None

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    # A fresh port per run: a requeued run must not meet the previous run's sockets. Above the
    # test clusters' ports (16306-27006 with up to four pytest workers), below the ephemeral range.
    os.environ.setdefault("MASTER_PORT", str(28000 + (jobid * 8 + restart) % 3000))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    log(rank, f"pid {os.getpid()} node {os.environ.get('SLURMD_NODENAME')} restart {restart} "
              f"world {world} port {os.environ['MASTER_PORT']} ckpt {ckpt}")

    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    start = 0
    if ckpt and os.path.exists(ckpt):
        state = torch.load(ckpt, map_location="cpu")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        start = state["step"]
        log(rank, f"resumed from step {start}")
    ddp = DDP(model)
    x, y = make_data()
    loss_fn = torch.nn.MSELoss()

    for step in range(start, args.steps):
        # Step boundary: stop if any rank was signalled.
        flag = torch.tensor([1 if signalled else 0])
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item():
            if not signalled:  # another rank's USR1 came first: wait a moment for this one's
                deadline = time.time() + 3
                while not signalled and time.time() < deadline:
                    time.sleep(0.05)
            got = f"got USR1 at {signalled[0]:.3f} ({len(signalled)}x)" if signalled else "no USR1 here"
            if rank == 0 and ckpt:
                os.makedirs(ckpt_dir, exist_ok=True)
                tmp = ckpt + ".tmp"
                torch.save({"step": step, "model": model.state_dict(), "optimizer": opt.state_dict()}, tmp)
                os.replace(tmp, ckpt)
                log(rank, f"{got}; saved step {step} at {time.time():.3f}")
            else:
                log(rank, f"{got}; stopping at step {step}")
            dist.barrier()
            dist.destroy_process_group()
            log(rank, f"exiting 0, USR1 received {len(signalled)}x")
            return 0
        xb, yb = batch(x, y, step, rank, world)
        opt.zero_grad()
        loss = loss_fn(ddp(xb), yb)
        loss.backward()
        opt.step()
        if step % 10 == 0:
            log(rank, f"step {step} loss {loss.item():.6f}")
        time.sleep(args.step_sleep)

    digest = weights_digest(model)
    if rank == 0:
        tmp = args.out + ".tmp"
        torch.save(model.state_dict(), tmp)
        os.replace(tmp, args.out)
    log(rank, f"done {args.steps} steps, weights sha256 {digest}")
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())

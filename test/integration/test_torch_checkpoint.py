"""Issue 5, point 7: a real GPU-style training job on the real cluster.

A two-rank PyTorch job (Debian's python3-torch, CPU, gloo, DistributedDataParallel) runs across
n3,n4 as a standby job with --checkpoint-dir. Its step holds a stand-in GPU per node and its only
signal handling is the program's own SIGUSR1 handler (torch_train.py): no --signal, no trap.
An owner job reclaims n3; the program saves a checkpoint on the signal and exits; the job is
requeued, resumes from the checkpoint once the owner's job ends, and finishes with weights
bitwise equal to an uninterrupted run of the same program (same seed, same two-rank setup) on
the public nodes n1,n2, which runs at the same time.
"""

import re
import subprocess
import time
from pathlib import Path

import pytest

from cluster import PREEMPTCTL, job_info, poll, release
from test_checkpoint import ckpt, output, preempt  # noqa: F401 (ckpt is the fixture)
from test_owners import wait_start

PYTHON = "/usr/bin/python3"
PROGRAM = Path(__file__).resolve().parent / "torch_train.py"

if subprocess.run([PYTHON, "-c", "import torch.distributed"], capture_output=True).returncode != 0:
    pytest.skip(f"torch is not importable by {PYTHON}: scripts/install-deps installs python3-torch",
                allow_module_level=True)

# Two nodes, one rank and one stand-in GPU each. The step asks for its GPU itself (the
# checkpoint signal reaches every step process that handles it, GPUs or not: steps: all).
TWO_NODES = ["--exclusive", "-N2", "--ntasks-per-node=1", "--gres=gpu:1", "--time=30", "--open-mode=append"]
TRAIN = """\
echo "start $(date +%s.%N) restart=${{SLURM_RESTART_COUNT:-0}}"
srun --gres=gpu:1 {python} -u {program} --out {out}
"""


def train_script(out):
    return TRAIN.format(python=PYTHON, program=PROGRAM, out=out)


def same_weights(a, b):
    """torch.equal on every tensor of the two saved state dicts, in the interpreter jobs use."""
    code = ("import sys, torch\n"
            "a, b = torch.load(sys.argv[1]), torch.load(sys.argv[2])\n"
            "print(sorted(a) == sorted(b) and all(torch.equal(a[k], b[k]) for k in a))\n")
    r = subprocess.run([PYTHON, "-c", code, str(a), str(b)], capture_output=True, text=True, check=True)
    return r.stdout.strip() == "True"


def usr1_stamps(text):
    """{rank: epoch} of the USR1 each rank reported."""
    return {int(r): float(t) for r, t in re.findall(r"^rank (\d): got USR1 at (\d+\.\d+)", text, re.M)}


def test_two_rank_pytorch_job_checkpoints_on_preemption_and_resumes_to_the_same_weights(ckpt):  # noqa: F811
    c = ckpt
    t_begin = time.time()
    stamp = time.time_ns()
    ref_out, victim_out = c.jobs / f"torch-ref-{stamp}.pt", c.jobs / f"torch-victim-{stamp}.pt"
    ckdir = c.jobs / f"torch-ckpt-{stamp}"

    # The uninterrupted reference, on the public nodes, at the same time.
    ref = c.sbatch(["-p", "public", "-w", "n1,n2", *TWO_NODES], train_script(ref_out), user="alice")
    victim = c.sbatch(["--qos=standby", "--requeue", "-p", "standby", "-w", "n3,n4",
                       f"--checkpoint-dir={ckdir}", *TWO_NODES], train_script(victim_out), user="alice")
    t_start = wait_start(c, victim, 0, 30)
    poll(lambda: re.search(r"^rank 0: step [1-9]0 ", output(c, victim), re.M), 60,
         "the victim's training to pass step 10")
    owner, t0 = preempt(c)  # waits out batch_sched_delay, then carol's job asks for n3

    poll(lambda: "saved step" in output(c, victim), 30, "the victim to save its checkpoint")
    first = output(c, victim)
    saved = int(re.search(r"^rank 0: .*saved step (\d+) at (\d+\.\d+)", first, re.M).group(1))
    t_saved = float(re.search(r"saved step \d+ at (\d+\.\d+)", first).group(1))
    got = usr1_stamps(first)
    poll(lambda: job_info(c, victim)["Restarts"] == "1", 20, "the victim to be requeued")
    poll(lambda: c.job_state(owner) == "RUNNING", 20, "the owner job to run", interval=0.1)
    t_owner = time.time()
    assert (ckdir / "ckpt.pt").exists()

    release(c, owner)
    t_release = time.time()
    t_rerun = wait_start(c, victim, 1, 60)
    c.wait_job_state(victim, "COMPLETED", timeout=120)
    c.wait_job_state(ref, "COMPLETED", timeout=120)
    t_end = time.time()
    out = output(c, victim)
    resumed = [int(s) for s in re.findall(r"^rank \d: resumed from step (\d+)", out, re.M)]
    digests = re.findall(r"^rank (\d): done \d+ steps, weights sha256 (\w+)", out, re.M)
    ref_digests = re.findall(r"^rank (\d): done \d+ steps, weights sha256 (\w+)", output(c, ref), re.M)
    received = re.findall(r"^rank (\d): exiting 0, USR1 received (\d+)x", first, re.M)

    print(f"\nvictim {victim} started {t_start - t_begin:.1f} s into the test; owner {owner} submitted "
          f"{t0 - t_start:.1f} s after the victim started")
    print("owner submitted -> USR1: " + ", ".join(f"rank {r} {t - t0:.2f} s" for r, t in sorted(got.items()))
          + f"; -> checkpoint of step {saved} saved {t_saved - t0:.2f} s; -> owner RUNNING seen "
          f"{t_owner - t0:.2f} s")
    print(f"USR1 received per rank: {dict(received)}")
    print(f"owner released -> victim's second run started {t_rerun - t_release:.1f} s; resumed from "
          f"{resumed}; second run -> COMPLETED {t_end - t_rerun:.1f} s; whole test {t_end - t_begin:.1f} s")

    assert set(got) == {0, 1}, f"both ranks should get USR1 from the plugin:\n{first}"
    assert all(t - t0 <= 5 for t in got.values()), (got, t0)
    assert saved > 0, first
    assert job_info(c, victim)["Restarts"] == "1"
    assert resumed == [saved, saved], out
    assert c.job_state(victim) == "COMPLETED"
    assert len(digests) == 2 and len(ref_digests) == 2, (out, output(c, ref))
    assert {d for _, d in digests} == {d for _, d in ref_digests}, (digests, ref_digests)
    assert same_weights(ref_out, victim_out)


def test_two_rank_pytorch_job_paused_and_resumed_ends_with_the_same_weights(ckpt):  # noqa: F811
    """Issue 14: the same client paused mid-training by its owner (preemptctl pause), held with
    its nodes free, then resumed (preemptctl resume) from its checkpoint."""
    c = ckpt
    stamp = time.time_ns()
    ref_out, paused_out = c.jobs / f"torch-ref-{stamp}.pt", c.jobs / f"torch-paused-{stamp}.pt"
    ckdir = c.jobs / f"torch-ckpt-{stamp}"
    ref = c.sbatch(["-p", "public", "-w", "n1,n2", *TWO_NODES], train_script(ref_out), user="alice")
    job = c.sbatch(["--qos=standby", "--requeue", "-p", "standby", "-w", "n3,n4",
                    f"--checkpoint-dir={ckdir}", *TWO_NODES], train_script(paused_out), user="alice")
    wait_start(c, job, 0, 30)
    poll(lambda: re.search(r"^rank 0: step [1-9]0 ", output(c, job), re.M), 60,
         "the training to pass step 10")
    r = c.run([str(PREEMPTCTL), "pause", str(job)], user="alice", check=False, timeout=120)
    assert r.returncode == 0, r.stderr
    first = output(c, job)
    saved = int(re.search(r"^rank 0: .*saved step (\d+) at", first, re.M).group(1))
    assert set(usr1_stamps(first)) == {0, 1}, first
    info = job_info(c, job)
    assert (info["JobState"], info["Reason"]) == ("PENDING", "JobHeldUser")
    assert (ckdir / "ckpt.pt").exists()
    r = c.run([str(PREEMPTCTL), "resume", str(job)], user="alice", check=False, timeout=60)
    assert r.returncode == 0, r.stderr
    wait_start(c, job, 1, 10)
    c.wait_job_state(job, "COMPLETED", timeout=120)
    c.wait_job_state(ref, "COMPLETED", timeout=120)
    out = output(c, job)
    resumed = [int(s) for s in re.findall(r"^rank \d: resumed from step (\d+)", out, re.M)]
    assert resumed == [saved, saved], out
    assert same_weights(ref_out, paused_out)

"""Checkpoint signals (issue 5) on the real cluster: exact delivery to the batch shell and GPU
steps that handle the signal, the notice, "never lost" requeue, and the accounting notes."""

import os
import pwd
import re
import signal
import stat
import subprocess
import time

import pytest

from cluster import (PREEMPTCTL, REPO, UNTIL_RELEASED, ClusterError, cancel_all, hold_steady, job_info, poll,
                     policy_installed, process_table, processes_of, release, try_sbatch)
from test_owners import WHOLE_NODE, owner_policy, wait_start

GRACE = 20  # s: long enough that only a signal, not the kill, can end a victim early
NODE = "n3"  # an owned node (chem): carol's owner jobs reclaim it

# The batch shell traps USR1 (and reports TERM, which must not come); a GPU step with a Python
# handler saves and exits; a second GPU step has no USR1 handler and must survive the USR1.
DELIVERY = r"""
echo "start $(date +%s.%N) restart=${SLURM_RESTART_COUNT:-0}"
if [ "${SLURM_RESTART_COUNT:-0}" -gt 0 ]; then echo "resumed"; exit 0; fi
hb="$SLURM_CHECKPOINT_DIR/heartbeat"
srun -n1 --gres=gpu:1 --overlap python3 -u -c '
import os, signal, sys, time
def save(signo, frame):
    print("gpu step got %d at %.3f" % (signo, time.time()), flush=True)
    sys.exit(0)
signal.signal(signal.SIGUSR1, save)
print("gpu step ready", flush=True)
while True:
    time.sleep(0.1)
' &
srun -n1 --gres=gpu:1 --overlap bash -c "while true; do touch $hb; sleep 0.2; done" &
trap 'echo "batch got TERM"' TERM
trap 'echo "batch got USR1 at $(date +%s.%N)"; cat "$SLURM_CHECKPOINT_NOTICE"; sleep 1.5;
      age=$(( $(date +%s) - $(stat -c %Y "$hb") )); [ "$age" -le 1 ] && echo "handlerless step alive";
      exit 3' USR1
while true; do sleep 0.1; done
"""

QUICK_SAVE = r"""
echo "start $(date +%s.%N) restart=${SLURM_RESTART_COUNT:-0}"
if [ "${SLURM_RESTART_COUNT:-0}" -gt 0 ]; then exit 0; fi
trap 'echo "saved at $(date +%s.%N)"; exit 0' USR1
while true; do sleep 0.1; done
"""


@pytest.fixture(scope="module")
def ckpt(cluster):
    with policy_installed(cluster, *owner_policy(GRACE)):
        cancel_all(cluster)
        yield cluster
        cancel_all(cluster)


def first_run_preempted(cluster, jobid, fields=("State",), timeout=20):
    """The job's sacct -D records once its first run reads PREEMPTED, else what sacct shows at
    the deadline. A preempted job that exits in its grace has its run's end sent to slurmdbd
    twice: as COMPLETED by Slurm's job_complete when the batch script exits, then as PREEMPTED
    by the watcher's requeue (_job_requeue_op) a moment later; a reading in between, as under
    load in a CI run, sees the first."""
    last = []

    def check():
        nonlocal last
        last = [r for r in cluster.sacct(jobid, list(fields), ["-D"]) if r["JobID"] == str(jobid)]
        return bool(last) and last[0]["State"] == "PREEMPTED"
    try:
        poll(check, timeout, f"sacct to show job {jobid}'s first run PREEMPTED")
    except ClusterError:
        pass
    return last


def output(cluster, jobid):
    path = cluster.jobs / f"{jobid}.out"
    return path.read_text() if path.exists() else ""


def stamp(text, pattern):
    m = re.search(pattern + r" at (\d+\.\d+)", text)
    return float(m.group(1)) if m else None


def submit_victim(cluster, script, *extra):
    ckdir = cluster.jobs / f"ckpt-{time.time_ns()}"
    jobid = cluster.sbatch(["--qos=standby", "--requeue", "-p", "standby", "-w", NODE, "--gres=gpu:2",
                            f"--checkpoint-dir={ckdir}", *extra, *WHOLE_NODE], script, user="alice")
    wait_start(cluster, jobid, 0, 30)
    return jobid, ckdir


def preempt(cluster, victim=None, *ready):
    """An owner job (carol, chem) for the victim's node, once each `ready` line is in the
    victim's output; returns (jobid, submit time)."""
    if ready:
        poll(lambda: all(line in output(cluster, victim) for line in ready), 30,
             f"job {victim} to print {ready}")
    # Slurm starts a new submission's scheduling pass at most every batch_sched_delay (3 s).
    time.sleep(3.5)
    t0 = time.time()
    owner = cluster.sbatch(["-w", NODE, *WHOLE_NODE], UNTIL_RELEASED, user="carol")
    return owner, t0


def test_signal_reaches_batch_shell_and_gpu_step_handlers_only_and_the_job_is_requeued(ckpt):
    victim, ckdir = submit_victim(ckpt, DELIVERY)
    owner, t0 = preempt(ckpt, victim, "gpu step ready")
    poll(lambda: "handlerless step alive" in output(ckpt, victim) or
         "batch got USR1" in output(ckpt, victim) and ckpt.job_state(victim) != "RUNNING",
         30, "the victim to get its signal")
    out = output(ckpt, victim)
    t_batch, t_step = stamp(out, "batch got USR1"), stamp(out, "gpu step got 10")
    assert t_batch and t_step, out
    print(f"owner submitted -> batch shell USR1 {t_batch - t0:.2f} s, GPU step USR1 {t_step - t0:.2f} s")
    assert t_batch - t0 <= 3.0 and t_step - t0 <= 3.0, out
    assert "batch got TERM" not in out, out
    assert "handlerless step alive" in out, out
    # The notice, as the handler read it, and as it stays in the checkpoint directory.
    assert "SLURM_CHECKPOINT_REASON=preemption" in out, out
    notice = (ckdir / "preempt-notice").read_text()
    deadline = int(re.search(r"SLURM_CHECKPOINT_DEADLINE=(\d+)", notice).group(1))
    assert abs(deadline - (t0 + GRACE)) <= 3, (notice, t0)
    assert "SLURM_CHECKPOINT_REQUEUE=1" in notice and "SLURM_CHECKPOINT_SIGNAL=USR1" in notice
    # The directory did not exist: the plugin created it, as the job's user, mode 0700.
    st = ckdir.stat()
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (pwd.getpwnam("alice").pw_uid, 0o700), (st, ckdir)
    # Who and why: added to the notice just after the signal, once the watcher's note is there.
    want = [f"SLURM_CHECKPOINT_PREEMPTED_BY={owner}", "SLURM_CHECKPOINT_PREEMPT_REASON=owner-reclaim"]
    poll(lambda: all(line in (ckdir / "preempt-notice").read_text().splitlines() for line in want), 5,
         "the notice to name the preemptor")
    # Never lost: it exited 3 during its grace and is requeued, not FAILED.
    poll(lambda: job_info(ckpt, victim)["Restarts"] == "1", 15, "the victim to be requeued")
    poll(lambda: ckpt.job_state(owner) == "RUNNING", 15, "the owner job to run")
    release(ckpt, owner)
    poll(lambda: "resumed" in output(ckpt, victim), 60, "the victim's second run")
    ckpt.wait_job_state(victim, "COMPLETED", timeout=30)
    # sacct: each run says what happened.
    rows = first_run_preempted(ckpt, victim, ("State", "AdminComment%300"))
    first, note = rows[0], rows[0]["AdminComment%300"]
    assert first["State"] == "PREEMPTED", rows
    assert re.search(rf"preempted at \S+ by JobId={owner} \(qos owner, account chem, owner reclaim\): signal USR1, "
                     rf"grace {GRACE} s", note), rows
    assert "exited in time" in note and "(exit 3), requeued as restart 1" in note, rows


def test_owner_runs_within_3s_when_the_victim_saves_at_once(node):
    # node, not ckpt: a failure here leaves no owner job holding the node for the next test.
    victim, _ = submit_victim(node, QUICK_SAVE)
    owner, t0 = preempt(node)
    poll(lambda: node.job_state(owner) == "RUNNING", 15, "the owner job to run", interval=0.1)
    took = time.time() - t0
    print(f"owner submitted -> RUNNING: {took:.2f} s (victim saved at "
          f"{stamp(output(node, victim), 'saved') - t0:.2f} s)")
    assert took <= 3.0
    poll(lambda: job_info(node, victim)["Restarts"] == "1", 10, "the victim to be requeued")
    # The run's end reaches slurmdbd from slurmctld's agent queue, a moment after the requeue.
    rows = first_run_preempted(node, victim)
    assert rows[0]["State"] == "PREEMPTED", rows
    release(node, owner)


# An interactive step (srun or salloc, no batch script): it prints the promise it sees, saves
# on USR1 and exits. Without the promise it would be killed by the raw trigger at grace start.
INTERACTIVE_STEP = r"""
env | grep '^SLURM_CHECKPOINT_' | sort
trap 'echo "step got USR1 at $(date +%s.%N)"; cat "${SLURM_CHECKPOINT_NOTICE:-/dev/null}"; exit 0' USR1
echo "step ready"
while true; do sleep 0.1; done
"""


def interactive(cluster, client_argv, name, step=INTERACTIVE_STEP):
    """Starts an interactive client (srun or salloc) as alice on NODE with a standby GPU job
    running `step`; returns (process, output path) once the step is ready."""
    out = cluster.jobs / f"interactive-{name}-{time.time_ns()}.out"
    with open(out, "w") as f:
        proc = subprocess.Popen(["runuser", "-u", "alice", "--", *client_argv, "-n1", "-w", NODE,
                                 "--qos=standby", "-p", "standby", "--gres=gpu:1",
                                 *(["srun"] if client_argv[0] == "salloc" else []),
                                 "bash", "-c", step],
                                env=cluster.env, cwd=cluster.jobs, stdout=f,
                                stderr=subprocess.STDOUT)
    poll(lambda: "step ready" in out.read_text(), 30, f"the {name} step to start")
    return proc, out


@pytest.mark.parametrize("client", ["srun", "salloc"])
def test_an_interactive_allocation_gets_the_promise_and_the_signal(node, client):
    ckdir = node.jobs / f"ckpt-{client}-{time.time_ns()}"
    proc, out = interactive(node, [client, f"--checkpoint-dir={ckdir}"], client)
    try:
        text = out.read_text()
        for line in ["SLURM_CHECKPOINT_SIGNAL=USR1", f"SLURM_CHECKPOINT_GRACE={GRACE}",
                     "SLURM_CHECKPOINT_REQUEUE=0", f"SLURM_CHECKPOINT_DIR={ckdir}",
                     f"SLURM_CHECKPOINT_NOTICE={ckdir}/preempt-notice"]:
            assert line in text.splitlines(), text
        owner, t0 = preempt(node)
        assert proc.wait(timeout=GRACE + 15) == 0, out.read_text()
        text = out.read_text()
        t_step = stamp(text, "step got USR1")
        assert t_step, text
        print(f"{client}: owner submitted -> interactive step USR1 {t_step - t0:.2f} s")
        assert t_step - t0 <= 3.0, text
        assert "SLURM_CHECKPOINT_REASON=preemption" in text, text
        assert "SLURM_CHECKPOINT_RESTART_COUNT=0" in text.splitlines(), text
        # who preempted it and why (carol's job in chem's own partition), added to the notice
        # just after the signal from the story
        want = [f"SLURM_CHECKPOINT_PREEMPTED_BY={owner}", "SLURM_CHECKPOINT_PREEMPTOR_ACCOUNT=chem",
                "SLURM_CHECKPOINT_PREEMPT_REASON=owner-reclaim"]
        poll(lambda: all(line in (ckdir / "preempt-notice").read_text().splitlines() for line in want), 5,
             "the notice to name the preemptor")
        assert "Real-time signal" not in text, text
        poll(lambda: node.job_state(owner) == "RUNNING", 15, "the owner job to run")
        release(node, owner)
    finally:
        if proc.poll() is None:
            proc.kill()


# Exits the instant it gets USR1: slurmstepd then ends the step, and kills what is left in it.
EXITS_AT_ONCE = r"""
exec python3 -u -c '
import os, signal, time
def at_once(signo, frame):
    print("step got USR1 at %.6f" % time.time(), flush=True)
    os._exit(0)
signal.signal(signal.SIGUSR1, at_once)
print("step ready", flush=True)
while True:
    time.sleep(1)
'
"""


def test_a_step_that_exits_the_instant_it_is_signalled_still_leaves_the_preemptor_in_the_notice(node):
    # The sentinel names the preemptor just after the signal; slurmstepd waits for that before
    # it kills what is left of the step, so the notice is whole when srun returns.
    ckdir = node.jobs / f"ckpt-at-once-{time.time_ns()}"
    proc, out = interactive(node, ["srun", f"--checkpoint-dir={ckdir}"], "at-once", EXITS_AT_ONCE)
    try:
        owner, t0 = preempt(node)
        assert proc.wait(timeout=GRACE + 15) == 0, out.read_text()
        t_end = time.time()
        text = out.read_text()
        t_step = stamp(text, "step got USR1")
        assert t_step and t_step - t0 <= 3.0, text
        print(f"step got USR1 -> srun returned {t_end - t_step:.3f} s")
        # slurmstepd waited for the sentinel's lookup, not for its 3 s bound
        assert t_end - t_step < 2.0, text
        notice = (ckdir / "preempt-notice").read_text().splitlines()
        for line in ["SLURM_CHECKPOINT_REASON=preemption", f"SLURM_CHECKPOINT_PREEMPTED_BY={owner}",
                     "SLURM_CHECKPOINT_PREEMPTOR_ACCOUNT=chem", "SLURM_CHECKPOINT_PREEMPT_REASON=owner-reclaim"]:
            assert line in notice, (notice, text)
        poll(lambda: node.job_state(owner) == "RUNNING", 15, "the owner job to run")
        release(node, owner)
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("option, message", [
    ("--checkpoint-signal=FOO", "invalid --checkpoint-signal=FOO: unknown signal 'FOO'"),
    ("--checkpoint-signal=USR1@-5", "invalid --checkpoint-signal=USR1@-5"),
    ("--checkpoint-signal=USR1@99999999", "seconds must be between 1 and 86400"),
    ("--checkpoint-dir=relative", "invalid --checkpoint-dir=relative: the path must be absolute"),
])
def test_bad_options_are_refused_at_submission_in_one_line(ckpt, option, message):
    r = try_sbatch(ckpt, ["--qos=standby", option])
    assert r.returncode != 0
    assert message in r.stderr.splitlines()[0], r.stderr


def test_a_grace_longer_than_the_qos_gives_is_refused(ckpt):
    r = try_sbatch(ckpt, ["--qos=standby", f"--checkpoint-signal=USR1@{GRACE + 1}"])
    assert r.returncode != 0
    assert f"qos standby gives at most {GRACE} s between the signal and the kill" in r.stderr, r.stderr


# --- the clients' contracts (see /work/shared/slurm-22.05-notes.md, "Client contracts") --------

@pytest.fixture
def node(ckpt):
    """The cluster, and an empty queue after the test, whatever it left behind."""
    yield ckpt
    cancel_all(ckpt)


def all_of(cluster, jobid):
    """`scontrol show job` as text: the AdminComment holds "JobId=", which job_info splits on."""
    return cluster.run(["scontrol", "-o", "show", "job", str(jobid)]).stdout


def second_run(cluster, victim, owner):
    """After the victim's requeue: the owner runs and is released, and the victim's second run
    completes. Returns the owner's wait (s) from the victim's requeue to RUNNING, and when it
    was seen RUNNING (epoch s)."""
    poll(lambda: job_info(cluster, victim)["Restarts"] != "0", 40, "the victim to be requeued")
    t_requeued = time.time()
    poll(lambda: cluster.job_state(owner) == "RUNNING", 45, "the owner job to run", interval=0.1)
    t_running = time.time()
    release(cluster, owner)
    poll(lambda: "resumed" in output(cluster, victim), 60, "the victim's second run")
    cluster.wait_job_state(victim, "COMPLETED", timeout=30)
    return t_running - t_requeued, t_running


def requeued_once_by_itself(cluster, victim):
    info, text = job_info(cluster, victim), all_of(cluster, victim)
    assert info["Restarts"] == "1", text
    assert "requeued by the job itself (scontrol requeue) as restart 1" in text, text
    assert "exited in time" not in text and "killed at grace end" not in text, text
    assert text.count("requeued") == 1, text


RESUME = """
echo "start $(date +%s.%N) restart=${SLURM_RESTART_COUNT:-0}"
if [ "${SLURM_RESTART_COUNT:-0}" -gt 0 ]; then echo "resumed"; exit 0; fi
"""

# PyTorch Lightning: every rank saves on USR1 and goes on; rank 0 requeues the job itself.
# Lightning only logs SIGTERM. The batch shell has no handler (it gets nothing).
LIGHTNING = RESUME + r"""
RANK=$(cat <<'EOF'
import os, signal, subprocess, time
rank = int(os.environ["SLURM_PROCID"])
def on_usr1(signo, frame):
    print("rank %d got %d at %.3f" % (rank, signo, time.time()), flush=True)
    with open(os.path.join(os.environ["SLURM_CHECKPOINT_DIR"], "rank%d.ckpt" % rank), "w") as f:
        f.write("saved")
    if rank == 0:
        r = subprocess.run(["scontrol", "requeue", os.environ["SLURM_JOB_ID"]],
                           capture_output=True, text=True)
        print("rank 0 requeue exit %d %s" % (r.returncode, r.stderr.strip()), flush=True)
def on_term(signo, frame):
    print("rank %d got TERM at %.3f" % (rank, time.time()), flush=True)
signal.signal(signal.SIGUSR1, on_usr1)
signal.signal(signal.SIGTERM, on_term)
print("rank %d ready" % rank, flush=True)
while True:
    time.sleep(0.1)
EOF
)
srun -N1 -n2 --gres=gpu:2 python3 -u -c "$RANK"
"""


def two_ranks_signalled(cluster, script, signo, *extra):
    """A two-rank victim running `script`, preempted once both ranks are ready; waits until
    rank 0 has run `scontrol requeue` and checks that both ranks got `signo` within 3 s of the
    owner's submission. Returns (victim, ckdir, owner, t0, output)."""
    victim, ckdir = submit_victim(cluster, script, *extra)
    owner, t0 = preempt(cluster, victim, "rank 0 ready", "rank 1 ready")
    poll(lambda: "rank 0 requeue exit" in output(cluster, victim), 30, "rank 0 to requeue the job")
    out = output(cluster, victim)
    got = [stamp(out, f"rank {r} got {signo}") for r in (0, 1)]
    assert all(got), out
    print(f"owner submitted -> signal {signo} at rank 0 {got[0] - t0:.2f} s, "
          f"rank 1 {got[1] - t0:.2f} s")
    assert max(got) - t0 <= 3.0, out
    return victim, ckdir, owner, t0, out


def test_lightning_every_rank_gets_usr1_and_rank0_requeues_the_job_once(node):
    victim, ckdir, owner, t0, out = two_ranks_signalled(node, LIGHTNING, 10)
    assert "rank 0 requeue exit 0" in out, out
    assert (ckdir / "rank0.ckpt").exists() and (ckdir / "rank1.ckpt").exists()
    waited, t_running = second_run(node, victim, owner)
    # Lightning only logs the TERM of the requeue, so its ranks outlive it: they are killed when
    # the grace ends (Slurm alone would wait KillWait, 30 s, after the requeue).
    print(f"victim requeued -> owner RUNNING {waited:.2f} s (owner submitted -> RUNNING "
          f"{t_running - t0:.2f} s, grace {GRACE} s)")
    # The ranks were still there when the grace ended (the job was still completing)...
    node.wait_log("slurmctld", rf"JobId={victim} requeued itself during its grace and its "
                  "processes outlived it: killing them")
    # ...and the owner got the node then, not KillWait (30 s) after the requeue.
    assert t_running - t0 <= GRACE + 5
    requeued_once_by_itself(node, victim)


# submitit: USR2 to the step; rank 0 checkpoints, requeues the job and exits. Every rank logs each
# signal it gets, so a USR1 or an early TERM would show.
SUBMITIT = RESUME + r"""
RANK=$(cat <<'EOF'
import os, signal, subprocess, sys, time
rank = int(os.environ["SLURM_PROCID"])
def log(signo, frame):
    print("rank %d got %d at %.3f" % (rank, signo, time.time()), flush=True)
def on_usr2(signo, frame):
    log(signo, frame)
    if rank == 0:
        with open(os.path.join(os.environ["SLURM_CHECKPOINT_DIR"], "submitit.ckpt"), "w") as f:
            f.write("saved")
        r = subprocess.run(["scontrol", "requeue", os.environ["SLURM_JOB_ID"]],
                           capture_output=True, text=True)
        print("rank 0 requeue exit %d at %.3f %s" % (r.returncode, time.time(), r.stderr.strip()),
              flush=True)
        sys.exit(0)
signal.signal(signal.SIGUSR2, on_usr2)
signal.signal(signal.SIGUSR1, log)
signal.signal(signal.SIGTERM, log)
print("rank %d ready" % rank, flush=True)
while True:
    time.sleep(0.1)
EOF
)
srun -N1 -n2 --gres=gpu:2 python3 -u -c "$RANK"
"""


def test_submitit_gets_usr2_only_and_requeues_itself_once(node):
    victim, ckdir, owner, _, out = two_ranks_signalled(node, SUBMITIT, 12,
                                                       "--checkpoint-signal=USR2")
    requeued = stamp(out, r"rank 0 requeue exit 0")
    assert requeued, out
    assert "got 10" not in out, out
    # TERM may come only from the requeue's kill, after rank 0 requeued.
    terms = [float(t) for t in re.findall(r"got 15 at (\d+\.\d+)", out)]
    assert all(t >= requeued for t in terms), out
    assert (ckdir / "submitit.ckpt").exists()
    notice = (ckdir / "preempt-notice").read_text()
    assert "SLURM_CHECKPOINT_SIGNAL=USR2" in notice, notice
    second_run(node, victim, owner)
    requeued_once_by_itself(node, victim)


# transformers, Megatron-LM, torchrun...: TERM to the step. The agent (the task) only logs TERM
# and waits for its worker, which saves and exits; the batch shell has no TERM handler.
AGENT = RESUME + r"""
export WORKER=$(cat <<'EOF'
import os, signal, sys, time
def on_signal(signo, frame):
    print("worker got %d at %.3f" % (signo, time.time()), flush=True)
    with open(os.path.join(os.environ["SLURM_CHECKPOINT_DIR"], "worker.ckpt"), "w") as f:
        f.write("saved")
    sys.exit(0)
signal.signal(signal.SIG@WORKER@, on_signal)
print("worker ready", flush=True)
while True:
    time.sleep(0.1)
EOF
)
AGENT=$(cat <<'EOF'
import os, signal, subprocess, sys, time
def log(signo, frame):
    print("agent got %d at %.3f" % (signo, time.time()), flush=True)
for s in (@AGENT@):
    signal.signal(s, log)
worker = subprocess.Popen([sys.executable, "-u", "-c", os.environ["WORKER"]])
rc = worker.wait()
time.sleep(1)
print("agent alive 1 s after its worker exited %d" % rc, flush=True)
sys.exit(rc)
EOF
)
srun -N1 -n1 --gres=gpu:1 python3 -u -c "$AGENT"
echo "step ended $?"
"""


def test_term_reaches_agent_and_worker_and_the_job_that_exits_is_requeued(node):
    script = AGENT.replace("@WORKER@", "TERM").replace("@AGENT@", "signal.SIGTERM,")
    victim, ckdir = submit_victim(node, script, "--checkpoint-signal=TERM")
    owner, t0 = preempt(node, victim, "worker ready")
    poll(lambda: "step ended" in output(node, victim), 30, "the step to end")
    out = output(node, victim)
    agent, worker = stamp(out, "agent got 15"), stamp(out, "worker got 15")
    assert agent and worker, out
    print(f"owner submitted -> TERM at the agent {agent - t0:.2f} s, at the worker {worker - t0:.2f} s")
    assert max(agent, worker) - t0 <= 3.0, out
    assert "agent alive 1 s after its worker exited 0" in out and "step ended 0" in out, out
    assert (ckdir / "worker.ckpt").exists()
    second_run(node, victim, owner)
    text = all_of(node, victim)
    assert job_info(node, victim)["Restarts"] == "1", text
    assert "exited in time" in text and "(exit 0), requeued as restart 1" in text, text


def test_usr1_spares_a_torchrun_agent_that_does_not_handle_it(node):
    """torchrun's agent handles TERM, INT and HUP only: USR1 would kill it. It is left alone;
    its worker, which handles USR1, gets it."""
    script = AGENT.replace("@WORKER@", "USR1").replace("@AGENT@", "signal.SIGTERM, signal.SIGINT, signal.SIGHUP")
    victim, ckdir = submit_victim(node, script)
    owner, t0 = preempt(node, victim, "worker ready")
    poll(lambda: "step ended" in output(node, victim), 30, "the step to end")
    out = output(node, victim)
    worker = stamp(out, "worker got 10")
    assert worker, out
    print(f"owner submitted -> USR1 at the worker {worker - t0:.2f} s")
    assert "agent alive 1 s after its worker exited 0" in out and "step ended 0" in out, out
    assert "agent got" not in out, out
    assert (ckdir / "worker.ckpt").exists()
    release(node, owner)


# The classic batch idiom: the batch shell traps USR1, saves and requeues; the step (no handler)
# runs in the background so that bash can run the trap.
BATCH_IDIOM = RESUME + r"""
trap 'echo "trap ran at $(date +%s.%N)"; touch "$SLURM_CHECKPOINT_DIR/batch.ckpt";
      scontrol requeue $SLURM_JOB_ID; echo "requeue exit $?"' USR1
srun -n1 --gres=gpu:1 bash -c 'echo "step ready"; exec sleep 1000' &
wait
"""


def test_batch_trap_runs_and_requeues_the_job_once(node):
    victim, ckdir = submit_victim(node, BATCH_IDIOM)
    owner, t0 = preempt(node, victim, "step ready")
    poll(lambda: "requeue exit" in output(node, victim), 30, "the trap")
    out = output(node, victim)
    ran = stamp(out, "trap ran")
    assert ran, out
    print(f"owner submitted -> batch trap {ran - t0:.2f} s")
    assert ran - t0 <= 3.0 and "requeue exit 0" in out, out
    assert (ckdir / "batch.ckpt").exists()
    waited, _ = second_run(node, victim, owner)
    print(f"victim requeued -> owner RUNNING {waited:.2f} s")
    requeued_once_by_itself(node, victim)


def test_time_limit_notice_comes_lead_seconds_before_the_end(node):
    ckdir = node.jobs / f"ckpt-{time.time_ns()}"
    script = r"""
echo "start $(date +%s.%N)"
trap 'echo "batch got USR1 at $(date +%s.%N)"; cat "$SLURM_CHECKPOINT_NOTICE"; exit 0' USR1
while true; do sleep 0.1; done
"""
    victim = node.sbatch(["--qos=standby", "-p", "standby", "-w", NODE, "--exclusive", "-N1",
                          "--time=1", "--checkpoint-signal=USR1@20", f"--checkpoint-dir={ckdir}"],
                         script, user="alice")
    poll(lambda: "batch got USR1" in output(node, victim), 75, "the time-limit signal", interval=0.5)
    out = output(node, victim)
    start, got = stamp(out.replace("start ", "start at "), "start"), stamp(out, "batch got USR1")
    print(f"job start -> USR1 {got - start:.2f} s (limit 60 s, lead 20 s)")
    assert 30 <= got - start <= 50, out
    assert "SLURM_CHECKPOINT_REASON=time-limit" in out, out
    deadline = int(re.search(r"SLURM_CHECKPOINT_DEADLINE=(\d+)", out).group(1))
    assert abs(deadline - (start + 60)) <= 3, out


def test_a_time_limit_raised_after_its_notice_gets_another_notice_before_the_new_end(node):
    """The job saved at its time-limit notice and went on; an administrator raises the limit:
    the new end gets its own notice, lead seconds before it, whose deadline is the new end."""
    ckdir = node.jobs / f"ckpt-{time.time_ns()}"
    script = r"""
echo "start at $(date +%s.%N)"
trap 'echo "batch got USR1 at $(date +%s.%N)"; cat "$SLURM_CHECKPOINT_NOTICE"' USR1
while true; do sleep 0.1 & wait $!; done
"""
    # A 1-minute limit with a 50 s lead: the first notice 10 s after the start, or at the
    # watcher's first scan of the run (every 30 s) that sets its timer. Not a standby job: its
    # QOS grace would cap the lead.
    job = node.sbatch(["-p", "public", "-w", "n1", "--exclusive", "-N1", "--time=1",
                       "--checkpoint-signal=USR1@50", f"--checkpoint-dir={ckdir}"], script,
                      user="alice")
    poll(lambda: "batch got USR1" in output(node, job), 75, "the first time-limit notice",
         interval=0.3)
    start = stamp(output(node, job), "start")
    # EndTime 95 s after the start: Slurm adds (35 + 30) / 60 = 1 minute to the limit.
    new_end = int(start) + 95
    node.run(["scontrol", "update", f"JobId={job}",
              f"EndTime={time.strftime('%Y-%m-%dT%H:%M:%S', time.localtime(new_end))}"])
    info = job_info(node, job)
    assert info["TimeLimit"] == "00:02:00", info
    poll(lambda: output(node, job).count("batch got USR1") >= 2, 60,
         "the raised limit's notice", interval=0.3)
    out = output(node, job)
    got = [float(t) for t in re.findall(r"batch got USR1 at (\d+\.\d+)", out)]
    print(f"notices {got[0] - start:.1f} and {got[1] - start:.1f} s after the start (ends 60 "
          f"and {new_end - start:.0f} s, lead 50 s)")
    assert new_end - 50 - 1 <= got[1] <= new_end - 50 + 4, out
    deadlines = [int(d) for d in re.findall(r"SLURM_CHECKPOINT_DEADLINE=(\d+)", out)]
    assert len(deadlines) == 2 and abs(deadlines[0] - (start + 60)) <= 2, out
    assert abs(deadlines[1] - new_end) <= 1, out
    assert out.count("SLURM_CHECKPOINT_REASON=time-limit") == 2, out


# --- what the job is given to write to ----------------------------------------------------------

def refused(cluster, ckdir):
    """A job given ckdir: its output once it ended, and its final state."""
    jobid = cluster.sbatch(["--no-requeue", "-N1", "--time=5", f"--checkpoint-dir={ckdir}"],
                           'echo "script ran"; touch "$SLURM_CHECKPOINT_DIR/written"', user="alice")
    state = cluster.wait_job_state(jobid, {"FAILED", "COMPLETED", "CANCELLED"}, timeout=30)
    return output(cluster, jobid), state


def test_a_symlink_as_checkpoint_dir_is_refused_and_not_followed(node):
    stem = node.jobs / f"elsewhere-{time.time_ns()}"
    stem.mkdir()
    stem.chmod(0o1777)  # root's, writable by all: only the refusal keeps alice out
    link = node.jobs / f"link-{time.time_ns()}"
    link.symlink_to(stem)
    out, state = refused(node, link)
    print(f"job ended {state}: {out.strip()!r}")
    assert f"refusing checkpoint directory {link}: it is a symlink or not a directory" in out, out
    assert "script ran" not in out and state == "FAILED", out
    assert list(stem.iterdir()) == []


def test_a_checkpoint_dir_of_another_user_is_refused(node):
    ckdir = node.jobs / f"bobs-{time.time_ns()}"
    node.run(["mkdir", "-m", "0777", str(ckdir)], user="bob")
    node.run(["chmod", "0777", str(ckdir)], user="bob")
    out, state = refused(node, ckdir)
    print(f"job ended {state}: {out.strip()!r}")
    uid = node.run(["id", "-u", "bob"]).stdout.strip()
    assert f"refusing checkpoint directory {ckdir}: it belongs to uid {uid}, not to you" in out, out
    assert "script ran" not in out and state == "FAILED", out
    assert list(ckdir.iterdir()) == []


def test_a_notice_file_planted_by_another_user_is_left_alone_and_the_signal_still_comes(node):
    ckdir = node.jobs / f"ckpt-{time.time_ns()}"
    node.run(["mkdir", "-m", "1777", str(ckdir)], user="alice")
    node.run(["chmod", "1777", str(ckdir)], user="alice")
    planted = ckdir / "preempt-notice"
    node.run(["bash", "-c", f"echo planted by bob > {planted}"], user="bob")
    script = r"""
echo "start $(date +%s.%N) restart=${SLURM_RESTART_COUNT:-0}"
trap 'echo "batch got USR1 at $(date +%s.%N)"; exit 0' USR1
while true; do sleep 0.1; done
"""
    victim = node.sbatch(["--qos=standby", "--requeue", "-p", "standby", "-w", NODE, "--gres=gpu:2",
                          f"--checkpoint-dir={ckdir}", *WHOLE_NODE], script, user="alice")
    wait_start(node, victim, 0, 30)
    owner, t0 = preempt(node)
    poll(lambda: "batch got USR1" in output(node, victim), 30, "the victim's signal")
    out = output(node, victim)
    print(f"owner submitted -> batch USR1 {stamp(out, 'batch got USR1') - t0:.2f} s")
    assert f"not writing {planted}: it exists and is not a file of yours" in out, out
    assert planted.read_text() == "planted by bob\n"
    assert planted.stat().st_uid == int(node.run(["id", "-u", "bob"]).stdout)
    release(node, owner)


# --- the node-side relay (the sentinel) and the trigger signals -------------------------------

def sentinels(cluster, jobid, step):
    """Live sentinels (comm ckpt-sentinel; ckpt-sentinel+ while completing a notice) of this
    cluster's step jobid.step: slurmstepd's children (the sentinel is a sibling of the tasks,
    not a task's child)."""
    table, ours = process_table(), processes_of(cluster.dir)
    return {pid for pid, (ppid, state, comm, _) in table.items()
            if comm.startswith("ckpt-sentinel") and state not in "ZX" and pid in ours
            and f"[{jobid}.{step}]" in table.get(ppid, (0, "", "", ""))[3]}


def gone(pids):
    table = process_table()
    return all(pid not in table or table[pid][1] in "ZX" or not table[pid][2].startswith("ckpt-sentinel")
               for pid in pids)


# Two ranks on one node: rank 0 leaves at once, rank 1 keeps working and must still get the
# checkpoint signal (the sentinel used to die with local task 0).
RANK0_LEAVES = RESUME + r"""
RANK=$(cat <<'EOF'
import os, signal, sys, time
rank = int(os.environ["SLURM_PROCID"])
if rank == 0:
    print("rank 0 exits", flush=True)
    sys.exit(0)
def on_usr1(signo, frame):
    print("rank %d got %d at %.3f" % (rank, signo, time.time()), flush=True)
    sys.exit(0)
signal.signal(signal.SIGUSR1, on_usr1)
print("rank %d ready" % rank, flush=True)
while True:
    time.sleep(0.1)
EOF
)
srun -N1 -n2 --gres=gpu:2 python3 -u -c "$RANK"
echo "step ended $?"
"""


def test_a_task_outliving_local_task_0_still_gets_the_signal_and_the_relay_ends_with_the_step(node):
    victim, _ = submit_victim(node, RANK0_LEAVES)
    poll(lambda: "rank 0 exits" in output(node, victim) and "rank 1 ready" in output(node, victim),
         30, "rank 0 to exit and rank 1 to be ready")
    # With task 0 gone the step keeps exactly one relay, slurmstepd's child.
    relay = poll(lambda: sentinels(node, victim, 0) or None, 10, "the step's sentinel")
    assert len(relay) == 1, relay
    owner, t0 = preempt(node, victim, "rank 1 ready")
    poll(lambda: "rank 1 got 10" in output(node, victim), 15, "rank 1 to get USR1")
    out = output(node, victim)
    took = stamp(out, "rank 1 got 10") - t0
    print(f"owner submitted -> rank 1 (task 0 long gone) got USR1 {took:.2f} s")
    assert took <= 3.0, out
    # Not forever: the relay ends with its step.
    poll(lambda: "step ended" in output(node, victim), 15, "the step to end")
    poll(lambda: gone(relay), 15, f"the sentinel {relay} to end with its step")
    release(node, owner)


# A worker that has left the step's process tree: its parent subshell exits at once, so it is
# reparented (to init or a subreaper), as with `( cmd & )`, a launcher that double-forks or a
# daemon (its standard streams on /dev/null, or the step's output would stay open). Only the
# mark in its environment still says whose it is. In the batch step, and in an srun step's
# task. Started in the first run only; each notes every USR1 and goes on, as
# does the batch shell until both workers have noted one.
ORPHANS = RESUME + r"""
orphan() {  # $1: a name; run by the batch shell, or inside a step's task
  ( bash -c 'echo $$ > "$SLURM_SUBMIT_DIR/orphan-$0.$SLURM_JOB_ID";
             trap "echo \"$0 saved at \$(date +%s.%N)\" >> \"$SLURM_SUBMIT_DIR/orphan-$0.$SLURM_JOB_ID.out\"" USR1;
             while :; do sleep 0.2; done' "$1" </dev/null >/dev/null 2>&1 & )
}
export -f orphan
orphan batch
srun -n1 --gres=gpu:1 --overlap bash -c 'orphan step; echo "step ready"; while :; do sleep 0.2; done' &
trap 'echo "batch got USR1"; for i in $(seq 50); do
        [ -e "$SLURM_SUBMIT_DIR/orphan-batch.$SLURM_JOB_ID.out" ] && [ -e "$SLURM_SUBMIT_DIR/orphan-step.$SLURM_JOB_ID.out" ] && break;
        sleep 0.1; done; sleep 2; exit 0' USR1
while true; do sleep 0.1; done
"""


def test_a_worker_reparented_out_of_its_step_still_gets_the_signal(node):
    """Submitted with SLURM_STEP_ID=0 in its environment, as a job submitted from inside another
    job's step 0 is (Slurm sets none for the batch step and leaves that one): the plugin's own
    mark, not Slurm's variables, tells each sentinel its step's workers (which process matches
    which mark: checkpoint_test.cpp). Each worker notes USR1 within the grace's first seconds,
    and once over the whole job, as does the batch shell. (Two deliveries at the same moment
    would be one pending signal: this cannot tell them from one.)"""
    victim, _ = submit_victim(node, ORPHANS, "--export=ALL,SLURM_STEP_ID=0", "--open-mode=append")
    pidfiles = [node.jobs / f"orphan-{name}.{victim}" for name in ("batch", "step")]
    poll(lambda: all(f.exists() and f.read_text().strip() for f in pidfiles) and "step ready" in output(node, victim),
         30, "both workers to start")
    pids = [int(f.read_text()) for f in pidfiles]
    try:
        # Each really left the tree: no slurmstepd among its ancestors.
        table = process_table()
        for pid in pids:
            chain, p = [], pid
            while p in table and p > 1:
                chain.append(table[p][2])
                p = table[p][0]
            assert "slurmstepd" not in chain, (pid, chain)
        owner, t0 = preempt(node, victim, "step ready")
        outs = {name: node.jobs / f"orphan-{name}.{victim}.out" for name in ("batch", "step")}
        for name, out in outs.items():
            poll(out.exists, 15, f"the {name} step's reparented worker to get USR1")
            took = stamp(out.read_text(), f"{name} saved") - t0
            print(f"owner submitted -> the {name} step's reparented worker got USR1 {took:.2f} s")
            assert took <= 3.0, out.read_text()
        second_run(node, victim, owner)
        # Through the batch shell's exit, the requeue and the second run: still once each.
        for name, out in outs.items():
            assert out.read_text().count("saved at") == 1, (name, out.read_text())
        assert output(node, victim).count("batch got USR1") == 1, output(node, victim)
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


# A CPU-only job (no GPU anywhere): a two-rank step that catches USR1 gets it by default
# (checkpoint.steps: all); before, only steps holding GPUs did.
CPU_RANKS = RESUME + r"""
env | grep '^SLURM_CHECKPOINT_STEPS='
echo "job gpus=[${SLURM_JOB_GPUS:-}]"
RANK=$(cat <<'EOF'
import os, signal, sys, time
rank = int(os.environ["SLURM_PROCID"])
print("rank %d gpus=[%s]" % (rank, os.environ.get("SLURM_STEP_GPUS", "")), flush=True)
def on_usr1(signo, frame):
    print("rank %d got %d at %.3f" % (rank, signo, time.time()), flush=True)
    sys.exit(0)
signal.signal(signal.SIGUSR1, on_usr1)
print("rank %d ready" % rank, flush=True)
while True:
    time.sleep(0.1)
EOF
)
srun -N1 -n2 python3 -u -c "$RANK"
echo "step ended $?"
"""


def test_a_cpu_only_step_that_handles_the_signal_gets_it_by_default(node):
    ckdir = node.jobs / f"ckpt-cpu-{time.time_ns()}"
    # Both CPUs of the node and no GPU (--exclusive would hand the job every GPU of the node).
    victim = node.sbatch(["--qos=standby", "--requeue", "-p", "standby", "-w", NODE, "-N1", "-n2",
                          "--time=30", f"--checkpoint-dir={ckdir}"], CPU_RANKS, user="alice")
    wait_start(node, victim, 0, 30)
    owner, t0 = preempt(node, victim, "rank 0 ready", "rank 1 ready")
    poll(lambda: "step ended" in output(node, victim), 15, "the CPU step to end")
    out = output(node, victim)
    assert "SLURM_CHECKPOINT_STEPS=all" in out and "job gpus=[]" in out, out
    assert "rank 0 gpus=[]" in out and "rank 1 gpus=[]" in out, out
    got = [stamp(out, f"rank {r} got 10") for r in (0, 1)]
    assert all(got), out
    print(f"owner submitted -> CPU ranks USR1 {got[0] - t0:.2f} s, {got[1] - t0:.2f} s")
    assert max(got) - t0 <= 3.0, out
    release(node, owner)


# SigIgn in /proc/self/status: bits 60-62 are signals 61-63, the private triggers.
TRIGGER_BITS = 0x7 << 60
SHOW_SIGIGN = r"""
env | grep '^SLURM_CHECKPOINT_SIGNAL=' || echo "no promise"
echo "batch $(grep SigIgn /proc/self/status)"
srun -n1 bash -c 'echo "step $(grep SigIgn /proc/self/status)"'
"""


def ignored_triggers(text, where):
    m = re.search(rf"^{where} SigIgn:\s*([0-9a-f]+)$", text, re.M)
    assert m, text
    return int(m.group(1), 16) & TRIGGER_BITS


@pytest.mark.parametrize("managed", [False, True])
def test_only_tasks_of_managed_jobs_ignore_the_trigger_signals(node, managed):
    args = ["--qos=standby", "-p", "standby"] if managed else []
    jobid = node.sbatch(args, SHOW_SIGIGN, user="alice")
    node.wait_job_state(jobid, "COMPLETED", timeout=30)
    out = output(node, jobid)
    assert ("SLURM_CHECKPOINT_SIGNAL=USR1" in out) == managed, out
    for where in ("batch", "step"):
        assert ignored_triggers(out, where) == (TRIGGER_BITS if managed else 0), out


# --- The README's example job scripts, as they stand there (issue 16 item 6) -----------------

def readme_example(after):
    """The indented block that follows the README line ending with `after`, unindented."""
    lines = (REPO / "README").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.endswith(after)) + 1
    block = []
    for line in lines[start:]:
        if not line.startswith("  "):
            break
        block.append(line[2:])
    assert block and block[0].startswith("#!"), f"no script after {after!r} in the README"
    return "\n".join(block) + "\n"


def submit_example(cluster, script, steps):
    """The script as alice's standby job on NODE, with preemptctl on its PATH (a site's
    package puts it in /usr/bin) and STEPS steps of work."""
    ckdir = cluster.jobs / f"ckpt-{time.time_ns()}"
    path = f"{PREEMPTCTL.parent}:/usr/local/bin:/usr/bin:/bin"
    jobid = cluster.sbatch(["--qos=standby", "--requeue", "-p", "standby", "-w", NODE, "--gres=gpu:2",
                            f"--checkpoint-dir={ckdir}", f"--export=ALL,PATH={path},STEPS={steps}",
                            *WHOLE_NODE], script, user="alice")
    cluster.wait_job_state(jobid, "RUNNING", timeout=30)
    return jobid


def test_the_readmes_bash_example_saves_is_requeued_and_resumes_where_it_stopped(ckpt):
    victim = submit_example(ckpt, readme_example("save and be requeued:"), 40)
    owner, _ = preempt(ckpt, victim, "run 0 from step 0")
    poll(lambda: "saved at step" in output(ckpt, victim), 30, "the example to save")
    saved = int(re.search(r"saved at step (\d+) \(preemption, run 0\)", output(ckpt, victim)).group(1))
    assert saved >= 3, output(ckpt, victim)
    poll(lambda: job_info(ckpt, victim)["Restarts"] == "1", 15, "the example to be requeued")
    release(ckpt, owner)
    ckpt.wait_job_state(victim, "COMPLETED", timeout=90)
    out = output(ckpt, victim)
    assert f"run 1 from step {saved}" in out and "done at step 40" in out, out
    assert job_info(ckpt, victim)["Restarts"] == "1"


def test_the_readmes_python_example_finishes_in_its_grace_and_is_not_requeued(ckpt):
    # 12 steps: preempted after about 4, the 8 left fit in the 20 s grace.
    victim = submit_example(ckpt, readme_example("else save:"), 12)
    owner, _ = preempt(ckpt, victim)
    ckpt.wait_job_state(victim, "COMPLETED", timeout=GRACE + 10)
    out = output(ckpt, victim)
    assert "done at step 12" in out and "saved at" not in out, out
    assert f"job {victim}: finished" in out, out
    poll(lambda: ckpt.job_state(owner) == "RUNNING", 15, "the owner job to run")
    hold_steady(ckpt, {victim: "COMPLETED"}, 5)  # not requeued, not run again
    info = job_info(ckpt, victim)
    assert info["Restarts"] == "0", info
    shown = ckpt.run(["scontrol", "-o", "show", "job", str(victim)]).stdout
    story = re.search(r" AdminComment=(.*;)", shown).group(1)  # each note ends with ';'; then StdErr=
    assert re.search(r"finished by alice at \S+: not requeued if it exits 0 in a grace", story), story
    assert re.search(r"exited in time at \S+ \(exit 0\), finished: not requeued", story), story
    events = ckpt.run([str(PREEMPTCTL), "events", str(victim)], user="alice").stdout
    assert re.search(r"run 0 +finished +by alice", events) and \
        re.search(r"run 0 +exited +in its grace \(exit 0\), finished: not requeued", events), events
    release(ckpt, owner)


def test_the_python_example_saves_and_is_requeued_when_the_rest_does_not_fit(ckpt):
    victim = submit_example(ckpt, readme_example("else save:"), 600)
    owner, _ = preempt(ckpt, victim)
    poll(lambda: "saved at step" in output(ckpt, victim), 30, "the example to save")
    poll(lambda: job_info(ckpt, victim)["Restarts"] == "1", 15, "the example to be requeued")
    assert "finished by" not in ckpt.run(["scontrol", "-o", "show", "job", str(victim)]).stdout
    release(ckpt, owner)
    ckpt.run(["scancel", str(victim)])


def test_finished_is_refused_in_one_line_for_what_it_cannot_mark(ckpt):
    held = ckpt.sbatch(["--qos=standby", "--requeue", "-p", "standby", "--hold"], "sleep 60", user="alice")
    r = ckpt.run([str(PREEMPTCTL), "finished", str(held)], user="alice", check=False)
    assert r.returncode == 1, r
    assert r.stderr.strip() == (f"preemptctl: job {held} is not running: only a running job can say its "
                                "work is finished (run preemptctl finished inside the job, before it exits)"), r
    ckpt.run(["scancel", str(held)])
    for argv, why in (([], "finished needs a job id"), (["12x"], "'12x' is not a job id")):
        r = ckpt.run(["env", "-u", "SLURM_JOB_ID", str(PREEMPTCTL), "finished", *argv], check=False)
        assert r.returncode == 2 and why in r.stderr and r.stdout == "", r

"""Anti-starvation (issue 16 item 3) on the real cluster: a job preempted max_preemptions times
within the window is taken as a victim last, so the next preemption picks another job, and its
AdminComment says so. preempt/quota orders the victims (PREEMPT_DATA_PRIO)."""

import re
import time

import pytest

from cluster import PREEMPTCTL, UNTIL_RELEASED, cancel_all, job_info, policy_installed, poll, release
from test_owners import owner_policy, wait_start

GRACE = 3
STARVATION = "starvation: {max_preemptions: 3, window: 1h, protect_for: 1h}\n"

# Saves at once on its signal (requeued), and runs until released in every run.
SAVER = r"""
echo "start $(date +%s.%N) restart=${SLURM_RESTART_COUNT:-0} node=$SLURMD_NODENAME"
trap 'echo "saved at $(date +%s.%N)"; exit 0' USR1
while [ ! -e "$SLURM_SUBMIT_DIR/release.$SLURM_JOB_ID" ]; do sleep 0.5; done
"""
STANDBY = ["--qos=standby", "--requeue", "--open-mode=append", "-p", "standby", "--exclusive", "--time=30"]


@pytest.fixture(scope="module")
def sc(cluster):
    text, walltimes = owner_policy(GRACE)
    with policy_installed(cluster, text + STARVATION, walltimes):
        cancel_all(cluster)
        yield cluster
        cancel_all(cluster)


def story(cluster, jobid):
    shown = cluster.run(["scontrol", "-o", "show", "job", str(jobid)]).stdout
    m = re.search(r" AdminComment=(.*;)", shown)
    return m.group(1) if m else ""


def owner_job(cluster, *where):
    # Slurm starts a new submission's scheduling pass at most every batch_sched_delay (3 s).
    time.sleep(3.5)
    return cluster.sbatch(["-p", "chem", "-N1", "--exclusive", "--time=30", *where], UNTIL_RELEASED,
                          user="carol")


def test_the_fourth_preemption_picks_another_job(sc):
    c = sc
    # `starved` on n3 (one node), `other` on n4 and n5 (two nodes): by preempt/qos' order (QOS
    # priority, then node count) the one-node job is the first victim of an owner job that can
    # take either chem node.
    starved = c.sbatch([*STANDBY, "-N1", "-w", "n3"], SAVER, user="alice")
    other = c.sbatch([*STANDBY, "-N2", "-w", "n[4-5]"], SAVER, user="bob")
    wait_start(c, starved, 0, 30)
    wait_start(c, other, 0, 30)
    for n in (1, 2, 3):
        owner = owner_job(c, "-w", "n3")
        poll(lambda: job_info(c, starved)["Restarts"] == str(n), GRACE + 20, f"preemption {n} of job {starved}",
             interval=0.3)
        c.wait_job_state(owner, "RUNNING", timeout=20)
        release(c, owner)
        c.wait_job_state(owner, "COMPLETED", timeout=20)
        wait_start(c, starved, n, 30)
    note = story(c, starved)
    assert len(re.findall(r"slurm-preempt: preempted at ", note)) == 3, note
    assert re.search(r"protected from preemption until \S+: preempted 3 times within 3600 s, "
                     r"taken as a victim last", note), note
    assert c.job_state(other) == "RUNNING" and job_info(c, other)["Restarts"] == "0"
    events = c.run([str(PREEMPTCTL), "events", str(starved)], user="alice").stdout
    assert re.search(r"run 2 +protected +from preemption until \S+: preempted 3 times", events), events

    # The fourth owner job may take n3 or n4: the protected job is taken last, so the other goes.
    owner = owner_job(c)
    poll(lambda: job_info(c, other)["Restarts"] == "1", GRACE + 20, f"job {other} to be the victim",
         interval=0.3)
    c.wait_job_state(owner, "RUNNING", timeout=20)
    assert job_info(c, owner)["NodeList"] == "n4", job_info(c, owner)
    assert c.job_state(starved) == "RUNNING" and job_info(c, starved)["Restarts"] == "3", job_info(c, starved)
    release(c, owner, starved, other)

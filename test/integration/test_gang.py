"""Gang scheduling (slurm.conf PreemptMode=REQUEUE,GANG) beside the plugins, on a real cluster
of its own (SLURM_PREEMPT_PORT_OFFSET + 1300) with the plugins' slurm.conf fragment otherwise
(preempt/quota): a managed job the gang scheduler suspends for a job of a higher PriorityTier
partition, then resumes, keeps its run. It lost nothing to the suspension: no checkpoint signal,
no kill, no requeue, and it ends COMPLETED.

Its time limit moves by the time it was suspended; Slurm's preempt time stays unset here (it
sets one for a QOS PreemptMode=suspend victim in its preemptee list, which lib/watch.hpp
grace_preempt_time never takes for a grace).
"""

import re

import pytest
from conftest import PORT_OFFSET

from cluster import Cluster, job_info, poll

# The victim's work: 15 one-second steps, which a suspension stops and a resume carries on.
# A checkpoint signal would show in its output.
WORK = """\
echo "start $(date +%s) restart=${SLURM_RESTART_COUNT:-0}"
trap 'echo "got USR1 at $(date +%s)"' USR1
i=0
while [ $i -lt 15 ]; do sleep 1 & wait $!; i=$((i + 1)); echo "step $i"; done
echo "work done"
"""
# Both CPUs of n1. The gang scheduler suspends the jobs of a partition whose resources a job of
# a higher PriorityTier partition takes ("shadows"): the victim runs in gang_low (whose jobs may
# share resources, OverSubscribe=FORCE:1), the other job in gang_high.
ON_N1 = ["-w", "n1", "-N1", "-n1", "-c2", "--time=10"]


class GangCluster(Cluster):
    def setup_accounting(self):
        super().setup_accounting()
        # A QOS whose jobs are suspended, not requeued, when the gang scheduler preempts them.
        self.sacctmgr("add", "qos", "suspendable", "PreemptMode=suspend")
        self.sacctmgr("modify", "user", "where", "name=alice", "set", "qos+=suspendable")

    def partition_conf_lines(self):
        return [*super().partition_conf_lines(),
                "PartitionName=gang_low Nodes=n1 PriorityTier=1 OverSubscribe=FORCE:1 "
                "MaxTime=INFINITE State=UP",
                "PartitionName=gang_high Nodes=n1 PriorityTier=2 MaxTime=INFINITE State=UP"]


@pytest.fixture(scope="module")
def gang():
    c = GangCluster(with_plugins=True, port_offset=PORT_OFFSET + 1300)
    c.conf_overrides.update(PreemptMode="REQUEUE,GANG")
    with c:
        yield c


def test_a_managed_job_the_gang_scheduler_suspends_and_resumes_keeps_its_run(gang):
    c = gang
    victim = c.sbatch(["-p", "gang_low", "--qos=suspendable", "--requeue",
                       "--checkpoint-signal=USR1@10", *ON_N1], WORK, user="alice")
    c.wait_job_state(victim, "RUNNING", timeout=30)
    out = c.jobs / f"{victim}.out"
    poll(lambda: out.exists() and "step 2" in out.read_text(), 30, "the victim's second step")
    other = c.sbatch(["-p", "gang_high", *ON_N1], "sleep 4\n", user="bob")
    c.wait_job_state(victim, "SUSPENDED", timeout=30)
    c.wait_job_state(other, "COMPLETED", timeout=60)
    c.wait_job_state(victim, "RUNNING", timeout=30)
    # The watcher looks at it again (a time-limit timer moved by the suspension) while the rest
    # of its work runs.
    c.wait_job_state(victim, "COMPLETED", timeout=60)
    text = out.read_text()
    assert "got USR1" not in text, text
    assert re.findall(r"^start .* restart=(\d+)$", text, re.M) == ["0"], text
    assert "step 15\nwork done" in text, text
    info = job_info(c, victim)
    assert info["Restarts"] == "0", info
    # 22.05 suspends it through the gang scheduler's partition shadows alone: no preempt time.
    assert info["PreemptTime"] == "None", info["PreemptTime"]
    log = c.log("slurmctld")
    assert not re.search(rf"JobId={victim}\b.*(preempted|grace|requeu|kill)", log, re.I), \
        [line for line in log.splitlines() if f"JobId={victim}" in line]

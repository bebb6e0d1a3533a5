"""Issue 12: soak with faults, and reconfigure with a changed plugin list under load.

Short versions of test/cluster/soak.py's scenarios (scripts/soak runs the long ones), on a
cluster of their own (SLURM_PREEMPT_PORT_OFFSET + 500) since they restart its daemons:
SOAK_POLICY (standby grace 10 s, usage pass every 2 s, half-life 1 day) and cred_expire=5.

The soak (about 3 minutes) runs once for the module: three standby workers of 40 one-second
units (an ended worker is replaced while cycles remain), six preemptions by owner jobs; during
them slurmctld restarted with TERM, killed (-9) 1.5 s into a grace and started 1 s later, a
slurmd restarted under a running worker, slurmdbd down for 20 s across a preemption. Each test
then asserts one property of that run; a failure prints the problems recorded for it and the
run's report. The reconfigure stress runs after it on the same cluster.
"""

import pytest
from conftest import PORT_OFFSET

from cluster import Cluster
from soak import PROBLEM_KINDS, SHORT_PLAN, SOAK_CONF, SOAK_POLICY, Soak, reconfigure_stress

# Every second cycle unloads job_submit/preempt. Measured on this machine before the fix of
# issue 12's item 1: the deadlock at unload came once in about 12 unloads, so 15 unloads catch
# it about 2 times in 3; scripts/soak --reconfigure-cycles runs more.
RECONFIGURE_CYCLES = 30


@pytest.fixture(scope="module")
def soak_cluster(request):
    c = Cluster(with_plugins=True, policy=SOAK_POLICY, extra_conf=SOAK_CONF, port_offset=PORT_OFFSET + 500)
    c.start()
    try:
        yield c
    finally:
        c.failed = request.session.testsfailed > 0
        c.stop()


@pytest.fixture(scope="module")
def soak(soak_cluster):
    """The short soak, run once; its Soak object (problems by kind, counts, report())."""
    s = Soak(soak_cluster, units=40, workers=3, dbd_downtime=20, say=print)
    s.run(SHORT_PLAN)
    print(s.report())
    return s


def no_problems(soak, kind):
    """Fail with the problems of this kind (one a line) and the run's report, if any."""
    if soak.problems.get(kind):
        pytest.fail(f"{PROBLEM_KINDS[kind]}: {len(soak.problems[kind])} problem(s):\n"
                    + "\n".join(soak.problems[kind]) + f"\n--- report\n{soak.report()}", pytrace=False)


def test_soak_injected_every_fault(soak):
    no_problems(soak, "scenario")
    assert soak.counts["slurmctld restarts (TERM)"] == 1, soak.report()
    assert soak.counts["slurmctld restarts (KILL)"] == 1, soak.report()
    assert soak.counts["slurmd restarts"] == 1, soak.report()
    assert soak.counts["slurmdbd restarts"] == 1, soak.report()
    assert soak.counts["preemptions"] == len(SHORT_PLAN), soak.report()


def test_soak_every_standby_job_completed_exactly_once(soak):
    no_problems(soak, "completed")
    assert len(soak.finished) == len(soak.workers) >= 3, soak.report()
    assert all(f["state"] == "COMPLETED" for f in soak.finished.values()), soak.finished


def test_soak_all_work_done_once_resumed_from_checkpoints(soak):
    no_problems(soak, "work")
    assert soak.lost_units == 0, soak.report()


def test_soak_restart_counts_match_preemptions(soak):
    no_problems(soak, "restarts")
    assert sum(w["preempted"] for w in soak.workers.values()) == soak.counts["preemptions"]


def test_soak_fairshare_usage_survives_slurmctld_restarts(soak):
    no_problems(soak, "usage")
    assert soak.counts["usage checks (TERM)"] == 1 and soak.counts["usage checks (KILL)"] == 1, soak.report()
    assert soak.saved_usage.get("public", 0) > 0, soak.saved_usage


def test_soak_owner_jobs_ran_within_the_grace(soak):
    # Every cycle's owner was timed (an owner whose victim got no signal is not, and is the
    # scenario's problem): otherwise this would pass with nothing checked.
    assert len(soak.owners) == len(SHORT_PLAN), soak.report()
    assert all(t_signal is not None for _, _, t_signal, _ in soak.owners), soak.owners
    no_problems(soak, "owners")


def test_reconfigure_with_a_changed_plugin_list_under_load_completes(soak_cluster, soak):
    # After the soak (which it must not disturb): the same cluster, all daemons up.
    found, stats = reconfigure_stress(soak_cluster, RECONFIGURE_CYCLES, deadline=20, say=print)
    print(stats)
    if found:
        pytest.fail("\n".join(found), pytrace=False)
    assert stats["cycles"] == RECONFIGURE_CYCLES, stats
    assert stats["short_jobs"] > 0 and stats["owner_jobs"] > 0, stats

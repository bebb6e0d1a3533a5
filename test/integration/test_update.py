"""scontrol update cannot take a job around the policy's rules (job_modify of
job_submit/preempt): a preemptible job never sits in an owner's partition."""

from cluster import job_info, log_mark, wait_log_after


def refused(cluster, jobid, setting, user):
    r = cluster.run(["scontrol", "update", f"jobid={jobid}", setting], user=user, check=False)
    assert r.returncode != 0, f"scontrol update {setting} was accepted: {r.stdout}{r.stderr}"
    return r


def test_an_owner_job_cannot_be_made_preemptible_in_its_owner_partition(cluster):
    jobid = cluster.sbatch(["-H", "-A", "chem", "--qos=normal", "-p", "chem"], "true\n",
                           user="carol")
    try:
        mark = log_mark(cluster)
        r = refused(cluster, jobid, "qos=standby", "carol")
        assert "Invalid partition" in r.stderr, r.stderr
        assert job_info(cluster, jobid)["QOS"] == "normal"
        wait_log_after(cluster, mark, rf"job_submit/preempt: refused an update of JobId={jobid} "
                       r"by uid \d+: qos standby jobs are preemptible and cannot run in "
                       r"partition chem")
    finally:
        cluster.run(["scancel", str(jobid)], check=False)


def test_a_standby_job_cannot_be_moved_into_an_owner_partition(cluster):
    # carol's account owns chem, so Slurm's own AllowAccounts check lets the move through: only
    # the policy refuses it.
    jobid = cluster.sbatch(["-H", "-A", "chem", "--qos=standby", "--requeue"], "true\n", user="carol")
    try:
        assert job_info(cluster, jobid)["Partition"] == "public,standby"
        mark = log_mark(cluster)
        refused(cluster, jobid, "partition=chem", "carol")
        assert job_info(cluster, jobid)["Partition"] == "public,standby"
        wait_log_after(cluster, mark, rf"job_submit/preempt: refused an update of JobId={jobid} "
                       r"by uid \d+: qos standby jobs are preemptible and cannot run in "
                       r"partition chem")
        # A change the policy has nothing against still goes through.
        cluster.run(["scontrol", "update", f"jobid={jobid}", "partition=standby"], user="carol")
        assert job_info(cluster, jobid)["Partition"] == "standby"
    finally:
        cluster.run(["scancel", str(jobid)], check=False)


def test_root_may_override(cluster):
    jobid = cluster.sbatch(["-H", "-A", "chem", "--qos=normal", "-p", "chem"], "true\n",
                           user="carol")
    try:
        cluster.run(["scontrol", "update", f"jobid={jobid}", "qos=standby"])
        assert job_info(cluster, jobid)["QOS"] == "standby"
    finally:
        cluster.run(["scancel", str(jobid)], check=False)

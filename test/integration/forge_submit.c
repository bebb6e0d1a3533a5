/* A hostile client for test_hostile.py: submits a job through Slurm's API with its own
 * entries in the SPANK environment, as any user can without sbatch or srun.
 *
 *   forge_submit batch QOS PARTITION WARN_SIGNAL ENTRY...   prints "job <id>"
 *   forge_submit alloc QOS PARTITION WARN_SIGNAL ENTRY...   allocates one node, prints
 *       "job <id>" and "env <NAME=value>" for each variable slurmctld gave the allocation,
 *       then ends the job
 */
#include <signal.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 6 || (strcmp(argv[1], "batch") && strcmp(argv[1], "alloc"))) {
    fprintf(stderr, "usage: %s batch|alloc QOS PARTITION WARN_SIGNAL ENTRY...\n", argv[0]);
    return 2;
  }
  slurm_init(NULL);
  job_desc_msg_t d;
  slurm_init_job_desc_msg(&d);
  d.name = "forged";
  d.qos = argv[2];
  d.partition = argv[3];
  d.warn_signal = (uint16_t)atoi(argv[4]);
  if (d.warn_signal) d.warn_time = 1;
  d.user_id = getuid();
  d.group_id = getgid();
  d.min_nodes = 1;
  d.time_limit = 5;
  d.spank_job_env = &argv[5];
  d.spank_job_env_size = (uint32_t)(argc - 5);
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd)) return 2;
  d.work_dir = cwd;
  if (!strcmp(argv[1], "batch")) {
    char *env[] = {"PATH=/usr/bin:/bin", NULL};
    d.environment = env;
    d.env_size = 1;
    d.script = "#!/bin/bash\nsleep 300\n";
    d.std_out = "/dev/null";
    submit_response_msg_t *resp = NULL;
    if (slurm_submit_batch_job(&d, &resp) != SLURM_SUCCESS) {
      fprintf(stderr, "submit: %s\n", slurm_strerror(slurm_get_errno()));
      return 1;
    }
    printf("job %u\n", resp->job_id);
    return 0;
  }
  resource_allocation_response_msg_t *resp = slurm_allocate_resources_blocking(&d, 60, NULL);
  if (!resp) {
    fprintf(stderr, "allocate: %s\n", slurm_strerror(slurm_get_errno()));
    return 1;
  }
  printf("job %u\n", resp->job_id);
  for (uint32_t i = 0; i < resp->env_size && resp->environment; ++i) {
    printf("env %s\n", resp->environment[i]);
  }
  fflush(stdout);
  slurm_complete_job(resp->job_id, 0);
  return 0;
}

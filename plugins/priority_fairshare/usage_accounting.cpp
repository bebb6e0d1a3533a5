#include "usage_accounting.hpp"

extern "C" {
#include "src/common/assoc_mgr.h"
}

// Defined by slurmctld; absent in sshare/sprio, where no usage pass or job_end runs.
extern "C" int slurmctld_tres_cnt __attribute__((weak));

namespace sp {

RunSecsJob run_secs_job(const job_record_t& job) {
  RunSecsJob r;
  r.start = job.start_time;
  r.time_limit_s = static_cast<int64_t>(job.time_limit) * 60;
  if (job.qos_ptr && job.qos_ptr->usage_factor >= 0) r.usage_factor = job.qos_ptr->usage_factor;
  return r;
}

void release_tres_run_secs(const job_record_t& job, uint64_t secs) {
  if (secs == 0 || &slurmctld_tres_cnt == nullptr || slurmctld_tres_cnt <= 0 ||
      job.tres_alloc_cnt == nullptr ||
      (slurm_conf.accounting_storage_enforce & ACCOUNTING_ENFORCE_LIMITS) == 0) {
    return;
  }
  const int n = slurmctld_tres_cnt;
  auto release = [&](uint64_t* used) {
    if (used == nullptr) return;
    for (int i = 0; i < n; ++i) {
      // Slurm reserves no energy (it is known only afterwards) and nothing for NO_CONSUME.
      if (i == TRES_ARRAY_ENERGY || job.tres_alloc_cnt[i] == NO_CONSUME_VAL64) continue;
      const uint64_t give = job.tres_alloc_cnt[i] * secs;
      used[i] = give > used[i] ? 0 : used[i] - give;
    }
  };
  const slurmdb_qos_rec_t* qos = job.qos_ptr;
  if (qos && qos->usage) release(qos->usage->grp_used_tres_run_secs);
  const slurmdb_qos_rec_t* part_qos = job.part_ptr ? job.part_ptr->qos_ptr : nullptr;
  if (part_qos && part_qos != qos && part_qos->usage) {
    release(part_qos->usage->grp_used_tres_run_secs);
  }
  for (auto* a = job.assoc_ptr; a && a->usage; a = a->usage->parent_assoc_ptr) {
    release(a->usage->grp_used_tres_run_secs);
  }
}

}  // namespace sp

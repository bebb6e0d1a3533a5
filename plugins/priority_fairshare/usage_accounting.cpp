#include "usage_accounting.hpp"

#include <vector>

extern "C" {
#include "src/common/assoc_mgr.h"
}

// Defined by slurmctld; absent in sshare/sprio, where job_end is never called.
extern "C" int slurmctld_tres_cnt __attribute__((weak));

namespace sp {

void release_unused_tres_run_secs(job_record_t& job) {
  if (&slurmctld_tres_cnt == nullptr || slurmctld_tres_cnt <= 0 || job.tres_alloc_cnt == nullptr) {
    return;
  }
  const int n = slurmctld_tres_cnt;
  const uint64_t limit_secs = static_cast<uint64_t>(job.time_limit) * 60;
  std::vector<uint64_t> unused(static_cast<size_t>(n), 0);
  for (int i = 0; i < n; ++i) {
    if (job.tres_alloc_cnt[i] != NO_CONSUME_VAL64) unused[i] = job.tres_alloc_cnt[i] * limit_secs;
  }
  auto release = [&](uint64_t* used) {
    for (int i = 0; i < n; ++i) used[i] = unused[i] > used[i] ? 0 : used[i] - unused[i];
  };
  assoc_mgr_lock_t locks = {};
  locks.assoc = WRITE_LOCK;
  locks.qos = WRITE_LOCK;
  assoc_mgr_lock(&locks);
  if (job.qos_ptr && job.qos_ptr->usage) release(job.qos_ptr->usage->grp_used_tres_run_secs);
  for (auto* a = job.assoc_ptr; a && a->usage; a = a->usage->parent_assoc_ptr) {
    release(a->usage->grp_used_tres_run_secs);
  }
  assoc_mgr_unlock(&locks);
}

}  // namespace sp

#include "job_quota.hpp"

namespace sp {

uint64_t job_gpus(const job_record_t& job, int gpu_pos) {
  if (gpu_pos < 0) return 0;
  const job_record_t* job_ref = &job;
  const uint64_t* counts = IS_JOB_PENDING(job_ref) ? job.tres_req_cnt : job.tres_alloc_cnt;
  if (counts == nullptr) return 0;
  const uint64_t n = counts[gpu_pos];
  return n == NO_VAL64 || n == INFINITE64 || n == NO_CONSUME_VAL64 ? 0 : n;
}

int job_project(const Policy& policy, const job_record_t& job) {
  if (job.account == nullptr || policy.quotas.empty()) return -1;
  return policy.quota_index(job.account);
}

bool job_counted(const Policy& policy, int project, const job_record_t& job) {
  if (project < 0) return false;
  const Quota& q = policy.quotas[static_cast<std::size_t>(project)];
  if (q.partitions.empty()) return true;
  return job.part_ptr != nullptr && job.part_ptr->name != nullptr &&
         q.counts_partition(job.part_ptr->name);
}

int job_class(const Policy& policy, const job_record_t& job) {
  if (job.qos_ptr == nullptr || job.qos_ptr->name == nullptr || policy.classes.empty()) return -1;
  return policy.class_index(job.qos_ptr->name);
}

}  // namespace sp

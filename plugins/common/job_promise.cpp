#include "job_promise.hpp"

#include <string_view>

extern "C" {
#include "config.h"
#include <slurm/slurm.h>

#include "src/slurmctld/slurmctld.h"
}

namespace sp {

bool may_hold_promise(const job_record_t& job) { return job.warn_signal == kTriggerPreempt; }

std::optional<JobCheckpoint> promise_of(const job_record_t& job) {
  if (!may_hold_promise(job) || job.spank_job_env == nullptr) return std::nullopt;
  for (uint32_t i = 0; i < job.spank_job_env_size && job.spank_job_env[i]; ++i) {
    const std::string_view e(job.spank_job_env[i]);
    if (e.size() > kControlEnvName.size() && e.starts_with(kControlEnvName) &&
        e[kControlEnvName.size()] == '=') {
      return decode_checkpoint(e.substr(kControlEnvName.size() + 1));
    }
  }
  return std::nullopt;
}

}  // namespace sp

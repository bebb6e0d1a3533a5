// Policy loading for the plugins that run in slurmctld (job_submit/preempt, priority/
// fairshare): preempt.yaml beside slurm.conf, the way Slurm finds cgroup.conf or gres.conf.
#pragma once

#include <memory>
#include <string>

#include "log.hpp"
#include "policy.hpp"

namespace sp {

// Path of preempt.yaml beside the slurm.conf this process read.
std::string ctld_policy_path();

// Loads the policy; on error logs "cannot load policy: file:line:column: ..." through `log`
// and returns null. `context` says what the caller will do ("refusing to start", "keeping
// the last good policy").
std::shared_ptr<const Policy> load_ctld_policy(LogSink& log, const char* context);

}  // namespace sp

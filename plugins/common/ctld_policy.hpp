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

// What in the policy slurmctld does not know: an owner group's account (slurmdbd), a
// partition or node (slurm.conf), or a QOS. Empty when all are known. Call when slurmctld has
// loaded its configuration and associations (priority plugins' init runs then).
std::string slurm_config_problem(const Policy& policy);

}  // namespace sp

// Policy loading for the plugins that run in slurmctld (job_submit/preempt, priority/
// fairshare): preempt.yaml beside slurm.conf, the way Slurm finds cgroup.conf or gres.conf.
#pragma once

#include <ctime>
#include <memory>
#include <mutex>
#include <string>

#include "log.hpp"
#include "policy.hpp"

namespace sp {

// Path of preempt.yaml beside the slurm.conf this process read.
std::string ctld_policy_path();

// Loads the policy and keeps a copy for the other plugins (bus::remember_policy); on error
// logs "cannot load policy: file:line:column: ..." through `log` and returns null. `context`
// says what the caller will do ("refusing to start", "keeping the last good policy").
std::shared_ptr<const Policy> load_ctld_policy(LogSink& log, const char* context);

// The first policy of a plugin that follows slurm.conf with a thread of its own (job_submit/
// preempt's watcher, preempt/quota's reload thread). Slurm loads such a plugin at start and
// again at a reconfigure that changes JobSubmitPlugins or PreemptType, inside its write locks,
// where no file should be parsed. The policy the process holds (bus::last_policy: one of our
// plugins read it, at start the one Slurm loaded before) is taken, with `stamp` 0: the
// plugin's thread reads the file again at once, as after a reconfigure, and keeps the held
// policy if the file is bad. With none held, the file is read now (`stamp`:
// slurm_conf.last_update); null after logging why ("refusing to start").
struct StartingPolicy {
  std::shared_ptr<const Policy> policy;
  time_t stamp = 0;  // the slurm.conf stamp the plugin records as read
};
StartingPolicy starting_policy(LogSink& log);

// The policy in force, shared by a plugin's entry points and its background thread. Replaced
// whole (load, then swap the pointer); the mutex guards only that pointer, never a parse, so
// an entry point that holds Slurm's locks waits for nothing.
class PolicyStore {
 public:
  std::shared_ptr<const Policy> get() const {
    const std::lock_guard<std::mutex> lk(m_);
    return p_;
  }
  void set(std::shared_ptr<const Policy> p) {
    const std::lock_guard<std::mutex> lk(m_);
    p_ = std::move(p);
  }

 private:
  mutable std::mutex m_;
  std::shared_ptr<const Policy> p_;
};

// After `scontrol reconfigure` (slurm_conf.last_update `stamp`): reads preempt.yaml again into
// `store`, from a plugin's own thread, never under Slurm's locks. Logs one line that tests and
// admins can wait for: "policy in force after reconfigure (STAMP): FILE, reloaded|unchanged",
// or the error and "keeping the last good policy". Returns whether the policy changed. `when`
// names the occasion in that line ("after reconfigure"; "at start" for a plugin that started
// from the policy slurmctld held and reads the file again on its thread).
bool reload_policy(LogSink& log, PolicyStore& store, time_t stamp,
                   const char* when = "after reconfigure");

// The gres/gpu TRES position in assoc_mgr's TRES arrays, -1 when the cluster does not track
// GPUs (AccountingStorageTRES lacks gres/gpu). Call with assoc_mgr's TRES read lock held.
int gpu_tres_position_locked();

// What in the policy slurmctld does not know: an owner group's account (slurmdbd), a
// partition or node (slurm.conf), or a QOS. Empty when all are known. Call when slurmctld has
// loaded its configuration and associations (priority plugins' init runs then).
std::string slurm_config_problem(const Policy& policy);

}  // namespace sp

// The preemption watcher: a thread in slurmctld, ticking every second, that does promptly
// what stock 22.05 does late.
//  - A preempted job whose grace has run out is requeued or cancelled now; slurmctld itself
//    notices only in its 30 s periodic pass, which keeps owners waiting up to 30 s too long.
//  - A requeued job that Slurm holds for cred_expire + 1 s (121 s by default) becomes eligible
//    once its previous run has finished on its nodes and 2 s have passed since the requeue:
//    the new launch credential is then newer than the revoke and the nodes are clean, which is
//    all the hold protects. A --begin the user asked for is not touched.
// Then it asks for a scheduling pass, so the freed nodes are used at once.
#pragma once

#include <atomic>
#include <memory>

#include "clock.hpp"
#include "log.hpp"
#include "periodic_thread.hpp"
#include "policy.hpp"

namespace sp {

class PreemptionWatcher {
 public:
  // `policy` is checked once against slurmctld's configuration at the first tick (when it is
  // loaded), so a site without priority/fairshare (which refuses such a policy at start)
  // still hears about names Slurm does not know.
  PreemptionWatcher(LogSink& log, const Clock& clock, std::shared_ptr<const Policy> policy);

 private:
  void tick();
  // Until the next tick: 1 s, or less when a grace ends sooner (it ends on a whole second).
  std::chrono::milliseconds until_next_tick() const;

  LogSink& log_;
  const Clock& clock_;
  std::shared_ptr<const Policy> policy_to_check_;  // released after the first tick
  std::atomic<int64_t> next_grace_end_{0};         // earliest end of a running grace; 0: none
  PeriodicThread thread_;                          // last: stopped and joined first
};

}  // namespace sp

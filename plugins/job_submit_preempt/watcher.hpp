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

#include "clock.hpp"
#include "log.hpp"
#include "periodic_thread.hpp"

namespace sp {

class PreemptionWatcher {
 public:
  PreemptionWatcher(LogSink& log, const Clock& clock);

 private:
  void tick();

  LogSink& log_;
  const Clock& clock_;
  PeriodicThread thread_;  // last: stopped and joined first
};

}  // namespace sp

// What the slurmctld plugins share inside slurmctld, in one place: a small shared library
// (libslurm_preempt_ctld.so, installed beside the plugins, found through their RUNPATH
// $ORIGIN) that job_submit/preempt, preempt/quota and priority/fairshare link. Slurm loads each
// plugin on its own (RTLD_LOCAL), so state they must share cannot live in any one of them:
// the process holds one copy of this library whichever plugins are loaded.
//  - events(): preempt/quota tells the watcher of job_submit/preempt that a grace starts
//    (lib/watch_events.hpp), so the watcher follows the jobs that need it;
//  - preempted_runs(): preempt/quota notes each victim's grace end, priority/fairshare the
//    run's end, and the watcher takes it: a run that ended at its grace end was killed there,
//    by whoever (its usage is refunded; the watcher notes the kill);
//  - lock_stats(): how long our code holds slurmctld's locks (CtldLock records it);
//  - reconfigures(): priority/fairshare and job_submit/preempt tell the watcher of each
//    reconfigure, so that an idle watcher need not look at slurm.conf every second;
//  - last_policy(): the last policy any of them loaded from preempt.yaml, so that a plugin
//    Slurm loads at a reconfigure (PreemptType changed), inside its write locks, starts from
//    it and reads the file again on its own thread, as a reconfigure does.
// Only plain objects and functions cross it; the code that works on them is in lib/.
#pragma once

#include <memory>

#include "policy.hpp"
#include "watch_events.hpp"

#define SP_BUS_API __attribute__((visibility("default")))

namespace sp::bus {

SP_BUS_API WatchEventQueue& events();
SP_BUS_API PreemptedRuns& preempted_runs();
SP_BUS_API LockStats& lock_stats();
SP_BUS_API ReconfigureNotices& reconfigures();

// A copy made and freed by this library (a plugin's own code may be unmapped when Slurm
// unloads it); nullptr until a policy has loaded in this process.
SP_BUS_API void remember_policy(const Policy& p);
SP_BUS_API std::shared_ptr<const Policy> last_policy();

// The watcher registers how to wake it; publishers wake it. The waker is called with a mutex of
// this library held, which unregistering also takes: once clear_watcher_waker(arg) has
// returned, that waker is never called again. A reload of job_submit/preempt creates its new
// watcher before the old one goes: clearing removes only the waker registered with `arg`.
SP_BUS_API void set_watcher_waker(void (*fn)(void*), void* arg);
SP_BUS_API void clear_watcher_waker(void* arg);
SP_BUS_API void wake_watcher();

// Queues the event and wakes the watcher at once. Never blocks for long: callers hold
// slurmctld's locks.
inline void publish(const WatchEvent& e) {
  events().push(e);
  wake_watcher();
}

}  // namespace sp::bus

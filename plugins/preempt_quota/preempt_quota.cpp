// preempt/quota: the C ABI of the preempt plugin (PreemptType=preempt/quota), and nothing else.
// Every rule of preempt/qos holds (QOS Preempt lists, PreemptMode, GraceTime); on top of them
// the policy's project quotas and priority classes (lib/quota.hpp) decide which running job
// gives way to which pending one. Slurm loads this plugin once, at start; a reconfigure only
// moves slurm_conf.last_update, so a thread of ours reads preempt.yaml again (never Slurm's
// locks held) and the entry points swap to the new policy.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "clock.hpp"
#include "ctld_bus.hpp"
#include "ctld_policy.hpp"
#include "fault.hpp"
#include "guard.hpp"
#include "periodic_thread.hpp"
#include "plugin_memory.hpp"
#include "quota.hpp"
#include "quota_adapter.hpp"
#include "slurm_locks.hpp"
#include "slurm_log_sink.hpp"
#include "version.hpp"

extern "C" {
#include "config.h"
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "src/common/assoc_mgr.h"
#include "src/slurmctld/job_scheduler.h"
#include "src/slurmctld/preempt.h"
#include "src/slurmctld/slurmctld.h"
}

#define SP_EXPORT __attribute__((visibility("default")))

extern "C" {
SP_EXPORT extern const char plugin_name[] = "slurm-preempt preempt plugin (quotas and classes)";
SP_EXPORT extern const char plugin_type[] = "preempt/quota";
SP_EXPORT extern const uint32_t plugin_version = SLURM_VERSION_NUMBER;
}

namespace {

constexpr int kGpuPosUnknown = -2;

struct Shared {
  std::shared_ptr<sp::SlurmLogSink> log = std::make_shared<sp::SlurmLogSink>(plugin_type);
  sp::PolicyStore policy;
  std::atomic<time_t> conf_stamp{0};
  std::atomic<bool> recheck{true};  // read again once the stamp's second is over
  std::atomic<int> gpu_pos{kGpuPosUnknown};
  // The queue sort's view of the policy in force (Slurm asks its check for pairs of pending
  // jobs, 2 N log N times per scheduling pass): read with no lock (lib/quota.hpp QueueOrder).
  sp::QueueOrder queue;
  sp::QuotaSweeps sweeps;
};

struct Plugin {
  std::shared_ptr<Shared> shared;
  std::unique_ptr<sp::PeriodicThread> reloader;  // stopped, never joined
  std::unique_ptr<sp::PeriodicThread> passer;    // asks the due scheduling passes
};

Plugin* g_plugin = nullptr;

// The gres/gpu TRES position, looked up once (TRES positions do not move while slurmctld
// runs); -1 when the cluster does not track GPUs (AccountingStorageTRES lacks gres/gpu).
int gpu_pos(Shared& s) {
  int pos = s.gpu_pos.load();
  if (pos != kGpuPosUnknown) return pos;
  assoc_mgr_lock_t tres_read = {};
  tres_read.tres = READ_LOCK;
  const sp::AssocLock lock(tres_read);
  pos = sp::gpu_tres_position_locked();
  s.gpu_pos.store(pos);
  return pos;
}

// Reads preempt.yaml again after `scontrol reconfigure`, outside every Slurm lock.
// slurm_conf.last_update has one-second resolution: a reconfigure in the same second as the
// last read moves nothing, so a read made within the stamp's own second is made once more
// when that second is over.
void reload_task(const std::shared_ptr<Shared>& s, const std::atomic<bool>& stopping) {
  time_t stamp = 0;
  {
    slurmctld_lock_t config_read = {READ_LOCK, NO_LOCK, NO_LOCK, NO_LOCK, NO_LOCK};
    const sp::CtldLock lock(config_read);
    if (stopping.load()) return;
    stamp = slurm_conf.last_update;
  }
  const time_t now = time(nullptr);
  if (stamp == s->conf_stamp.load() && !(s->recheck.load() && now > stamp)) return;
  s->recheck.store(now <= stamp);
  if (sp::reload_policy(*s->log, s->policy, stamp)) {
    s->queue.set(s->policy.get());
    // The replaced view is freed once no queue sort can be reading it: Slurm sorts its queue
    // (sort_job_queue) only under the job lock.
    const sp::CtldLock job_write({NO_LOCK, WRITE_LOCK, NO_LOCK, NO_LOCK, NO_LOCK});
    if (!stopping.load()) (void)s->queue.retire_unused();
  }
  s->conf_stamp.store(stamp);
}

std::string pass_line(const sp::PassRequests::Waiting& w, const char* what) {
  return "JobId=" + std::to_string(w.preemptor) + " may preempt JobId=" + std::to_string(w.victim) +
         " (" + sp::reason_name(w.reason) + "): " + what;
}

constexpr const char* kNoneTested = "asked for a scheduling pass (none tested it within 500 ms)";
static_assert(sp::PassRequests::kDelayMs == 500, "the log lines name the delay");

// First sightings whose delay ran out with no test by Slurm's scheduling (lib/quota.hpp
// PassRequests): one schedule() for all of them. No Slurm lock: schedule() only wakes Slurm's
// scheduler thread.
void pass_task(const std::shared_ptr<Shared>& s, const std::atomic<bool>& stopping) {
  if (stopping.load()) return;
  const auto due = s->sweeps.take_due_passes(sp::steady_ms());
  if (due.empty()) return;
  schedule(false);
  for (const auto& w : due) s->log->log_info(pass_line(w, kNoneTested));
}

std::chrono::milliseconds pass_wait(Shared& s) {
  const int64_t ms = s.sweeps.next_pass_due_ms(sp::steady_ms());
  return std::chrono::milliseconds(ms < 0 ? 60000 : ms);
}

}  // namespace

// At slurmctld's start (before the other plugins) a bad preempt.yaml stops the daemon with its
// file:line:column. Loaded at a reconfigure that changes PreemptType, Slurm calls this inside
// its write locks and stops the daemon if it fails: then it starts from the last policy the
// process loaded (job_submit/preempt's, or its own before an unload) and reads the file on its
// reload thread, outside the locks, keeping that policy if the file is bad
// (ctld_policy.hpp starting_policy).
extern "C" SP_EXPORT int init(void) {
  sp::SlurmLogSink boot_log{plugin_type};
  return sp::guard(&boot_log, "init", SLURM_ERROR, [&] {
    auto plugin = std::make_unique<Plugin>();
    plugin->shared = std::make_shared<Shared>();
    sp::StartingPolicy start = sp::starting_policy(boot_log);
    if (!start.policy) return SLURM_ERROR;
    std::shared_ptr<const sp::Policy> policy = std::move(start.policy);
    const std::string loaded = std::string("loaded slurm-preempt ") + sp::kVersion + ", policy " +
                               policy->source + " (" + std::to_string(policy->classes.size()) +
                               " classes, " + std::to_string(policy->quotas.size()) +
                               " project quotas)";
    plugin->shared->queue.set(policy);
    plugin->shared->policy.set(std::move(policy));
    // Stamp 0 (a policy held) makes the reload thread's first run read preempt.yaml again.
    plugin->shared->conf_stamp.store(start.stamp);
    if (const char* why = nullptr; !sp::pin_plugin_in_memory(&why)) {
      boot_log.log_error(std::string("cannot keep the plugin in memory (") + why +
                         "): preempt.yaml is not reread at reconfigure");
    } else {
      std::shared_ptr<Shared> shared = plugin->shared;
      plugin->reloader = std::make_unique<sp::PeriodicThread>(
          shared->log, "sp_quota_reload", [] { return std::chrono::milliseconds(1000); },
          [shared](const std::atomic<bool>& stopping) { reload_task(shared, stopping); });
      plugin->passer = std::make_unique<sp::PeriodicThread>(
          shared->log, "sp_quota_pass", [shared] { return pass_wait(*shared); },
          [shared](const std::atomic<bool>& stopping) { pass_task(shared, stopping); });
      shared->sweeps.defer_passes(true);
    }
    plugin->shared->log->log_info(loaded);
    delete g_plugin;
    g_plugin = plugin.release();
    return SLURM_SUCCESS;
  });
}

extern "C" SP_EXPORT void fini(void) {
  delete g_plugin;
  g_plugin = nullptr;
}

// Orders two pending jobs in the queue: a preemptor before what it may preempt.
extern "C" SP_EXPORT bool preempt_p_job_preempt_check(job_queue_rec_t* preemptor,
                                                      job_queue_rec_t* preemptee) {
  if (g_plugin == nullptr || preemptor == nullptr || preemptee == nullptr ||
      preemptor->job_ptr == nullptr || preemptee->job_ptr == nullptr) {
    return false;
  }
  Shared& s = *g_plugin->shared;
  return sp::guard(s.log.get(), "preempt_p_job_preempt_check", false, [&] {
    return sp::queue_preempts(s.queue, *preemptor->job_ptr, *preemptee->job_ptr);
  });
}

namespace {

// preempt_p_preemptable for a running job the QOS rules alone do not refuse: the sweeps
// (quotas, classes, claims) decide. Kept out of line, so that the entry below stays as lean as
// preempt/qos' own (no frame, no saved registers for the common refusal).
__attribute__((noinline)) bool running_preemptable(job_record_t* preemptee,
                                                   job_record_t* preemptor) {
  Shared& s = *g_plugin->shared;
  return sp::guard(s.log.get(), "preempt_p_preemptable", false, [&] {
    sp::fault_point("preempt_p_preemptable");
    sp::QuotaSweeps::PassNote note;
    const sp::PreemptReason reason = s.sweeps.preemptable(s.policy.get(), *preemptee, *preemptor,
                                                          gpu_pos(s), last_job_update, &note);
    if (reason == sp::PreemptReason::None) return false;
    // A submission's test sees its victims first; the pass that preempts them would otherwise
    // come batch_sched_delay after the previous one (lib/quota.hpp PassRequests). The wake
    // comes after the sweeps' mutex is released (the pass thread takes it while it waits).
    if (note.deferred && g_plugin->passer) g_plugin->passer->wake();
    if (note.ask_now) {
      schedule(false);  // only queues the pass: it runs once this lock holder is done
      s.log->log_info(pass_line({preemptor->job_id, preemptee->job_id, reason, 0, 0},
                                "asked for a scheduling pass now"));
    }
    if (note.settled) {
      s.log->log_info(
          pass_line(note.waiting, "tested by Slurm's scheduling within 500 ms: no pass asked"));
    }
    return true;
  });
}

// preempt_p_preemptable once the QOS rules leave `preemptee` to the preemptor QOS' Preempt
// list: that list, then the job's state, then the sweeps. Out of line, as running_preemptable.
__attribute__((noinline)) bool listed_preemptable(job_record_t* preemptee,
                                                  job_record_t* preemptor) {
  if (!sp::qos_list_allows(*preemptee, *preemptor)) return false;
  if (!IS_JOB_RUNNING(preemptee)) return false;
  return running_preemptable(preemptee, preemptor);
}

}  // namespace

// Called for every job of the job list, with the job write lock held: preemptee first. The
// walk is bound by memory and by how many instructions each job takes, which decides how far
// ahead the processor reaches the next job's loads: without quotas the QOS rules alone decide,
// from the fields preempt/qos reads, inline; the job's state (a cache line more of each record)
// is read only for what they allow. Every path ends in a return or a tail call, so that the
// common refusal saves no register: 22 instructions (preempt/qos' own: 12).
extern "C" SP_EXPORT bool preempt_p_preemptable(job_record_t* preemptee, job_record_t* preemptor) {
  if (g_plugin == nullptr || preemptee == nullptr || preemptor == nullptr) return false;
  switch (sp::first_answer(g_plugin->shared->queue, *preemptee, *preemptor)) {
    case sp::FirstAnswer::Refuse: return false;
    case sp::FirstAnswer::AskList: return listed_preemptable(preemptee, preemptor);
    case sp::FirstAnswer::Rest: break;
  }
  // Not running: never a victim (QuotaSweeps::preemptable's first answer), without the
  // policy store's lock.
  if (!IS_JOB_RUNNING(preemptee)) return false;
  return running_preemptable(preemptee, preemptor);
}

extern "C" SP_EXPORT int preempt_p_get_data(job_record_t* job_ptr,
                                            slurm_preempt_data_type_t data_type, void* data) {
  if (data == nullptr) return SLURM_ERROR;
  switch (data_type) {
    case PREEMPT_DATA_ENABLED:
      *static_cast<bool*>(data) = slurm_conf.preempt_mode != PREEMPT_MODE_OFF;
      return SLURM_SUCCESS;
    case PREEMPT_DATA_MODE:
      *static_cast<uint16_t*>(data) = job_ptr == nullptr ? 0 : sp::qos_preempt_mode(*job_ptr);
      return SLURM_SUCCESS;
    case PREEMPT_DATA_GRACE_TIME: {
      // Slurm asks this only as a victim's grace starts (preempt.c _job_check_grace_internal),
      // with the job write lock held: the watcher is told now, with the preemptor of this
      // sweep, and the grace is the one the job was promised when shorter than its QOS'.
      uint32_t grace = job_ptr == nullptr ? 0 : sp::qos_grace_time(*job_ptr);
      if (g_plugin != nullptr && job_ptr != nullptr) {
        Shared& s = *g_plugin->shared;
        grace = sp::guard(s.log.get(), "preempt_p_get_data", grace, [&] {
          if (auto settled = s.sweeps.grace_started()) {
            settled->victim = job_ptr->job_id;  // the victim taken, maybe not the first seen
            s.log->log_info(
                pass_line(*settled, "its grace started in Slurm's scheduling: no pass asked"));
          }
          return sp::grace_start(*job_ptr, grace, s.sweeps.preemptor(), time(nullptr));
        });
      }
      *static_cast<uint32_t*>(data) = grace;
      return SLURM_SUCCESS;
    }
    case PREEMPT_DATA_PRIO: {
      uint32_t rank = 1;
      if (g_plugin != nullptr && job_ptr != nullptr) {
        Shared& s = *g_plugin->shared;
        rank = sp::guard(s.log.get(), "preempt_p_get_data", rank,
                         [&] { return s.sweeps.rank(*job_ptr, time(nullptr)); });
      }
      *static_cast<uint32_t*>(data) = rank;
      return SLURM_SUCCESS;
    }
  }
  return SLURM_ERROR;
}

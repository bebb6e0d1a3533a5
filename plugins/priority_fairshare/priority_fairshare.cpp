// priority/fairshare: the C ABI of the plugin (PriorityType=priority/fairshare): the six
// priority_p_* entry points plus init/fini. Arithmetic lives in lib/priority.cpp; Slurm's
// structures are read in priority_adapter.cpp; the periodic recalculation in recalc.cpp; fair-
// share usage (decay, accrual, sshare's fields) in usage.cpp over lib/fairshare.cpp.
#include <algorithm>
#include <memory>
#include <string>

#include "ctld_policy.hpp"
#include "fault.hpp"
#include "guard.hpp"
#include "job_state.hpp"
#include "plugin_memory.hpp"
#include "ctld_bus.hpp"
#include "slurm_locks.hpp"
#include "priority.hpp"
#include "priority_adapter.hpp"
#include "recalc.hpp"
#include "slurm_log_sink.hpp"
#include "usage.hpp"
#include "usage_accounting.hpp"
#include "version.hpp"

extern "C" {
#include "src/common/assoc_mgr.h"
#include "src/common/list.h"
#include "src/common/run_in_daemon.h"
#include "src/common/slurm_priority.h"
#include "src/slurmctld/locks.h"
}

#define SP_EXPORT __attribute__((visibility("default")))

extern "C" {
SP_EXPORT extern const char plugin_name[] = "slurm-preempt priority plugin";
SP_EXPORT extern const char plugin_type[] = "priority/fairshare";
SP_EXPORT extern const uint32_t plugin_version = SLURM_VERSION_NUMBER;
}

namespace {

// While this plugin is loaded in slurmctld, priority_p_reconfig tells the watcher of
// job_submit/preempt of every reconfigure (ctld_bus.hpp reconfigures()).
struct ReconfigureTeller {
  ReconfigureTeller() noexcept { sp::bus::reconfigures().teller_loaded(); }
  ~ReconfigureTeller() { sp::bus::reconfigures().teller_unloaded(); }
  ReconfigureTeller(const ReconfigureTeller&) = delete;
  ReconfigureTeller& operator=(const ReconfigureTeller&) = delete;
};

struct Plugin {
  std::shared_ptr<sp::RecalcContext> ctx;     // shared with the recalculation thread
  std::unique_ptr<sp::Recalculator> recalc;   // slurmctld only; stopped, never joined
  std::unique_ptr<ReconfigureTeller> teller;  // slurmctld only
};

Plugin* g_plugin = nullptr;  // created in init(), destroyed in fini()

}  // namespace

extern "C" SP_EXPORT int init(void) {
  sp::SlurmLogSink boot_log{plugin_type};
  return sp::guard(&boot_log, "init", SLURM_ERROR, [&] {
    auto plugin = std::make_unique<Plugin>();
    plugin->ctx = std::make_shared<sp::RecalcContext>();
    sp::RecalcContext& ctx = *plugin->ctx;
    ctx.log = std::make_shared<sp::SlurmLogSink>(plugin_type);
    // sprio and sshare load this plugin too: only the controller needs the policy and the
    // recalculation thread, and only there is the load line worth an info message.
    if (running_in_slurmctld()) {
      // Slurm may load this plugin on first use from inside read_slurm_conf, holding its write
      // locks on this very thread (see below), where preempt.yaml is not parsed: it starts from
      // the policy slurmctld holds, which job_submit/preempt or preempt/quota read at start
      // outside the locks, and its thread reads the file again at its first pass, outside
      // every lock (ctld_policy.hpp starting_policy). Only with neither plugin is it read
      // here. (slurm.conf is read again here for its PriorityWeight* keys: read_slurm_weights.)
      const sp::StartingPolicy start = sp::starting_policy(boot_log);
      const std::shared_ptr<const sp::Policy>& policy = start.policy;
      if (!policy) return SLURM_ERROR;
      const bool held = start.stamp == 0;
      // slurm.conf and the associations are loaded by now (they are not yet when job_submit
      // plugins start): check that the policy names only things Slurm knows.
      if (const std::string problem = sp::slurm_config_problem(*policy); !problem.empty()) {
        boot_log.log_error("cannot load policy: " + problem + "; refusing to start");
        return SLURM_ERROR;
      }
      // Slurm may load this plugin on first use from inside read_slurm_conf, holding its
      // write locks on this very thread: a running job whose partition or nodes slurm.conf
      // lost is ended there at slurmctld's start (priority_g_job_end). No slurmctld lock may
      // be taken here (test_restart.py).
      sp::set_policy(ctx, policy, sp::read_slurm_weights(ctx, sp::ConfLock::None));
      if (slurm_conf.priority_flags & PRIORITY_FLAGS_FAIR_TREE) {
        ctx.log->log_info(
            "PriorityFlags has FAIR_TREE (Slurm's default): priority/fairshare computes classic "
            "fair share all the same; set PriorityFlags=NO_FAIR_TREE so that sshare shows "
            "every account's factor");
      }
      ctx.usage = std::make_unique<sp::UsageTracker>(*ctx.log, ctx.clock.now());
      if (held) {
        ctx.reload_at_start = true;
        ctx.reload_requested.store(true);
      }
      ctx.log->log_info(std::string("loaded slurm-preempt ") + sp::kVersion + ", " +
                        ctx.state.describe() +
                        (held ? "; the policy as slurmctld holds it, read again on the "
                                "recalculation thread"
                              : ""));
    } else {
      ctx.log->log_debug(std::string("loaded slurm-preempt ") + sp::kVersion);
    }
    if (ctx.usage) {
      // The thread may outlive this plugin's unloading: keep its code mapped.
      const char* why = nullptr;
      if (!sp::pin_plugin_in_memory(&why)) {
        boot_log.log_error(std::string("cannot keep the plugin in memory (") + why + ")");
        return SLURM_ERROR;
      }
    }
    delete g_plugin;
    g_plugin = plugin.release();
    // The thread starts last: its first pass runs at once.
    if (g_plugin->ctx->usage) {
      g_plugin->recalc = std::make_unique<sp::Recalculator>(g_plugin->ctx);
      // Only with the thread: priority_p_reconfig tells nothing without it.
      g_plugin->teller = std::make_unique<ReconfigureTeller>();
    }
    return SLURM_SUCCESS;
  });
}

// Stops the recalculation thread without waiting for it (it may be waiting for the locks the
// caller holds); the thread keeps what it uses alive until it ends.
extern "C" SP_EXPORT int fini(void) {
  delete g_plugin;
  g_plugin = nullptr;
  return SLURM_SUCCESS;
}

// Called by slurmctld with the job write lock held, at submission, requeue and reconfigure.
extern "C" SP_EXPORT uint32_t priority_p_set(uint32_t last_prio, job_record_t* job_ptr) {
  const auto fifo = [&]() noexcept {  // before the policy is in place
    if (job_ptr->direct_set_prio && job_ptr->priority > 1) return job_ptr->priority;
    return sp::fifo_priority(last_prio, sp::nice_of(*job_ptr));
  };
  if (g_plugin == nullptr) return fifo();
  sp::RecalcContext& ctx = *g_plugin->ctx;
  return sp::guard(ctx.log.get(), "priority_p_set", 1u, [&] {
    if (!ctx.state.ready()) return fifo();
    static const std::size_t site = sp::lock_site("priority_p_set", sp::LockStats::Kind::Write);
    const sp::HoldTimer held(site);  // inside Slurm's job write lock
    const auto s = ctx.state.snapshot();
    // The first call for a new job comes before slurmctld answers an srun or salloc.
    sp::export_checkpoint_env(*job_ptr, *s.policy);
    if (job_ptr->direct_set_prio && job_ptr->priority > 1) return job_ptr->priority;
    const sp::AssocLock locks(sp::assoc_qos_read());
    sp::fault_point("priority_p_set");
    return sp::compute_priority(ctx, *job_ptr, s, ctx.clock.now(),
                                sp::over_quota_of(ctx, *job_ptr, s));
  });
}

// Called after `scontrol reconfigure` without slurmctld's locks (assoc_clear true: Slurm has
// cleared assoc_mgr's usage counters and reserved running jobs' run-seconds again), and under
// its config write lock by other RPCs (false). Parses nothing here: the recalculation thread
// reads preempt.yaml and slurm.conf's weights again before its next pass, woken now, and so
// does the watcher of job_submit/preempt, told now (it sleeps while it has nothing to follow).
extern "C" SP_EXPORT void priority_p_reconfig(bool assoc_clear) {
  if (g_plugin == nullptr || !g_plugin->recalc) return;
  sp::RecalcContext& ctx = *g_plugin->ctx;
  sp::guard(ctx.log.get(), "priority_p_reconfig", 0, [&] {
    sp::bus::reconfigures().told();
    sp::bus::wake_watcher();
    if (assoc_clear && ctx.usage) {
      // As priority/multifactor: give back what running jobs ran up to the last pass.
      assoc_mgr_lock_t write = {};
      write.assoc = WRITE_LOCK;
      write.qos = WRITE_LOCK;
      write.tres = READ_LOCK;
      const sp::CtldLock ctld({NO_LOCK, READ_LOCK, NO_LOCK, NO_LOCK, NO_LOCK});
      const sp::AssocLock assoc(write);
      sp::fault_point("priority_p_reconfig");
      ctx.usage->resync_run_secs();
    }
    ctx.reload_requested.store(true);
    g_plugin->recalc->wake();
    return 0;
  });
}

// slurmctld (assoc_mgr_get_shares, for sshare) with the assoc lock held: one association's
// normalised and effective usage and factor from its parent's current values.
extern "C" SP_EXPORT void priority_p_set_assoc_usage(slurmdb_assoc_rec_t* assoc) {
  sp::guard(g_plugin ? g_plugin->ctx->log.get() : nullptr, "priority_p_set_assoc_usage", 0, [&] {
    sp::set_assoc_usage(assoc, sp::dampening_factor());
    return 0;
  });
}

// sshare computes its FairShare column with this, in its own process.
extern "C" SP_EXPORT double priority_p_calc_fs_factor(long double usage_efctv,
                                                      long double shares_norm) {
  return sp::fairshare_factor(usage_efctv, shares_norm, sp::dampening_factor());
}

// sprio: the factors of pending jobs, as computed by the last priority_p_set or recalculation.
extern "C" SP_EXPORT List
priority_p_get_priority_factors_list(priority_factors_request_msg_t* req_msg, uid_t uid) {
  if (g_plugin == nullptr || req_msg == nullptr) return nullptr;
  return sp::guard(g_plugin->ctx->log.get(), "priority_p_get_priority_factors_list",
                   static_cast<List>(nullptr), [&] {
                     const uint32_t weight = g_plugin->ctx->state.ready()
                                                 ? g_plugin->ctx->state.snapshot().weights.partition
                                                 : 0;
                     return sp::factors_list(*req_msg, uid, weight);
                   });
}

// Called by slurmctld with the job write lock held (acct_policy_job_fini), before it drops the
// job from its association's counters: at every end of a run, a requeue's included. The
// watcher is told (ctld_bus.hpp), so a job requeued by hand leaves Slurm's requeue hold as soon
// as its nodes are free, as a preempted one does, not at the watcher's next scan.
extern "C" SP_EXPORT void priority_p_job_end(job_record_t* job_ptr) {
  sp::guard(g_plugin ? g_plugin->ctx->log.get() : nullptr, "priority_p_job_end", 0, [&] {
    if (job_ptr != nullptr) {
      sp::WatchEvent e;
      e.kind = sp::WatchEvent::Kind::RunEnd;
      e.job_id = job_ptr->job_id;
      e.at = time(nullptr);
      // Slurm's requeue (_job_requeue_op) sets the job pending before it deallocates the
      // nodes, which reports the run's end here.
      e.requeued = IS_JOB_PENDING(job_ptr);
      sp::bus::publish(e);
    }
    // A preempted run that ends at or after its grace end was killed there (grace 0: in the
    // call that reports its end; or by Slurm's own grace check before the watcher's kill).
    const bool killed =
        job_ptr != nullptr &&
        sp::bus::preempted_runs().ended(job_ptr->job_id, job_ptr->start_time, time(nullptr),
                                        sp::ended_by_itself(job_ptr->job_state));
    if (g_plugin && g_plugin->ctx->usage) {  // the run since the last pass, the unused run-seconds
      assoc_mgr_lock_t levels = {};
      levels.assoc = WRITE_LOCK;
      levels.qos = WRITE_LOCK;
      levels.tres = READ_LOCK;
      const sp::AssocLock locks(levels);
      sp::fault_point("priority_p_job_end");
      const auto snap = g_plugin->ctx->state.snapshot();
      g_plugin->ctx->usage->job_ended(
          *job_ptr, g_plugin->ctx->clock.now(),
          snap.policy ? snap.policy->priority.lost_work_charge : 1.0,
          snap.policy ? snap.policy->story.field : sp::StoryField::AdminComment, killed);
    }
    return 0;
  });
}

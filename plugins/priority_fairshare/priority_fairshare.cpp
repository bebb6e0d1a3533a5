// priority/fairshare: the C ABI of the plugin (PriorityType=priority/fairshare): the six
// priority_p_* entry points plus init/fini. Arithmetic lives in lib/priority.cpp; Slurm's
// structures are read in priority_adapter.cpp; the periodic recalculation in recalc.cpp; fair-
// share usage (decay, accrual, sshare's fields) in usage.cpp over lib/fairshare.cpp.
#include <algorithm>
#include <memory>
#include <string>

#include "ctld_policy.hpp"
#include "guard.hpp"
#include "priority.hpp"
#include "priority_adapter.hpp"
#include "recalc.hpp"
#include "slurm_locks.hpp"
#include "slurm_log_sink.hpp"
#include "usage.hpp"
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

struct Plugin {
  sp::SlurmLogSink log{plugin_type};
  sp::SystemClock clock;
  sp::PriorityState state;                   // policy + weights, swapped at reconfigure
  std::unique_ptr<sp::UsageTracker> usage;   // slurmctld only
  std::unique_ptr<sp::Recalculator> recalc;  // slurmctld only; last: stopped first
  sp::LogOnce no_assoc, saturate, conf_unread;
};

Plugin* g_plugin = nullptr;  // created in init(), destroyed in fini()

// Caller holds the job lock and assoc_mgr's assoc and QOS read (or write) locks.
uint32_t compute(job_record_t& job, const sp::PriorityState::Snapshot& s, int64_t now) {
  if (job.assoc_ptr == nullptr && g_plugin) {
    g_plugin->no_assoc.error(g_plugin->log, "job " + std::to_string(job.job_id) +
                                                " has no association: fair-share factor 0 "
                                                "(logged once)");
  }
  const sp::PriorityTerms terms =
      sp::priority_terms(sp::input_of(job, *s.policy, s.weights.favor_small), s.weights, now);
  sp::store_terms(job, terms);
  return sp::priority_value(terms);
}

uint32_t max_boost(const sp::Policy& p) {
  uint32_t m = 0;
  for (const auto& q : p.qos) m = std::max(m, q.boost);
  return m;
}

// Sets the policy and the weights in force, and says once if they can overflow 32 bits.
// Reads slurm.conf again (weight_keys_in): call it without Slurm's locks.
void set_state(Plugin& plugin, std::shared_ptr<const sp::Policy> policy) {
  const auto keys = sp::weight_keys_in(slurm_conf.slurm_conf);
  if (!keys) {
    plugin.conf_unread.error(plugin.log,
                             std::string("cannot read ") +
                                 (slurm_conf.slurm_conf ? slurm_conf.slurm_conf : "slurm.conf") +
                                 " again to tell PriorityWeight*=0 from no such key: a weight of 0 "
                                 "counts as unset there and the policy's applies (logged once)");
  }
  const sp::Weights w =
      sp::effective_weights(policy->priority, sp::slurm_weights(slurm_conf, keys));
  if (sp::weights_may_saturate(w, max_boost(*policy))) {
    plugin.saturate.error(plugin.log,
                          "the priority weights and boosts add up to more than 2^32-1: "
                          "the highest priorities saturate at 4294967294 (logged once)");
  }
  plugin.state.set(std::move(policy), w);
}

}  // namespace

extern "C" SP_EXPORT int init(void) {
  sp::SlurmLogSink boot_log{plugin_type};
  return sp::guard(&boot_log, "init", SLURM_ERROR, [&] {
    auto plugin = std::make_unique<Plugin>();
    // sprio and sshare load this plugin too: only the controller needs the policy and the
    // recalculation thread, and only there is the load line worth an info message.
    if (running_in_slurmctld()) {
      auto policy = sp::load_ctld_policy(boot_log, "refusing to start");
      if (!policy) return SLURM_ERROR;
      // slurm.conf and the associations are loaded by now (they are not yet when job_submit
      // plugins start): check that the policy names only things Slurm knows.
      if (const std::string problem = sp::slurm_config_problem(*policy); !problem.empty()) {
        boot_log.log_error("cannot load policy: " + problem + "; refusing to start");
        return SLURM_ERROR;
      }
      set_state(*plugin, policy);
      if (slurm_conf.priority_flags & PRIORITY_FLAGS_FAIR_TREE) {
        plugin->log.log_info(
            "PriorityFlags has FAIR_TREE (Slurm's default): priority/fairshare computes classic "
            "fair share all the same; set PriorityFlags=NO_FAIR_TREE so that sshare shows "
            "every account's factor");
      }
      plugin->usage = std::make_unique<sp::UsageTracker>(plugin->log, plugin->clock.now());
      plugin->log.log_info(std::string("loaded slurm-preempt ") + sp::kVersion + ", " +
                           plugin->state.describe());
    } else {
      plugin->log.log_debug(std::string("loaded slurm-preempt ") + sp::kVersion);
    }
    delete g_plugin;
    g_plugin = plugin.release();
    // The thread starts last: its first pass runs at once and may call compute().
    if (g_plugin->usage) {
      g_plugin->recalc = std::make_unique<sp::Recalculator>(
          g_plugin->log, g_plugin->state, g_plugin->clock, &compute, *g_plugin->usage);
    }
    return SLURM_SUCCESS;
  });
}

extern "C" SP_EXPORT int fini(void) {
  if (g_plugin) g_plugin->recalc.reset();  // stop and join the thread before the rest goes
  delete g_plugin;
  g_plugin = nullptr;
  return SLURM_SUCCESS;
}

// Called by slurmctld with the job write lock held, at submission, requeue and reconfigure.
extern "C" SP_EXPORT uint32_t priority_p_set(uint32_t last_prio, job_record_t* job_ptr) {
  if (g_plugin == nullptr || !g_plugin->state.ready()) {
    if (job_ptr->direct_set_prio && job_ptr->priority > 1) return job_ptr->priority;
    return sp::fifo_priority(last_prio, sp::nice_of(*job_ptr));
  }
  return sp::guard(&g_plugin->log, "priority_p_set", 1u, [&] {
    const auto s = g_plugin->state.snapshot();
    // The first call for a new job comes before slurmctld answers an srun or salloc.
    sp::export_checkpoint_env(*job_ptr, *s.policy);
    if (job_ptr->direct_set_prio && job_ptr->priority > 1) return job_ptr->priority;
    const sp::AssocLock lock(sp::assoc_qos_read());
    return compute(*job_ptr, s, g_plugin->clock.now());
  });
}

// Called by slurmctld without its locks (after a reconfigure, assoc_clear true: it has cleared
// assoc_mgr's usage counters and reserved running jobs' run-seconds again).
extern "C" SP_EXPORT void priority_p_reconfig(bool assoc_clear) {
  if (g_plugin == nullptr || !g_plugin->recalc) return;
  sp::guard(&g_plugin->log, "priority_p_reconfig", 0, [&] {
    if (assoc_clear && g_plugin->usage) {
      // As priority/multifactor: give back what running jobs ran up to the last pass.
      slurmctld_lock_t job_read = {NO_LOCK, READ_LOCK, NO_LOCK, NO_LOCK, NO_LOCK};
      assoc_mgr_lock_t write = {};
      write.assoc = WRITE_LOCK;
      write.qos = WRITE_LOCK;
      write.tres = READ_LOCK;
      const sp::CtldLock ctld(job_read);
      const sp::AssocLock assoc(write);
      g_plugin->usage->resync_run_secs();
    }
    auto policy = sp::load_ctld_policy(g_plugin->log, "keeping the last good policy");
    if (!policy) policy = g_plugin->state.snapshot().policy;
    set_state(*g_plugin, policy);
    g_plugin->log.log_info("reconfigured: " + g_plugin->state.describe());
    g_plugin->recalc->wake();
    return 0;
  });
}

// slurmctld (assoc_mgr_get_shares, for sshare) with the assoc lock held: one association's
// normalised and effective usage and factor from its parent's current values.
extern "C" SP_EXPORT void priority_p_set_assoc_usage(slurmdb_assoc_rec_t* assoc) {
  sp::guard(g_plugin ? &g_plugin->log : nullptr, "priority_p_set_assoc_usage", 0, [&] {
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
  return sp::guard(&g_plugin->log, "priority_p_get_priority_factors_list",
                   static_cast<List>(nullptr), [&] { return sp::factors_list(*req_msg, uid); });
}

// Called by slurmctld with the job write lock held (acct_policy_job_fini), before it drops the
// job from its association's counters.
extern "C" SP_EXPORT void priority_p_job_end(job_record_t* job_ptr) {
  sp::guard(g_plugin ? &g_plugin->log : nullptr, "priority_p_job_end", 0, [&] {
    if (g_plugin && g_plugin->usage) {  // the run since the last pass, the unused run-seconds
      assoc_mgr_lock_t locks = {};
      locks.assoc = WRITE_LOCK;
      locks.qos = WRITE_LOCK;
      locks.tres = READ_LOCK;
      const sp::AssocLock lock(locks);
      g_plugin->usage->job_ended(*job_ptr, g_plugin->clock.now());
    }
    return 0;
  });
}

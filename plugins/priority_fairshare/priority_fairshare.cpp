// priority/fairshare: the C ABI of the plugin (PriorityType=priority/fairshare): the six
// priority_p_* entry points plus init/fini. Arithmetic lives in lib/priority.cpp; Slurm's
// structures are read in priority_adapter.cpp; the periodic recalculation in recalc.cpp.
#include <memory>
#include <string>

#include "ctld_policy.hpp"
#include "guard.hpp"
#include "priority.hpp"
#include "priority_adapter.hpp"
#include "recalc.hpp"
#include "slurm_log_sink.hpp"
#include "usage_accounting.hpp"
#include "version.hpp"

extern "C" {
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
  std::unique_ptr<sp::Recalculator> recalc;  // slurmctld only
};

Plugin* g_plugin = nullptr;  // created in init(), destroyed in fini()

uint32_t compute(job_record_t& job, const sp::PriorityState::Snapshot& s, int64_t now) {
  const sp::PriorityTerms terms = sp::priority_terms(sp::input_of(job, *s.policy), s.weights, now);
  sp::store_terms(job, terms);
  return sp::priority_value(terms);
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
      plugin->state.set(policy,
                        sp::effective_weights(policy->priority, sp::slurm_weights(slurm_conf)));
      plugin->recalc =
          std::make_unique<sp::Recalculator>(plugin->log, plugin->state, plugin->clock, &compute);
      plugin->log.log_info(std::string("loaded slurm-preempt ") + sp::kVersion + ", " +
                           plugin->state.describe());
    } else {
      plugin->log.log_debug(std::string("loaded slurm-preempt ") + sp::kVersion);
    }
    delete g_plugin;
    g_plugin = plugin.release();
    return SLURM_SUCCESS;
  });
}

extern "C" SP_EXPORT int fini(void) {
  delete g_plugin;  // stops and joins the recalculation thread first
  g_plugin = nullptr;
  return SLURM_SUCCESS;
}

// Called by slurmctld with the job write lock held, at submission, requeue and reconfigure.
extern "C" SP_EXPORT uint32_t priority_p_set(uint32_t last_prio, job_record_t* job_ptr) {
  if (job_ptr->direct_set_prio && job_ptr->priority > 1) return job_ptr->priority;
  if (g_plugin == nullptr || !g_plugin->state.ready()) {
    return sp::fifo_priority(last_prio, sp::nice_of(*job_ptr));
  }
  return sp::guard(&g_plugin->log, "priority_p_set", 1u, [&] {
    return compute(*job_ptr, g_plugin->state.snapshot(), g_plugin->clock.now());
  });
}

extern "C" SP_EXPORT void priority_p_reconfig(bool assoc_clear) {
  (void)assoc_clear;
  if (g_plugin == nullptr || !g_plugin->recalc) return;
  sp::guard(&g_plugin->log, "priority_p_reconfig", 0, [&] {
    auto policy = sp::load_ctld_policy(g_plugin->log, "keeping the last good policy");
    if (!policy) policy = g_plugin->state.snapshot().policy;
    g_plugin->state.set(policy,
                        sp::effective_weights(policy->priority, sp::slurm_weights(slurm_conf)));
    g_plugin->log.log_info("reconfigured: " + g_plugin->state.describe());
    g_plugin->recalc->wake();
    return 0;
  });
}

extern "C" SP_EXPORT void priority_p_set_assoc_usage(slurmdb_assoc_rec_t* assoc) { (void)assoc; }

extern "C" SP_EXPORT double priority_p_calc_fs_factor(long double usage_efctv,
                                                      long double shares_norm) {
  return sp::fairshare_factor(usage_efctv, shares_norm);
}

// sprio: the factors of pending jobs, as computed by the last priority_p_set or recalculation.
extern "C" SP_EXPORT List
priority_p_get_priority_factors_list(priority_factors_request_msg_t* req_msg, uid_t uid) {
  if (g_plugin == nullptr || req_msg == nullptr) return nullptr;
  return sp::guard(&g_plugin->log, "priority_p_get_priority_factors_list",
                   static_cast<List>(nullptr), [&] { return sp::factors_list(*req_msg, uid); });
}

extern "C" SP_EXPORT void priority_p_job_end(job_record_t* job_ptr) {
  sp::guard(g_plugin ? &g_plugin->log : nullptr, "priority_p_job_end", 0, [&] {
    sp::release_unused_tres_run_secs(*job_ptr);
    return 0;
  });
}

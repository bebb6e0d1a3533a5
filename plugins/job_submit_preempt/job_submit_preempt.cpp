// job_submit/preempt: the C ABI of the plugin (JobSubmitPlugins=preempt), and nothing else.
// init() loads the policy and creates the one plugin object; job_submit() turns the request
// into a view, asks lib/ for a decision and applies it; fini() destroys the object.
#include <memory>
#include <string>

#include "decide.hpp"
#include "clock.hpp"
#include "guard.hpp"
#include "ctld_policy.hpp"
#include "slurm_log_sink.hpp"
#include "association.hpp"
#include "submit_adapter.hpp"
#include "watcher.hpp"
#include "text.hpp"
#include "version.hpp"

extern "C" {
#include "config.h"
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "src/common/run_in_daemon.h"
#include "src/common/xstring.h"
#include "src/slurmctld/slurmctld.h"
}

#define SP_EXPORT __attribute__((visibility("default")))

extern "C" {
SP_EXPORT extern const char plugin_name[] = "slurm-preempt job submit plugin";
SP_EXPORT extern const char plugin_type[] = "job_submit/preempt";
SP_EXPORT extern const uint32_t plugin_version = SLURM_VERSION_NUMBER;
}

namespace {

struct Plugin {
  sp::SlurmLogSink log{plugin_type};
  sp::SystemClock clock;
  std::shared_ptr<const sp::Policy> policy;
  std::unique_ptr<sp::PreemptionWatcher> watcher;  // slurmctld only; joined before the rest
  time_t conf_loaded_at = 0;  // slurm_conf.last_update when the policy was last read
  bool recheck = false;       // read in the second of a reconfigure: read once more after it

  // job_submit plugins get no reconfigure call in 22.05, but scontrol reconfigure re-reads
  // slurm.conf and moves slurm_conf.last_update (whole seconds): compare it per submission
  // and read preempt.yaml only when it moved. A read in the very second of a reconfigure is
  // repeated once after that second, so a second reconfigure within it is not missed. A bad
  // file keeps the last good policy; an unchanged file is not announced.
  void reload_if_reconfigured(time_t now) {
    const time_t stamp = slurm_conf.last_update;
    if (stamp == conf_loaded_at && !(recheck && now > stamp)) return;
    conf_loaded_at = stamp;
    recheck = now <= stamp;
    auto fresh = sp::load_ctld_policy(log, "keeping the last good policy");
    if (!fresh || *fresh == *policy) return;
    policy = std::move(fresh);
    log.log_info("reloaded policy " + policy->source + " after reconfigure");
  }
};

Plugin* g_plugin = nullptr;  // created in init(), destroyed in fini()

}  // namespace

extern "C" SP_EXPORT int init(void) {
  sp::SlurmLogSink boot_log{plugin_type};
  return sp::guard(&boot_log, "init", SLURM_ERROR, [&] {
    auto plugin = std::make_unique<Plugin>();
    plugin->policy = sp::load_ctld_policy(boot_log, "refusing to start");
    if (!plugin->policy) return SLURM_ERROR;
    plugin->conf_loaded_at = slurm_conf.last_update;
    if (running_in_slurmctld()) {
      plugin->watcher =
          std::make_unique<sp::PreemptionWatcher>(plugin->log, plugin->clock, plugin->policy);
      plugin->log.log_info("preemption watcher started (grace ends, requeue holds)");
    }
    plugin->log.log_info(std::string("loaded slurm-preempt ") + sp::kVersion + ", policy " +
                         plugin->policy->source + " (" +
                         std::to_string(plugin->policy->qos.size()) + " QOS rules, " +
                         std::to_string(plugin->policy->owners.size()) + " owner groups)");
    delete g_plugin;
    g_plugin = plugin.release();
    return SLURM_SUCCESS;
  });
}

extern "C" SP_EXPORT int fini(void) {
  delete g_plugin;
  g_plugin = nullptr;
  return SLURM_SUCCESS;
}

extern "C" SP_EXPORT int job_submit(job_desc_msg_t* job_desc, uint32_t submit_uid, char** err_msg) {
  if (g_plugin == nullptr || job_desc == nullptr) return SLURM_SUCCESS;
  constexpr int kInternalError = -2;
  const int rc = sp::guard(&g_plugin->log, "job_submit", kInternalError, [&] {
    g_plugin->reload_if_reconfigured(static_cast<time_t>(g_plugin->clock.now()));
    // Only this plugin writes the promise: whatever the request carries is dropped first.
    if (const uint32_t forged = sp::strip_promise(*job_desc); forged != 0) {
      g_plugin->log.log_info("removed " + std::to_string(forged) + " " +
                             std::string(sp::kControlEnvName) +
                             " entries from the SPANK environment of the submission of uid " +
                             std::to_string(submit_uid) + " (job name " +
                             (job_desc->name ? sp::quote(job_desc->name) : std::string("unset")) +
                             "): only job_submit/preempt sets it");
    }
    sp::SubmitView view = sp::view_of(*job_desc, submit_uid);
    sp::Association assoc;  // outlives the view, which borrows its names
    sp::add_association(view, *g_plugin->policy, assoc);
    const sp::SubmitDecision decision = sp::decide(view, *g_plugin->policy, g_plugin->clock.now());
    return sp::apply(decision, *g_plugin->policy, *job_desc, err_msg, g_plugin->log);
  });
  if (rc != kInternalError) return rc;
  if (err_msg) {
    *err_msg = xstrdup(
        "job_submit/preempt hit an internal error (logged by slurmctld); "
        "the job was not submitted, please tell your administrator");
  }
  return SLURM_ERROR;
}

// scontrol update of a job: refuse what the policy forbids (a preemptible job in an owner's
// partition, a walltime over its QOS' maximum, ...). Routing is for submissions only, and
// root may override. 22.05 gives job_modify no message channel: the refusal is logged and
// the user sees the matching Slurm error.
extern "C" SP_EXPORT int job_modify(job_desc_msg_t* job_desc, job_record_t* job_ptr,
                                    uint32_t submit_uid) {
  if (g_plugin == nullptr || job_desc == nullptr || job_ptr == nullptr || submit_uid == 0 ||
      !sp::update_touches_policy(*job_desc)) {
    return SLURM_SUCCESS;
  }
  return sp::guard(&g_plugin->log, "job_modify", static_cast<int>(SLURM_ERROR), [&] {
    const sp::SubmitView view = sp::view_of_update(*job_desc, *job_ptr);
    const sp::SubmitDecision d = sp::decide(view, *g_plugin->policy, g_plugin->clock.now());
    if (d.accepted()) return static_cast<int>(SLURM_SUCCESS);
    // d.reason quotes what it echoes of the update (text.hpp): one bounded line.
    g_plugin->log.log_info("refused an update of JobId=" + std::to_string(job_ptr->job_id) +
                           " by uid " + std::to_string(submit_uid) + ": " + d.reason);
    return sp::error_code(d.kind);
  });
}

// priority/fairshare: the C ABI of the plugin (PriorityType=priority/fairshare): the six
// priority_p_* entry points plus init/fini. Arithmetic lives in lib/priority.cpp; Slurm's
// structures are read in priority_adapter.cpp.
#include <memory>
#include <string>

#include "guard.hpp"
#include "priority.hpp"
#include "priority_adapter.hpp"
#include "slurm_log_sink.hpp"
#include "usage_accounting.hpp"
#include "version.hpp"

extern "C" {
#include "src/common/list.h"
#include "src/common/run_in_daemon.h"
#include "src/common/slurm_priority.h"
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
};

Plugin* g_plugin = nullptr;  // created in init(), destroyed in fini()

}  // namespace

extern "C" SP_EXPORT int init(void) {
  return sp::guard(static_cast<sp::LogSink*>(nullptr), "init", SLURM_ERROR, [] {
    auto plugin = std::make_unique<Plugin>();
    // sprio and sshare load this plugin too: say it loudly only in the controller.
    const std::string line = std::string("loaded slurm-preempt ") + sp::kVersion;
    if (running_in_slurmctld()) {
      plugin->log.log_info(line);
    } else {
      plugin->log.log_debug(line);
    }
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

extern "C" SP_EXPORT uint32_t priority_p_set(uint32_t last_prio, job_record_t* job_ptr) {
  if (job_ptr->direct_set_prio && job_ptr->priority > 1) return job_ptr->priority;
  return sp::fifo_priority(last_prio, sp::nice_of(*job_ptr));
}

extern "C" SP_EXPORT void priority_p_reconfig(bool assoc_clear) { (void)assoc_clear; }

extern "C" SP_EXPORT void priority_p_set_assoc_usage(slurmdb_assoc_rec_t* assoc) { (void)assoc; }

extern "C" SP_EXPORT double priority_p_calc_fs_factor(long double usage_efctv,
                                                      long double shares_norm) {
  return sp::fairshare_factor(usage_efctv, shares_norm);
}

extern "C" SP_EXPORT List
priority_p_get_priority_factors_list(priority_factors_request_msg_t* req_msg, uid_t uid) {
  (void)req_msg;
  (void)uid;
  return list_create(nullptr);
}

extern "C" SP_EXPORT void priority_p_job_end(job_record_t* job_ptr) {
  sp::guard(g_plugin ? &g_plugin->log : nullptr, "priority_p_job_end", 0, [&] {
    sp::release_unused_tres_run_secs(*job_ptr);
    return 0;
  });
}

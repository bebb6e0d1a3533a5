// job_submit/preempt: the C ABI of the plugin (JobSubmitPlugins=preempt), and nothing else.
// init() loads the policy and creates the one plugin object; job_submit() turns the request
// into a view, asks lib/ for a decision and applies it; fini() destroys the object.
#include <memory>
#include <string>

#include "decide.hpp"
#include "clock.hpp"
#include "guard.hpp"
#include "policy_loader.hpp"
#include "slurm_log_sink.hpp"
#include "submit_adapter.hpp"
#include "version.hpp"

extern "C" {
#include "config.h"
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
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
};

Plugin* g_plugin = nullptr;  // created in init(), destroyed in fini()

// preempt.yaml beside slurm.conf, the way Slurm finds cgroup.conf or gres.conf.
std::string policy_path() {
  char* p = get_extra_conf_path(const_cast<char*>("preempt.yaml"));
  std::string path = p ? p : "preempt.yaml";
  xfree(p);
  return path;
}

}  // namespace

extern "C" SP_EXPORT int init(void) {
  sp::SlurmLogSink boot_log{plugin_type};
  return sp::guard(&boot_log, "init", SLURM_ERROR, [&] {
    const std::string path = policy_path();
    auto result = sp::load_policy_file(path);
    if (const auto* err = sp::error_of(result)) {
      boot_log.log_error("cannot load policy: " + err->str());
      return SLURM_ERROR;
    }
    auto plugin = std::make_unique<Plugin>();
    plugin->policy = sp::policy_of(result);
    plugin->log.log_info(std::string("loaded slurm-preempt ") + sp::kVersion + ", policy " + path +
                         " (" + std::to_string(plugin->policy->qos.size()) + " QOS rules, " +
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
  return sp::guard(&g_plugin->log, "job_submit", SLURM_ERROR, [&] {
    const sp::SubmitView view = sp::view_of(*job_desc, submit_uid);
    const sp::SubmitDecision decision = sp::decide(view, *g_plugin->policy, g_plugin->clock.now());
    return sp::apply(decision, *job_desc, err_msg, g_plugin->log);
  });
}

extern "C" SP_EXPORT int job_modify(job_desc_msg_t* job_desc, job_record_t* job_ptr,
                                    uint32_t submit_uid) {
  (void)job_desc;
  (void)job_ptr;
  (void)submit_uid;
  return SLURM_SUCCESS;
}

// spank/checkpoint: the C ABI of the SPANK plugin (plugstack.conf: required
// spank_checkpoint.so). Creates the plugin object for the current context in slurm_spank_init,
// forwards every hook to it, destroys it in slurm_spank_exit. No exception crosses these
// functions.
#include <memory>

#include "context.hpp"
#include "clock.hpp"
#include "guard.hpp"
#include "slurm_log_sink.hpp"

#define SP_EXPORT __attribute__((visibility("default")))

// Written out instead of SPANK_PLUGIN(): in C++ a namespace-scope const has internal linkage,
// so the macro's definitions would not be exported and Slurm would refuse the plugin.
extern "C" {
SP_EXPORT extern const char plugin_name[] = "checkpoint";
SP_EXPORT extern const char plugin_type[] = "spank";
SP_EXPORT extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
}

namespace {

struct Plugin {
  sp::SlurmLogSink log{"spank/checkpoint"};
  sp::SystemClock clock;
  std::unique_ptr<sp::spank::Context> context;
};

Plugin* g_plugin = nullptr;  // created in slurm_spank_init, destroyed in slurm_spank_exit

std::unique_ptr<sp::spank::Context> context_for(spank_context_t ctx, sp::spank::Env env) {
  switch (ctx) {
    case S_CTX_SLURMD: return sp::spank::make_slurmd_context(env);
    case S_CTX_LOCAL:
    case S_CTX_ALLOCATOR: return sp::spank::make_client_context(env);
    case S_CTX_REMOTE: return sp::spank::make_remote_context(env);
    case S_CTX_JOB_SCRIPT:
    case S_CTX_ERROR: break;
  }
  return sp::spank::make_passive_context(env);
}

using Hook = int (sp::spank::Context::*)(spank_t, int, char**);

int forward(const char* where, Hook hook, spank_t sp, int ac, char** av) {
  if (g_plugin == nullptr || !g_plugin->context) return ESPANK_SUCCESS;
  // -1, not ESPANK_ERROR (3000): slurmstepd stops a task only on a negative return.
  return sp::guard(&g_plugin->log, where, -1,
                   [&] { return ((*g_plugin->context).*hook)(sp, ac, av); });
}

}  // namespace

extern "C" SP_EXPORT int slurm_spank_init(spank_t sp, int ac, char** av) {
  sp::SlurmLogSink boot_log{"spank/checkpoint"};
  const int rc = sp::guard(&boot_log, "slurm_spank_init", static_cast<int>(ESPANK_ERROR), [&] {
    auto plugin = std::make_unique<Plugin>();
    plugin->context = context_for(spank_context(), sp::spank::Env{plugin->log, plugin->clock});
    delete g_plugin;
    g_plugin = plugin.release();
    return static_cast<int>(ESPANK_SUCCESS);
  });
  if (rc != ESPANK_SUCCESS) return rc;
  return forward("slurm_spank_init", &sp::spank::Context::init, sp, ac, av);
}

extern "C" SP_EXPORT int slurm_spank_init_post_opt(spank_t sp, int ac, char** av) {
  return forward("slurm_spank_init_post_opt", &sp::spank::Context::init_post_opt, sp, ac, av);
}

extern "C" SP_EXPORT int slurm_spank_user_init(spank_t sp, int ac, char** av) {
  return forward("slurm_spank_user_init", &sp::spank::Context::user_init, sp, ac, av);
}

extern "C" SP_EXPORT int slurm_spank_task_init(spank_t sp, int ac, char** av) {
  return forward("slurm_spank_task_init", &sp::spank::Context::task_init, sp, ac, av);
}

extern "C" SP_EXPORT int slurm_spank_task_exit(spank_t sp, int ac, char** av) {
  return forward("slurm_spank_task_exit", &sp::spank::Context::task_exit, sp, ac, av);
}

extern "C" SP_EXPORT int slurm_spank_exit(spank_t sp, int ac, char** av) {
  const int rc = forward("slurm_spank_exit", &sp::spank::Context::exit, sp, ac, av);
  delete g_plugin;
  g_plugin = nullptr;
  return rc;
}

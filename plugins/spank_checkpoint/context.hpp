// One object per SPANK context. spank_checkpoint.cpp creates the object for the context it
// runs in (the one place that dispatches on spank_context()) and forwards every SPANK hook to
// it; each context that does something has its own ctx_<context>.cpp.
#pragma once

#include <memory>

#include "clock.hpp"
#include "log.hpp"

extern "C" {
#include <slurm/spank.h>
}

namespace sp::spank {

// What every context gets injected.
struct Env {
  LogSink& log;
  const Clock& clock;
};

class Context {
 public:
  explicit Context(Env env) : env_(env) {}
  virtual ~Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  virtual int init(spank_t, int /*argc*/, char** /*argv*/) { return ESPANK_SUCCESS; }
  virtual int init_post_opt(spank_t, int, char**) { return ESPANK_SUCCESS; }
  virtual int user_init(spank_t, int, char**) { return ESPANK_SUCCESS; }
  virtual int task_init(spank_t, int, char**) { return ESPANK_SUCCESS; }
  virtual int task_exit(spank_t, int, char**) { return ESPANK_SUCCESS; }
  virtual int exit(spank_t, int, char**) { return ESPANK_SUCCESS; }

 protected:
  Env env_;
};

// slurmd: logs the plugin's load once per slurmd.
std::unique_ptr<Context> make_slurmd_context(Env env);
std::unique_ptr<Context> make_client_context(Env env);  // srun, sbatch, salloc
std::unique_ptr<Context> make_remote_context(Env env);  // slurmstepd
// Contexts with no behaviour yet (srun, sbatch/salloc, slurmstepd, prolog/epilog).
std::unique_ptr<Context> make_passive_context(Env env);

}  // namespace sp::spank

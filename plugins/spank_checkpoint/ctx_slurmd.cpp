// S_CTX_SLURMD: slurm_spank_init runs once when slurmd starts.
#include <string>

#include "context.hpp"
#include "version.hpp"

namespace sp::spank {
namespace {

class SlurmdContext final : public Context {
 public:
  using Context::Context;
  int init(spank_t, int, char**) override {
    env_.log.log_info(std::string("loaded slurm-preempt ") + kVersion);
    return ESPANK_SUCCESS;
  }
};

}  // namespace

std::unique_ptr<Context> make_slurmd_context(Env env) {
  return std::make_unique<SlurmdContext>(env);
}

std::unique_ptr<Context> make_passive_context(Env env) { return std::make_unique<Context>(env); }

}  // namespace sp::spank

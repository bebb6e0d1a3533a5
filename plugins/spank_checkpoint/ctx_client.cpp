// S_CTX_LOCAL (srun) and S_CTX_ALLOCATOR (sbatch, salloc): register the options; Slurm checks
// their values through the callbacks in options.cpp and passes them on to the controller and
// the nodes in the job's SPANK environment.
#include "context.hpp"
#include "options.hpp"

namespace sp::spank {
namespace {

class ClientContext final : public Context {
 public:
  using Context::Context;
  int init(spank_t sp, int, char**) override { return register_options(sp); }
};

}  // namespace

std::unique_ptr<Context> make_client_context(Env env) {
  return std::make_unique<ClientContext>(env);
}

}  // namespace sp::spank

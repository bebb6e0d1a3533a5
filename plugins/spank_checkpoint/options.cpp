#include "options.hpp"

#include <string>

#include "checkpoint.hpp"

namespace sp::spank {
namespace {

bool signal_ok(const char* value, std::string* error) {
  return parse_checkpoint_signal(value, error).has_value();
}
bool dir_ok(const char* value, std::string* error) { return valid_checkpoint_dir(value, error); }

// Option callbacks are called by Slurm through C function pointers: nothing may throw out.
// The value is checked on the submitting side only (remote: already checked).
template <bool (*Valid)(const char*, std::string*)>
int check(int /*val*/, const char* optarg, int remote) noexcept {
  if (remote) return 0;
  try {
    std::string error;
    if (optarg != nullptr && Valid(optarg, &error)) return 0;
    slurm_error("%s", error.empty() ? "this option needs a value" : error.c_str());
  } catch (...) {
  }
  return -1;
}

// Slurm keeps pointers to these for the life of the process.
struct spank_option g_signal = {
    const_cast<char*>("checkpoint-signal"),
    const_cast<char*>("SIG[@SECONDS]"),
    const_cast<char*>("Signal that asks the job to checkpoint before it is preempted or reaches "
                      "its time limit, SECONDS before the kill (default: the site's, "
                      "USR1 and the QOS grace)"),
    1,
    0,
    check<signal_ok>};
struct spank_option g_dir = {
    const_cast<char*>("checkpoint-dir"),
    const_cast<char*>("PATH"),
    const_cast<char*>("Checkpoint directory: created for the job if missing, exported to every "
                      "task as SLURM_CHECKPOINT_DIR; the preemption notice is written there"),
    1,
    0,
    check<dir_ok>};

}  // namespace

struct spank_option* signal_option() {
  return &g_signal;
}
struct spank_option* dir_option() {
  return &g_dir;
}

int register_options(spank_t sp) {
  if (spank_option_register(sp, &g_signal) != ESPANK_SUCCESS) return ESPANK_ERROR;
  if (spank_option_register(sp, &g_dir) != ESPANK_SUCCESS) return ESPANK_ERROR;
  return ESPANK_SUCCESS;
}

}  // namespace sp::spank

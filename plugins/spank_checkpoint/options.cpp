#include "options.hpp"

#include <string>

#include "checkpoint.hpp"

namespace sp::spank {
namespace {

// Option callbacks are called by Slurm through C function pointers: nothing may throw out.
int check_signal(int /*val*/, const char* optarg, int remote) noexcept {
  if (remote) return 0;  // checked on the submitting side
  try {
    std::string error;
    if (optarg == nullptr || !parse_checkpoint_signal(optarg, &error)) {
      slurm_error("%s", error.empty() ? "--checkpoint-signal needs a value" : error.c_str());
      return -1;
    }
    return 0;
  } catch (...) {
    return -1;
  }
}

int check_dir(int /*val*/, const char* optarg, int remote) noexcept {
  if (remote) return 0;
  try {
    std::string error;
    if (optarg == nullptr || !valid_checkpoint_dir(optarg, &error)) {
      slurm_error("%s", error.empty() ? "--checkpoint-dir needs a value" : error.c_str());
      return -1;
    }
    return 0;
  } catch (...) {
    return -1;
  }
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
    check_signal};
struct spank_option g_dir = {
    const_cast<char*>("checkpoint-dir"),
    const_cast<char*>("PATH"),
    const_cast<char*>("Checkpoint directory: created for the job if missing, exported to every "
                      "task as SLURM_CHECKPOINT_DIR; the preemption notice is written there"),
    1,
    0,
    check_dir};

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

// S_CTX_REMOTE (slurmstepd): in each task, just before it execs, as the job's user:
//  - the checkpoint directory is created (or checked) and exported;
//  - the first task of the step on this node starts the sentinel (sentinel.hpp);
//  - every task of a managed job ignores the private trigger signals, so Slurm's raw trigger
//    harms nobody (ignores_triggers() in lib/checkpoint.hpp).
// In slurmstepd, once the step's last task on this node has exited: waits for a sentinel
// still adding a preemption's preemptor to the notice (wait_for_notices in sentinel.hpp).
// A job without any sign of a checkpoint promise (no SLURM_CHECKPOINT_SIGNAL or
// SLURM_PREEMPT_CHECKPOINT in its environment and no option) is left exactly as it was, its
// signal dispositions included.
#include <unistd.h>

#include <charconv>
#include <csignal>
#include <optional>
#include <string>

#include "checkpoint.hpp"
#include "context.hpp"
#include "options.hpp"
#include "sentinel.hpp"
#include "units.hpp"

namespace sp::spank {
namespace {

constexpr uint32_t kBatchStep = 0xfffffffb;  // SLURM_BATCH_SCRIPT
constexpr const char* kDirEnv = "SLURM_CHECKPOINT_DIR";
constexpr const char* kNoticeName = "preempt-notice";

bool has_env(spank_t sp, std::string_view name) {
  char buf[2];  // ESPANK_NOSPACE: it exists, with a longer value
  const spank_err_t rc = spank_getenv(sp, std::string(name).c_str(), buf, sizeof buf);
  return rc == ESPANK_SUCCESS || rc == ESPANK_NOSPACE;
}

std::string getenv_of(spank_t sp, std::string_view name) {
  char buf[4096];
  if (spank_getenv(sp, std::string(name).c_str(), buf, sizeof buf) != ESPANK_SUCCESS) return "";
  return buf;
}

class RemoteContext final : public Context {
 public:
  using Context::Context;
  int init(spank_t sp, int, char**) override { return register_options(sp); }

  // slurmstepd calls this for each task it reaps; after the last one it kills what is left
  // of the step, the sentinel too.
  int task_exit(spank_t sp, int, char**) override {
    uint32_t tasks = 0;
    if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &tasks) != ESPANK_SUCCESS) return ESPANK_SUCCESS;
    if (++exited_ < tasks) return ESPANK_SUCCESS;
    JobCheckpoint c;
    TaskPromiseFacts seen;
    if (!promise(sp, c, seen)) return ESPANK_SUCCESS;  // no sentinel was started
    if (const auto busy = wait_for_notices(kStepEndWaitForNoticeMs); !busy.empty()) {
      uint32_t job_id = 0;
      spank_get_item(sp, S_JOB_ID, &job_id);
      env_.log.log_info("job " + std::to_string(job_id) + ": its sentinel (pid " +
                        std::to_string(busy.front()) + ") was still adding the preemptor to the " +
                        "notice after " + std::to_string(kStepEndWaitForNoticeMs) +
                        " ms; ending the step without it");
    }
    return ESPANK_SUCCESS;
  }

  int task_init(spank_t sp, int, char**) override {
    // Only the tasks of managed jobs ignore the triggers: Slurm sends them (the job's
    // warn_signal) and the watcher sends them to managed jobs only. A job whose promise is
    // malformed still ignores them; one whose promise did not reach its environment at all
    // (an interactive allocation made while priority/fairshare was not loaded) is not seen
    // as managed, and ends at grace start as with stock Slurm's SIGTERM.
    JobCheckpoint c;
    TaskPromiseFacts seen;
    const bool promised = promise(sp, c, seen);
    if (ignores_triggers(seen)) {
      for (const int s : {kTriggerPreempt, kTriggerTimeLimit, kTriggerPause}) signal(s, SIG_IGN);
    }
    uint32_t task_id = 0;
    uint32_t step_id = 0;
    uint32_t job_id = 0;
    spank_get_item(sp, S_TASK_ID, &task_id);
    spank_get_item(sp, S_JOB_STEPID, &step_id);
    spank_get_item(sp, S_JOB_ID, &job_id);
    // Every task carries its own step's run mark, whatever it inherited (checkpoint.hpp), a
    // task of an unmanaged job too: one submitted from inside a managed job's step would
    // otherwise carry that step's mark, and its sentinel would take these processes for its own.
    uint32_t restarts = 0;
    const std::string restart_env = getenv_of(sp, "SLURM_RESTART_COUNT");
    (void)std::from_chars(restart_env.data(), restart_env.data() + restart_env.size(),
                          restarts);  // absent or garbled: 0
    const std::string mark = step_mark(
        job_id, step_id == kBatchStep ? std::nullopt : std::optional<uint32_t>(step_id), restarts);
    spank_setenv(sp, std::string(kEnvStepMark).c_str(), mark.c_str(), 1);
    if (!promised) return ESPANK_SUCCESS;

    std::string notice = getenv_of(sp, kEnvNotice);
    if (!c.dir.empty()) {
      if (const std::string problem = prepare_checkpoint_dir(c.dir); !problem.empty()) {
        slurm_error("slurm-preempt checkpoint: %s; the step is not started", problem.c_str());
        return -1;  // slurmstepd stops the task only on a negative value (task.c exec_task)
      }
      spank_setenv(sp, kDirEnv, c.dir.c_str(), 1);
      if (notice.empty()) notice = c.dir + "/" + kNoticeName;
      spank_setenv(sp, std::string(kEnvNotice).c_str(), notice.c_str(), 1);
    }

    if (task_id == 0 && step_id == kBatchStep && !notice.empty()) {
      remove_stale_notice(notice);  // the last run's notice is not this run's
    }
    if (task_id == 0) {
      SentinelConfig cfg;
      cfg.job_id = job_id;
      cfg.batch = step_id == kBatchStep;
      cfg.has_gpus = !getenv_of(sp, cfg.batch ? "SLURM_JOB_GPUS" : "SLURM_STEP_GPUS").empty();
      cfg.checkpoint = c;
      cfg.notice_path = notice;
      cfg.restart_count = restarts;
      cfg.step_mark = mark;
      cfg.task_pid = getpid();
      cfg.stepd_pid = getppid();
      if (start_sentinel(cfg) < 0) {
        slurm_error(
            "slurm-preempt checkpoint: cannot start the sentinel: %m; this step will "
            "not get its checkpoint signal");
      }
    }
    return ESPANK_SUCCESS;
  }

 private:
  uint32_t exited_ = 0;  // task_exit calls so far: tasks of the step on this node reaped

  // The job's promise: from the environment job_submit gave a batch job (and every srun in
  // it inherits), else from this step's own options. False: the job has none it can use.
  // `seen`: every sign of a promise, usable or not.
  static bool promise(spank_t sp, JobCheckpoint& c, TaskPromiseFacts& seen) {
    char* opt = nullptr;
    const std::string env_signal = getenv_of(sp, kEnvSignal);
    std::optional<CheckpointSignalOption> from_option;
    if (spank_option_getopt(sp, signal_option(), &opt) == ESPANK_SUCCESS && opt != nullptr) {
      seen.option = true;
      from_option = parse_checkpoint_signal(opt, nullptr);
    }
    char* dir_opt = nullptr;
    if (spank_option_getopt(sp, dir_option(), &dir_opt) == ESPANK_SUCCESS && dir_opt != nullptr) {
      seen.option = true;
    }
    seen.signal_env = has_env(sp, kEnvSignal);
    const std::string control(kControlEnvName);
    seen.control_env = has_env(sp, control) || has_env(sp, "SPANK_" + control) ||
                       has_env(sp, "SLURM_SPANK_" + control);
    if (env_signal.empty() && !from_option) return false;
    // The environment job_submit (or priority/fairshare) gave the job, read back by lib's codec;
    // a malformed or out-of-range value there counts as no promise from the environment.
    if (const auto from_env = checkpoint_from_environment(
            [&](std::string_view name) { return getenv_of(sp, name); }, kDirEnv)) {
      c = *from_env;
    }
    if (from_option) {
      c.signal = from_option->signal;
      if (from_option->seconds > 0 && env_signal.empty()) {
        c.grace_s = c.lead_s = from_option->seconds;
      }
    }
    if (c.signal == 0) return false;
    if (dir_opt != nullptr && valid_checkpoint_dir(dir_opt, nullptr)) c.dir = dir_opt;
    return true;
  }
};

}  // namespace

std::unique_ptr<Context> make_remote_context(Env env) {
  return std::make_unique<RemoteContext>(env);
}

}  // namespace sp::spank

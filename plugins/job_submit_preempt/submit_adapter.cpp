#include "submit_adapter.hpp"

#include <algorithm>
#include <string>

#include "slurm_env.hpp"
#include "story_slot.hpp"
#include "text.hpp"
#include "units.hpp"

extern "C" {
#include <slurm/slurm_errno.h>

#include "src/common/slurm_xlator.h"  // xstrdup -> slurm_xstrdup, exported by libslurm
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
}

namespace sp {
namespace {

std::string_view sv(const char* s) { return s ? std::string_view(s) : std::string_view(); }

Tristate tristate(uint16_t v) {
  if (v == NO_VAL16) return Tristate::Unset;
  return v ? Tristate::Yes : Tristate::No;
}

void replace(char*& field, std::string_view value) {
  xfree(field);
  field = xstrndup(value.data(), value.size());
}

// How sbatch, salloc and srun pass a SPANK option of plugin "checkpoint" to the controller.
constexpr std::string_view kSignalOption = "SPANK__SLURM_SPANK_OPTION_checkpoint_checkpoint_signal";
constexpr std::string_view kDirOption = "SPANK__SLURM_SPANK_OPTION_checkpoint_checkpoint_dir";
constexpr std::string_view kSignalOptionEnv = "_SLURM_SPANK_OPTION_checkpoint_checkpoint_signal";
constexpr std::string_view kDirOptionEnv = "_SLURM_SPANK_OPTION_checkpoint_checkpoint_dir";

std::string_view option(const job_desc_msg_t& d, std::string_view spank_name,
                        std::string_view env_name) {
  std::string_view v = env_value(d.spank_job_env, d.spank_job_env_size, spank_name);
  // salloc (and srun) send the option in the SPANK environment without the SPANK_ prefix.
  if (v.empty()) v = env_value(d.spank_job_env, d.spank_job_env_size, env_name);
  if (v.empty()) v = env_value(d.environment, d.env_size, env_name);
  return v;
}

void apply_checkpoint(const JobCheckpoint& c, const Policy& policy, job_desc_msg_t& d,
                      std::string& note) {
  // The private trigger replaces SIGTERM at grace start (preempt_send_user_signal); warn_time
  // 0 keeps Slurm from sending it as a time-limit warning (the watcher does that itself).
  d.warn_signal = kTriggerPreempt;
  d.warn_time = 0;
  d.warn_flags = KILL_FULL_JOB;
  const std::string encoded = encode_checkpoint(c);
  env_set(d.spank_job_env, d.spank_job_env_size, kControlEnvName, encoded);
  // Batch jobs: every task and srun inside inherits these. An interactive allocation gets
  // them from slurmctld with its allocation (priority_adapter.cpp, export_checkpoint_env).
  if (d.environment != nullptr) {
    for (const auto& [name, value] : checkpoint_environment(c, policy.checkpoint)) {
      env_set(d.environment, d.env_size, name, value);
    }
  }
  note += " checkpoint " + signal_name(c.signal) + " grace " + std::to_string(c.grace_s) + "s";
  if (c.lead_s != c.grace_s) note += " before-end " + std::to_string(c.lead_s) + "s";
  note += ";";
}

// GPUs in one tres_per_* list, as slurmctld receives it: "gres:gpu:4", "gres:gpu:a100:2",
// "gres/gpu=1", "gres:gpu" (one), comma-separated with other TRES.
uint64_t gpus_in(std::string_view tres) {
  uint64_t total = 0;
  while (!tres.empty()) {
    const auto comma = tres.find(',');
    std::string_view item = tres.substr(0, comma);
    for (const std::string_view prefix : {"gres:", "gres/"}) {
      if (item.substr(0, prefix.size()) == prefix) item.remove_prefix(prefix.size());
    }
    const std::string_view name = item.substr(0, item.find_first_of(":="));
    if (name == "gpu") {
      const auto last = item.find_last_of(":=");
      uint64_t count = 1;
      if (last != std::string_view::npos && last >= name.size()) {
        const std::string_view num = item.substr(last + 1);
        uint64_t n = 0;
        bool digits = !num.empty();
        for (const char c : num) {
          if (c < '0' || c > '9') {
            digits = false;
            break;
          }
          // A count too large for 64 bits is the most there are, never a type name's one.
          n = n > (UINT64_MAX - 9) / 10 ? UINT64_MAX : n * 10 + static_cast<uint64_t>(c - '0');
        }
        if (digits) count = n;  // otherwise a type name ("gpu:a100"): one
      }
      total = count > UINT64_MAX - total ? UINT64_MAX : total + count;
    }
    if (comma == std::string_view::npos) break;
    tres.remove_prefix(comma + 1);
  }
  return total;
}

// a * b, or UINT64_MAX when it does not fit: a request too large to count must read as too
// large for any quota, never wrap around to a small one.
uint64_t times(uint64_t a, uint64_t b) { return a != 0 && b > UINT64_MAX / a ? UINT64_MAX : a * b; }

// Total GPUs a submission may get: --gpus, or per node (--gres, --gpus-per-node) times the
// nodes (the most it may get: -N1-2 counts 2), per task times the tasks, per socket times the
// nodes and their sockets. A quota license must cover the largest allocation.
uint64_t requested_gpus(const job_desc_msg_t& d) {
  if (const uint64_t job = gpus_in(sv(d.tres_per_job)); job > 0) return job;
  uint64_t nodes = d.min_nodes == NO_VAL || d.min_nodes == 0 ? 1 : d.min_nodes;
  if (d.max_nodes != NO_VAL && d.max_nodes != 0 && d.max_nodes > nodes) nodes = d.max_nodes;
  const uint64_t tasks = d.num_tasks == NO_VAL || d.num_tasks == 0 ? 1 : d.num_tasks;
  const uint64_t sockets =
      d.sockets_per_node == NO_VAL16 || d.sockets_per_node == 0 ? 1 : d.sockets_per_node;
  return std::max({times(gpus_in(sv(d.tres_per_node)), nodes),
                   times(gpus_in(sv(d.tres_per_task)), tasks),
                   times(times(gpus_in(sv(d.tres_per_socket)), sockets), nodes)});
}

}  // namespace

int error_code(SubmitDecision::RejectKind kind) {
  switch (kind) {
    case SubmitDecision::RejectKind::Qos: return ESLURM_INVALID_QOS;
    case SubmitDecision::RejectKind::Partition: return ESLURM_INVALID_PARTITION_NAME;
    case SubmitDecision::RejectKind::TimeLimit: return ESLURM_INVALID_TIME_LIMIT;
    case SubmitDecision::RejectKind::Access: return ESLURM_ACCESS_DENIED;
    case SubmitDecision::RejectKind::Other: break;
  }
  return SLURM_ERROR;
}

uint32_t strip_promise(job_desc_msg_t& d) {
  // The variables that tell a batch job's tasks their promise: a job submitted from inside a
  // managed job inherits them (sbatch exports the environment), and a user can set them.
  for (const std::string_view name :
       {kEnvSignal, kEnvGrace, kEnvLead, kEnvRequeue, kEnvSteps, kEnvNotice}) {
    env_unset(d.environment, d.env_size, name);
  }
  static constexpr std::string_view kPrefixed = "SPANK_SLURM_PREEMPT_CHECKPOINT";
  static_assert(kPrefixed.substr(6) == kControlEnvName);
  return env_unset(d.spank_job_env, d.spank_job_env_size, kControlEnvName) +
         env_unset(d.spank_job_env, d.spank_job_env_size, kPrefixed);
}

SubmitView view_of(const job_desc_msg_t& d, uint32_t submit_uid) {
  SubmitView v;
  v.user_id = d.user_id != NO_VAL ? d.user_id : submit_uid;
  v.account = sv(d.account);
  v.qos = sv(d.qos);
  v.partition = sv(d.partition);
  v.requeue = tristate(d.requeue);
  v.time_limit_min = d.time_limit == NO_VAL     ? 0
                     : d.time_limit == INFINITE ? kTimeUnlimited
                                                : d.time_limit;
  v.min_nodes = d.min_nodes == NO_VAL ? 0 : d.min_nodes;
  v.num_tasks = d.num_tasks == NO_VAL ? 0 : d.num_tasks;
  v.checkpoint_signal = option(d, kSignalOption, kSignalOptionEnv);
  v.checkpoint_dir = option(d, kDirOption, kDirOptionEnv);
  if (d.warn_signal != 0 && d.warn_signal != NO_VAL16) {
    v.warn_signal = d.warn_signal;
    v.warn_seconds = d.warn_time == NO_VAL16 ? 0 : d.warn_time;
  }
  v.interactive = d.script == nullptr;
  v.gpus = requested_gpus(d);
  v.licenses = sv(d.licenses);
  return v;
}

SubmitView view_of_update(const job_desc_msg_t& u, const job_record_t& job) {
  SubmitView v = view_of(u, job.user_id);
  v.user_id = job.user_id;
  if (v.account.empty()) v.account = sv(job.account);
  if (v.qos.empty() && job.qos_ptr) v.qos = sv(job.qos_ptr->name);
  if (v.partition.empty()) v.partition = sv(job.partition);
  if (v.requeue == Tristate::Unset && job.details) v.requeue = tristate(job.details->requeue);
  // The time limit stays the update's only: a job's stored limit may be its partition's
  // default (often UNLIMITED), which the user never chose and the update does not change.
  return v;
}

std::string quota_update_refusal(const Policy& policy, const job_desc_msg_t& u,
                                 const job_record_t& job) {
  if (policy.quotas.empty()) return {};
  const auto names_quota_license = [](std::string_view licenses) {
    return licenses.find(std::string("@") + std::string(kLicenseServer)) != std::string_view::npos;
  };
  const std::string id = "JobId=" + std::to_string(job.job_id);
  const bool holds = names_quota_license(sv(job.licenses));
  if (u.licenses && (holds || names_quota_license(sv(u.licenses)))) {
    return "licenses *@" + std::string(kLicenseServer) +
           " hold a project's GPU quota and are set by the scheduler at submission; " + id +
           "'s licenses cannot be changed";
  }
  if (u.qos) {
    if (const PriorityClass* c = policy.find_class(sv(u.qos)); c != nullptr && !c->preemptible) {
      return "qos " + c->name + " is non-preemptible and runs only within a project's quota, " +
             "checked at submission: resubmit the job with --qos=" + c->name +
             " instead of updating " + id;
    }
  }
  // A non-preemptible class job is fixed whether it holds a license or not (a 0-GPU job or
  // one outside its quota's partitions holds none, and must not move into them).
  const PriorityClass* now = job.qos_ptr != nullptr && job.qos_ptr->name != nullptr
                                 ? policy.find_class(job.qos_ptr->name)
                                 : nullptr;
  const bool fixed = holds || (now != nullptr && !now->preemptible);
  if (fixed && (u.qos || u.account || u.partition || u.tres_per_node || u.tres_per_job ||
                u.tres_per_task || u.tres_per_socket || u.min_nodes != NO_VAL ||
                u.max_nodes != NO_VAL || u.num_tasks != NO_VAL)) {
    return id +
           " runs within its project's GPU quota (a non-preemptible class): its QOS, "
           "account, GPUs and nodes are fixed at submission; resubmit it to change them";
  }
  return {};
}

bool update_touches_policy(const job_desc_msg_t& u) {
  return u.qos || u.partition || u.account || u.requeue != NO_VAL16 || u.time_limit != NO_VAL;
}

int apply(const SubmitDecision& dec, const Policy& policy, job_desc_msg_t& d, char** err_msg,
          LogSink& log) {
  // Built only for the log lines below: a submission left unchanged logs nothing.
  const auto job_name = [&] {
    return sv(d.name).empty() ? std::string("unset") : quote(sv(d.name));
  };
  if (!dec.accepted()) {
    // The reason quotes what it echoes of the request (text.hpp): one bounded line.
    log.log_info("rejected the submission of uid " + std::to_string(d.user_id) + " (job name " +
                 job_name() + "): " + dec.reason);
    if (err_msg) *err_msg = xstrdup(dec.reason.c_str());
    return error_code(dec.kind);
  }
  if (!dec.changes()) return SLURM_SUCCESS;

  std::string note = "slurm-preempt:";
  if (dec.set_qos && dec.default_class) {
    log.log_info("gave the submission of uid " + std::to_string(d.user_id) + " (job name " +
                 job_name() + ", account " +
                 (sv(d.account).empty() ? std::string("default") : quote(sv(d.account))) +
                 ") its project's default class " + std::string(*dec.set_qos));
  }
  if (dec.set_qos) {
    note += " qos " + (sv(d.qos).empty() ? std::string("(default)") : quote(sv(d.qos))) + "->" +
            std::string(*dec.set_qos) + ";";
    replace(d.qos, *dec.set_qos);
  }
  if (dec.set_partition) {
    note += " partition " +
            (sv(d.partition).empty() ? std::string("(default)") : quote(sv(d.partition))) + "->" +
            std::string(*dec.set_partition) + ";";
    replace(d.partition, *dec.set_partition);
  }
  if (dec.set_requeue) {
    note += std::string(" requeue ") + (*dec.set_requeue ? "on;" : "off;");
    d.requeue = *dec.set_requeue ? 1 : 0;
  }
  if (dec.checkpoint) apply_checkpoint(*dec.checkpoint, policy, d, note);
  if (dec.add_license) {
    // Slurm frees job_desc's strings with xfree: the list is grown with xstrfmtcat.
    const std::string lic = std::string(dec.add_license->name) + "@" + std::string(kLicenseServer) +
                            ":" + std::to_string(dec.add_license->count);
    if (d.licenses && *d.licenses) {
      xstrfmtcat(d.licenses, ",%s", lic.c_str());
    } else {
      replace(d.licenses, lic);
    }
    note += " license +" + lic + ";";
  }
  // job_submit runs before Slurm's own checks: Slurm may still refuse this submission.
  log.log_info("changed the submission of uid " + std::to_string(d.user_id) + " (job name " +
               job_name() + "):" + note.substr(14));
  // Appended to what the field holds (a user's --comment, an administrator's text), never
  // in its place. A submission has no SystemComment: the log line above is then all there is.
  (void)add_story_text(d, policy.story.field, note);
  return SLURM_SUCCESS;
}

}  // namespace sp

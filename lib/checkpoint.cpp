#include "checkpoint.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <csignal>
#include <ctime>

#include "text.hpp"
#include "units.hpp"

namespace sp {
namespace {

std::optional<int64_t> parse_int(std::string_view t) {
  int64_t v = 0;
  if (t.empty()) return std::nullopt;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size()) return std::nullopt;
  return v;
}

bool is_trigger(int signo) { return reason_for_trigger(signo).has_value(); }

}  // namespace

std::optional<NoticeReason> reason_for_trigger(int signo) {
  switch (signo) {
    case kTriggerPreempt: return NoticeReason::Preemption;
    case kTriggerTimeLimit: return NoticeReason::TimeLimit;
    case kTriggerPause: return NoticeReason::Pause;
    default: return std::nullopt;
  }
}

bool acts_on_trigger(NoticeReason reason, bool acted_before) {
  return reason == NoticeReason::TimeLimit || !acted_before;
}

TimeLimitNotice time_limit_notice(int64_t shown_end, int64_t acted_end, int64_t now,
                                  int64_t lead_s) {
  TimeLimitNotice n;
  n.act = acted_end == 0 || shown_end == 0 || shown_end > acted_end;
  n.deadline = shown_end > 0 ? shown_end : now + lead_s;
  return n;
}

std::string_view reason_name(NoticeReason r) {
  switch (r) {
    case NoticeReason::Preemption: return "preemption";
    case NoticeReason::TimeLimit: return "time-limit";
    case NoticeReason::Pause: return "pause";
  }
  return "preemption";
}

bool deliverable_signal(int signo) {
  if (signo < 1 || signo > 64) return false;
  if (signo == SIGKILL || signo == SIGSTOP || signo == SIGCONT) return false;
  if (signo == 32 || signo == 33) return false;  // glibc's own (SIGCANCEL, SIGSETXID)
  return !is_trigger(signo);
}

namespace {

std::optional<CheckpointSignalOption> signal_refused(std::string_view option,
                                                     std::string_view given, const std::string& why,
                                                     std::string* error) {
  if (error != nullptr) {
    *error = "invalid " + std::string(option) + "=" + quote(given) + ": " + why +
             "; use SIG[@SECONDS], for example USR1 or USR1@90";
  }
  return std::nullopt;
}

}  // namespace

std::optional<CheckpointSignalOption> check_checkpoint_signal(int signo, int64_t seconds,
                                                              std::string_view option,
                                                              std::string_view given,
                                                              std::string* error) {
  const auto refuse = [&](const std::string& why) {
    return signal_refused(option, given, why, error);
  };
  if (seconds != -1 && (seconds < 1 || seconds > kMaxCheckpointSeconds)) {
    return refuse("seconds must be between 1 and " + std::to_string(kMaxCheckpointSeconds));
  }
  if (signo < 1 || signo > 64) {
    return refuse("signal " + std::to_string(signo) + " does not exist (signals are 1 to 64)");
  }
  if (signo == SIGKILL || signo == SIGSTOP || signo == SIGCONT) {
    return refuse(signal_name(signo) + " cannot be caught to checkpoint");
  }
  if (!deliverable_signal(signo)) {
    return refuse("signal " + std::to_string(signo) + " is reserved");
  }
  return CheckpointSignalOption{signo, seconds};
}

std::optional<CheckpointSignalOption> parse_checkpoint_signal(std::string_view text,
                                                              std::string* error) {
  constexpr std::string_view kOption = "--checkpoint-signal";
  std::string_view sig = text;
  int64_t seconds = -1;
  if (const auto at = text.find('@'); at != std::string_view::npos) {
    sig = text.substr(0, at);
    const std::string_view secs = text.substr(at + 1);
    const auto v = parse_int(secs);
    if (!v) {
      return signal_refused(kOption, text, "'" + quote(secs) + "' is not a whole number of seconds",
                            error);
    }
    // 0 and negative values (even -1) are refused by the check, not taken for "not given".
    seconds = *v < 1 ? 0 : *v;
  }
  const auto signo = parse_signal(sig);
  if (!signo) return signal_refused(kOption, text, "unknown signal '" + quote(sig) + "'", error);
  return check_checkpoint_signal(*signo, seconds, kOption, text, error);
}

bool valid_checkpoint_dir(std::string_view path, std::string* error) {
  std::string why;
  if (path.empty() || path.front() != '/') {
    why = "the path must be absolute";
  } else if (path.size() > 4095) {
    why = "the path is longer than 4095 bytes";
  } else if (std::any_of(path.begin(), path.end(), [](char c) {
               return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
             })) {
    why = "the path contains a control character (a newline, a tab, ...)";
  } else if (path == "/.." || path.find("/../") != std::string_view::npos ||
             path.ends_with("/..")) {
    why = "the path must not contain '..'";
  }
  if (why.empty()) return true;
  if (error != nullptr) {
    *error = "invalid --checkpoint-dir=" + quote(path) + ": " + why +
             "; give an absolute directory you may write, for example $HOME/ckpt";
  }
  return false;
}

std::string encode_checkpoint(const JobCheckpoint& c) {
  return "signal=" + std::to_string(c.signal) + ",grace=" + std::to_string(c.grace_s) +
         ",lead=" + std::to_string(c.lead_s) + ",requeue=" + (c.requeue ? "1" : "0") +
         ",steps=" + (c.gpu_steps_only ? "gpu" : "all") + (c.dir.empty() ? "" : ",dir=" + c.dir);
}

std::optional<JobCheckpoint> decode_checkpoint(std::string_view text) {
  if (text.size() > kMaxEncodedCheckpoint) return std::nullopt;
  JobCheckpoint c;
  enum : unsigned { kSignal = 1, kGrace = 2, kLead = 4, kRequeue = 8, kSteps = 16 };
  unsigned seen = 0;
  const auto once = [&](unsigned key) {  // false for a key given twice
    if ((seen & key) != 0) return false;
    seen |= key;
    return true;
  };
  const auto seconds = [](std::string_view value) -> std::optional<int64_t> {
    const auto v = parse_int(value);
    if (!v || *v < 0 || *v > kMaxCheckpointSeconds) return std::nullopt;
    return v;
  };
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    const std::string_view key = item.substr(0, eq);
    const std::string_view value = item.substr(eq + 1);
    if (key == "dir") {  // last, and may hold commas: the rest of the text
      const std::string_view dir =
          comma == std::string_view::npos
              ? value
              : std::string_view(value.data(), value.size() + 1 + text.size());
      if (!valid_checkpoint_dir(dir, nullptr)) return std::nullopt;
      c.dir = std::string(dir);
      break;
    }
    if (key == "steps") {
      if (!once(kSteps) || (value != "gpu" && value != "all")) return std::nullopt;
      c.gpu_steps_only = value == "gpu";
    } else if (key == "signal") {
      const auto v = parse_int(value);
      if (!once(kSignal) || !v || *v < 1 || *v > 64 || !deliverable_signal(static_cast<int>(*v))) {
        return std::nullopt;
      }
      c.signal = static_cast<int>(*v);
    } else if (key == "grace") {
      const auto v = seconds(value);
      if (!once(kGrace) || !v) return std::nullopt;
      c.grace_s = *v;
    } else if (key == "lead") {
      const auto v = seconds(value);
      if (!once(kLead) || !v) return std::nullopt;
      c.lead_s = *v;
    } else if (key == "requeue") {
      if (!once(kRequeue) || (value != "0" && value != "1")) return std::nullopt;
      c.requeue = value == "1";
    }  // unknown keys: written by a newer version; ignored
  }
  if ((seen & kSignal) == 0) return std::nullopt;
  return c;
}

std::vector<std::pair<std::string, std::string>> checkpoint_environment(const JobCheckpoint& c,
                                                                        const CheckpointPolicy& p) {
  std::vector<std::pair<std::string, std::string>> env = {
      {std::string(kEnvSignal), signal_name(c.signal)},
      {std::string(kEnvGrace), std::to_string(c.grace_s)},
      {std::string(kEnvLead), std::to_string(c.lead_s)},
      {std::string(kEnvRequeue), c.requeue ? "1" : "0"},
      {std::string(kEnvSteps), c.gpu_steps_only ? "gpu" : "all"},
  };
  if (!c.dir.empty()) {
    env.emplace_back(p.dir_env, c.dir);
    env.emplace_back(std::string(kEnvNotice), c.dir + "/" + p.notice_file);
  }
  return env;
}

std::optional<JobCheckpoint> checkpoint_from_values(std::string_view signal, std::string_view grace,
                                                    std::string_view lead, std::string_view requeue,
                                                    std::string_view steps, std::string_view dir,
                                                    std::string_view notice) {
  if (signal.empty()) return std::nullopt;
  JobCheckpoint c;
  const auto signo = parse_signal(signal);
  if (!signo || *signo == SIGKILL || *signo == SIGSTOP || is_trigger(*signo)) return std::nullopt;
  c.signal = *signo;
  const auto bounded = [](std::string_view t, int64_t fallback) -> std::optional<int64_t> {
    if (t.empty()) return fallback;
    const auto v = parse_int(t);
    if (!v || *v < 0 || *v > kMaxCheckpointSeconds) return std::nullopt;
    return v;
  };
  const auto g = bounded(grace, 0);
  if (!g) return std::nullopt;
  c.grace_s = *g;
  const auto l = bounded(lead, c.grace_s);
  if (!l) return std::nullopt;
  c.lead_s = *l;
  if (!requeue.empty() && requeue != "0" && requeue != "1") return std::nullopt;
  c.requeue = requeue == "1";
  if (!steps.empty() && steps != "gpu" && steps != "all") return std::nullopt;
  c.gpu_steps_only = steps == "gpu";
  std::string_view d = dir;
  if (d.empty()) {
    if (const auto slash = notice.rfind('/'); slash != std::string_view::npos && slash > 0) {
      d = notice.substr(0, slash);
    }
  }
  if (!d.empty() && valid_checkpoint_dir(d, nullptr)) c.dir = std::string(d);
  return c;
}

std::optional<JobCheckpoint> resolve_checkpoint(const CheckpointRequest& req, const Policy& p,
                                                const QosRule* rule, std::string* error) {
  const bool preemptible = rule != nullptr && rule->preemptible;
  std::optional<CheckpointSignalOption> opt;
  if (!req.signal_option.empty()) {
    opt = parse_checkpoint_signal(req.signal_option, error);
    if (!opt) return std::nullopt;
  }
  if (req.user_signal != 0 && (preemptible || !req.dir_option.empty())) {
    // The promise replaces the job's --signal (its warn signal becomes the private trigger):
    // what Slurm would have sent must be a signal the promise can deliver, checked like
    // --checkpoint-signal; without --checkpoint-signal it is the checkpoint signal, delivered
    // our way, to the batch shell and the steps.
    const int64_t seconds = req.user_seconds > 0 ? req.user_seconds : int64_t{-1};
    const std::string given = signal_name(req.user_signal) +
                              (req.user_seconds > 0 ? "@" + std::to_string(req.user_seconds) : "");
    auto user = check_checkpoint_signal(req.user_signal, seconds, "--signal", given, error);
    if (!user) return std::nullopt;
    if (!opt) opt = user;
  }
  if (!req.dir_option.empty() && !valid_checkpoint_dir(req.dir_option, error)) {
    return std::nullopt;
  }
  if (!opt && req.dir_option.empty()) {
    // Without options, only a preemptible job with a grace has something to be promised: with
    // GraceTime 0 Slurm kills at once and there is no time to checkpoint.
    if (!preemptible || (rule != nullptr && p.grace_for(*rule) == 0)) return std::nullopt;
  }

  JobCheckpoint c;
  c.signal = opt ? opt->signal : p.checkpoint.signal;
  const int64_t qos_grace = rule != nullptr ? p.grace_for(*rule) : 0;
  c.grace_s = preemptible ? qos_grace : 0;
  if (opt && opt->seconds > 0) {
    if (preemptible && opt->seconds > qos_grace) {
      if (error != nullptr) {
        const std::string given =
            req.signal_option.empty()
                ? "--signal=" + signal_name(opt->signal) + "@" + std::to_string(opt->seconds)
                : "invalid --checkpoint-signal=" + quote(req.signal_option);
        *error = given + ": qos " + rule->name + " gives at most " + std::to_string(qos_grace) +
                 " s between the signal and the kill; use @" + std::to_string(qos_grace) +
                 " or less";
      }
      return std::nullopt;
    }
    if (preemptible) c.grace_s = opt->seconds;
    c.lead_s = opt->seconds;
  } else {
    c.lead_s = c.grace_s;
  }
  c.requeue = preemptible && req.requeue;
  c.gpu_steps_only = p.checkpoint.steps == SignalSteps::Gpu;
  c.dir = std::string(req.dir_option);
  return c;
}

std::string format_notice(const Notice& n) {
  std::string out;
  out += "SLURM_CHECKPOINT_REASON=" + std::string(reason_name(n.reason)) + "\n";
  out += "SLURM_CHECKPOINT_DEADLINE=" + std::to_string(n.deadline) + "\n";
  out += "SLURM_CHECKPOINT_REQUEUE=" + std::string(n.requeue ? "1" : "0") + "\n";
  out += "SLURM_CHECKPOINT_SIGNAL=" + signal_name(n.signal) + "\n";
  out += "SLURM_CHECKPOINT_GRACE=" + std::to_string(n.grace_s) + "\n";
  out += "SLURM_CHECKPOINT_RESTART_COUNT=" + std::to_string(n.restart_count) + "\n";
  out += "SLURM_JOB_ID=" + std::to_string(n.job_id) + "\n";
  // The notice is sourced by shells: a value is written only when it is a plain name.
  const auto plain = [](std::string_view v) {
    return !v.empty() && v.size() <= 64 && std::all_of(v.begin(), v.end(), [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '.' || ch == '_' ||
             ch == '-' || ch == '@';
    });
  };
  if (n.reason == NoticeReason::Preemption && n.preempted_by != 0) {
    out += "SLURM_CHECKPOINT_PREEMPTED_BY=" + std::to_string(n.preempted_by) + "\n";
    if (plain(n.preemptor_qos)) out += "SLURM_CHECKPOINT_PREEMPTOR_QOS=" + n.preemptor_qos + "\n";
    if (plain(n.preemptor_account)) {
      out += "SLURM_CHECKPOINT_PREEMPTOR_ACCOUNT=" + n.preemptor_account + "\n";
    }
    std::string reason = n.preempt_reason;
    std::replace(reason.begin(), reason.end(), ' ', '-');
    if (plain(reason)) out += "SLURM_CHECKPOINT_PREEMPT_REASON=" + reason + "\n";
  }
  const bool plain_name = plain(n.paused_by);
  if (n.reason == NoticeReason::Pause && plain_name) {
    out += "SLURM_CHECKPOINT_PAUSED_BY=" + n.paused_by + "\n";
    if (n.paused_by_admin) out += "SLURM_CHECKPOINT_PAUSED_BY_ADMIN=1\n";
  }
  return out;
}

bool sentinel_completing_notice(std::string_view proc_stat) {
  // "PID (COMM) STATE ...": COMM may hold spaces and parentheses, so it ends at the last ')'.
  const auto open = proc_stat.find('(');
  const auto close = proc_stat.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open ||
      close + 2 >= proc_stat.size() || proc_stat[close + 1] != ' ') {
    return false;
  }
  const char state = proc_stat[close + 2];
  return proc_stat.substr(open + 1, close - open - 1) == kSentinelBusyComm && state != 'Z' &&
         state != 'X' && state != 'x';
}

std::optional<uint64_t> parse_sigcgt(std::string_view status) {
  constexpr std::string_view kKey = "SigCgt:";
  while (!status.empty()) {
    const auto nl = status.find('\n');
    std::string_view line = status.substr(0, nl);
    status = nl == std::string_view::npos ? std::string_view() : status.substr(nl + 1);
    if (!line.starts_with(kKey)) continue;
    line.remove_prefix(kKey.size());
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    uint64_t mask = 0;
    if (line.empty() || line.size() > 16) return std::nullopt;
    const auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), mask, 16);
    if (ec != std::errc() || p != line.data() + line.size()) return std::nullopt;
    return mask;
  }
  return std::nullopt;
}

std::string step_mark(uint32_t job_id, std::optional<uint32_t> step_id, uint32_t restart_count) {
  return std::to_string(job_id) + "." + (step_id ? std::to_string(*step_id) : "batch") + "." +
         std::to_string(restart_count);
}

bool environ_has_mark(std::string_view environ, std::string_view mark) {
  while (!environ.empty()) {
    const auto nul = environ.find('\0');
    std::string_view entry = environ.substr(0, nul);
    environ = nul == std::string_view::npos ? std::string_view() : environ.substr(nul + 1);
    if (entry.size() == kEnvStepMark.size() + 1 + mark.size() && entry.starts_with(kEnvStepMark) &&
        entry[kEnvStepMark.size()] == '=' && entry.ends_with(mark)) {
      return true;
    }
  }
  return false;
}

bool should_deliver(const ProcessFacts& proc, const StepFacts& step, bool gpu_steps_only) {
  if (!proc.catches_signal || proc.slurm_client) return false;
  if (proc.is_batch_shell) return true;
  return step.has_gpus || !gpu_steps_only;
}

bool ignores_triggers(const TaskPromiseFacts& t) {
  return t.signal_env || t.option || t.control_env;
}

std::string format_utc(int64_t epoch) {
  const auto t = static_cast<std::time_t>(epoch);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string note_preempted(int64_t at, uint32_t by_job, std::string_view by_qos,
                           std::string_view by_account, const JobCheckpoint& c,
                           std::string_view reason) {
  std::string by = by_job != 0 ? "JobId=" + std::to_string(by_job) : std::string("a job");
  if (!by_qos.empty() || !by_account.empty()) {
    by += " (qos " + std::string(by_qos.empty() ? "?" : by_qos) + ", account " +
          std::string(by_account.empty() ? "?" : by_account) +
          (reason.empty() ? std::string() : ", " + std::string(reason)) + ")";
  }
  return "preempted at " + format_utc(at) + " by " + by + ": signal " + signal_name(c.signal) +
         ", grace " + std::to_string(c.grace_s) + " s";
}

namespace {
std::string requeued_as(uint32_t restart, bool held) {
  return held ? ", requeued held as restart " + std::to_string(restart) + " (paused)"
              : ", requeued as restart " + std::to_string(restart);
}
}  // namespace

std::string note_exited_in_grace(int64_t at, int exit_status, bool requeued, uint32_t restart,
                                 bool held) {
  std::string out =
      "exited in time at " + format_utc(at) + " (exit " + std::to_string(exit_status) + ")";
  out += requeued ? requeued_as(restart, held) : std::string(", not requeued (no --requeue)");
  return out;
}

std::string note_exited_finished(int64_t at) {
  return "exited in time at " + format_utc(at) + " (exit 0), finished: not requeued";
}

std::string note_killed_at_grace_end(int64_t at, bool requeue, uint32_t restart, bool held) {
  return "killed at grace end " + format_utc(at) +
         (requeue ? requeued_as(restart, held) : std::string(", cancelled (no --requeue)"));
}

std::string note_requeued_by_job(uint32_t restart) {
  return "requeued by the job itself (scontrol requeue) as restart " + std::to_string(restart);
}

std::string note_requeued_at_pause_end(uint32_t restart) {
  return "requeued at its pause's grace end, held as restart " + std::to_string(restart) +
         " (paused)";
}

std::string note_run_lost_paused() { return "slurmctld lost this run in a restart: held (paused)"; }

}  // namespace sp

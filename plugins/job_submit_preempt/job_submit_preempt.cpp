// job_submit/preempt: the C ABI of the plugin (JobSubmitPlugins=preempt), and nothing else.
// init() loads the policy and creates the one plugin object (and, in slurmctld, the watcher
// thread); job_submit() turns the request into a view, asks lib/ for a decision and applies
// it; fini() destroys the object and stops the thread without waiting for it.
#include <algorithm>
#include <memory>
#include <string>

#include "decide.hpp"
#include "clock.hpp"
#include "guard.hpp"
#include "ctld_policy.hpp"
#include "slurm_log_sink.hpp"
#include "association.hpp"
#include "ctld_bus.hpp"
#include "slurm_locks.hpp"
#include "story_slot.hpp"
#include "submit_adapter.hpp"
#include "pause_adapter.hpp"
#include "watch_adapter.hpp"
#include "fault.hpp"
#include "plugin_memory.hpp"
#include "watcher.hpp"
#include "text.hpp"
#include "version.hpp"

extern "C" {
#include "config.h"
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "src/common/assoc_mgr.h"
#include "src/common/run_in_daemon.h"
#include "src/common/xstring.h"
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
  std::shared_ptr<sp::ControllerShared> shared;    // with the watcher thread, which outlives us
  std::unique_ptr<sp::PreemptionWatcher> watcher;  // slurmctld only; stopped, never joined
};

Plugin* g_plugin = nullptr;  // created in init(), destroyed in fini()

// Whether slurmctld runs its RPC queue (SlurmctldParameters=enable_rpc_queue): Slurm reads it
// once, at start (rpc_queue_init), and so does this, at the first submission, not at each.
bool rpc_queue_enabled() {
  static const bool enabled =
      xstrcasestr(slurm_conf.slurmctld_params, "enable_rpc_queue") != nullptr;
  return enabled;
}

}  // namespace

// Slurm calls init at start, and again (with slurmctld's write locks held) when
// JobSubmitPlugins changes at `scontrol reconfigure`. It starts from the policy the process
// holds (at start, preempt/quota's, read a moment before) and lets the watcher thread read the
// file again, outside the locks; with none held it reads the file: at start a bad one stops
// the daemon with its file:line:column (ctld_policy.hpp starting_policy).
extern "C" SP_EXPORT int init(void) {
  sp::SlurmLogSink boot_log{plugin_type};
  return sp::guard(&boot_log, "init", SLURM_ERROR, [&] {
    auto plugin = std::make_unique<Plugin>();
    plugin->shared = std::make_shared<sp::ControllerShared>();
    plugin->shared->log = std::make_shared<sp::SlurmLogSink>(plugin_type);
    sp::StartingPolicy start = sp::starting_policy(boot_log);
    if (!start.policy) return SLURM_ERROR;
    std::shared_ptr<const sp::Policy> policy = std::move(start.policy);
    const std::string loaded = std::string("loaded slurm-preempt ") + sp::kVersion + ", policy " +
                               policy->source + " (" + std::to_string(policy->qos.size()) +
                               " QOS rules, " + std::to_string(policy->owners.size()) +
                               " owner groups)";
    plugin->shared->policy.set(std::move(policy));
    // Stamp 0 (a policy held) makes the watcher's first tick read preempt.yaml again.
    plugin->shared->conf_stamp.store(start.stamp);
    if (running_in_slurmctld()) {
      // The watcher thread may outlive this plugin's unloading: keep its code mapped.
      if (const char* why = nullptr; !sp::pin_plugin_in_memory(&why)) {
        boot_log.log_error(std::string("cannot keep the plugin in memory (") + why +
                           "): the preemption watcher is not started");
      } else {
        plugin->watcher = std::make_unique<sp::PreemptionWatcher>(plugin->shared);
        plugin->shared->log->log_info("preemption watcher started (grace ends, requeue holds)");
      }
    }
    plugin->shared->log->log_info(loaded);
    delete g_plugin;
    g_plugin = plugin.release();
    return SLURM_SUCCESS;
  });
}

// May run with slurmctld's write locks held: stops the watcher without waiting for it.
extern "C" SP_EXPORT int fini(void) {
  delete g_plugin;
  g_plugin = nullptr;
  return SLURM_SUCCESS;
}

namespace {

// What the policy's story field refuses of a comment (lib/story_field.hpp comment_refusal), ""
// when allowed; operators (root and SlurmUser included) may write anything there.
std::string refused_comment(const sp::Policy& policy, const char* comment, const char* current,
                            uint32_t uid) {
  if (comment == nullptr) return "";
  std::string why = sp::comment_refusal(policy.story.field, comment, current ? current : "");
  if (!why.empty() && (uid == 0 || validate_operator(static_cast<uid_t>(uid)))) why.clear();
  return why;
}

}  // namespace

extern "C" SP_EXPORT int job_submit(job_desc_msg_t* job_desc, uint32_t submit_uid, char** err_msg) {
  if (g_plugin == nullptr || job_desc == nullptr) return SLURM_SUCCESS;
  constexpr int kInternalError = -2;
  const int rc = sp::guard(g_plugin->shared->log.get(), "job_submit", kInternalError, [&] {
    // Slurm calls it holding its five read locks (validate_job_create_req), but its job and
    // node write locks for a het job's components (het_job_offset set) and, with
    // SlurmctldParameters=enable_rpc_queue, for every batch submission (its RPC queue thread).
    static const std::size_t read_site = sp::lock_site("job_submit", sp::LockStats::Kind::Read);
    std::size_t site = read_site;
    if (job_desc->het_job_offset != NO_VAL || rpc_queue_enabled()) {
      static const std::size_t write_site =
          sp::lock_site("job_submit, write locks", sp::LockStats::Kind::Write);
      site = write_site;
    }
    const sp::HoldTimer held(site);
    sp::fault_point("job_submit");
    sp::ControllerShared& shared = *g_plugin->shared;
    // job_submit plugins get no reconfigure call in 22.05, but scontrol reconfigure moves
    // slurm_conf.last_update: the watcher thread reloads preempt.yaml (never here, under
    // Slurm's locks), told now (priority/fairshare tells it too, at the reconfigure itself).
    if (g_plugin->watcher && slurm_conf.last_update != shared.conf_stamp.load()) {
      sp::bus::reconfigures().told();
      g_plugin->watcher->wake();
    }
    const std::shared_ptr<const sp::Policy> policy = shared.policy.get();
    // Only this plugin writes the promise: whatever the request carries is dropped first.
    if (const uint32_t forged = sp::strip_promise(*job_desc); forged != 0) {
      shared.log->log_info("removed " + std::to_string(forged) + " " +
                           std::string(sp::kControlEnvName) +
                           " entries from the SPANK environment of the submission of uid " +
                           std::to_string(submit_uid) + " (job name " +
                           (job_desc->name ? sp::quote(job_desc->name) : std::string("unset")) +
                           "): only job_submit/preempt sets it");
    }
    if (std::string why = refused_comment(*policy, job_desc->comment, "", submit_uid);
        !why.empty()) {
      sp::SubmitDecision refused;  // logged and told as every refusal (apply)
      refused.verdict = sp::SubmitDecision::Verdict::Reject;
      refused.kind = sp::SubmitDecision::RejectKind::Access;
      refused.reason = std::move(why);
      return sp::apply(refused, *policy, *job_desc, err_msg, *shared.log);
    }
    sp::SubmitView view = sp::view_of(*job_desc, submit_uid);
    view.interactive_promise = xstrcmp(slurm_conf.priority_type, "priority/fairshare") == 0;
    sp::Association assoc;  // outlives the view, which borrows its names
    sp::add_association(view, *policy, assoc);
    const sp::SubmitDecision decision = sp::decide(view, *policy, shared.clock.now());
    return sp::apply(decision, *policy, *job_desc, err_msg, *shared.log);
  });
  if (rc != kInternalError) return rc;
  if (err_msg) {
    *err_msg = xstrdup(
        "job_submit/preempt hit an internal error (logged by slurmctld); "
        "the job was not submitted, please tell your administrator");
  }
  return SLURM_ERROR;
}

namespace {

// Who asks, by a name slurmctld already holds (lib/pause.hpp requester_name): never
// uid_to_string, whose passwd lookup may wait for the network inside the job write lock.
std::string requester_name(const job_record_t& job, uint32_t uid) {
  sp::RequesterNames n;
  n.uid = uid;
  n.owner_uid = job.user_id;
  n.owner_name = job.user_name != nullptr ? job.user_name : "";
  n.slurm_user_id = slurm_conf.slurm_user_id;
  n.slurm_user_name = slurm_conf.slurm_user_name != nullptr ? slurm_conf.slurm_user_name : "";
  assoc_mgr_lock_t users{};
  users.user = READ_LOCK;
  const sp::AssocLock lock(users);
  n.db_name = sp::user_name_in(assoc_mgr_user_list, uid);
  return sp::requester_name(n);  // a copy, made while the user list is still locked
}

// `scontrol update JobId=N Comment=slurm-preempt:pause|resume` (preemptctl pause/resume): the
// request never reaches the job's comment. Slurm checks who may update a job only after
// job_modify, so the rule is applied here first (lib/pause.hpp decides). A pending job is held
// or released by Slurm's own update (its priority: a user or admin hold by who asks); a
// running job gets its checkpoint signal now, as at a preemption's grace start, and the
// watcher requeues it held at the grace's end or when it exits.
int pause_or_resume(job_desc_msg_t& desc, job_record_t& job, uint32_t uid) {
  sp::ControllerShared& shared = *g_plugin->shared;
  const std::string name = "JobId=" + std::to_string(job.job_id);
  const std::string user = requester_name(job, uid);
  const auto req = sp::decode_pause_request(desc.comment);
  if (!req || sp::names_whole_array(desc, job)) {
    shared.log->log_info("refused the request " + sp::quote(desc.comment) + " for " + name +
                         " by " + user +
                         (req ? ": name array tasks one by one (preemptctl pause does)"
                              : ": not a pause or resume request preemptctl sends"));
    return static_cast<int>(ESLURM_NOT_SUPPORTED);
  }
  const char* const what = req->kind == sp::PauseRequest::Kind::Resume     ? "resume"
                           : req->kind == sp::PauseRequest::Kind::Finished ? "finished"
                                                                           : "pause";
  const auto promise = sp::promise_of(job);
  const sp::StoryField field = shared.policy.get()->story.field;
  sp::PauseJobView view = sp::pause_view_of(job, promise ? &*promise : nullptr, field);
  // Never asked of a het job (pause refuses them): for a pending leader, Slurm would pick and
  // keep its template component now.
  if (!view.het && (view.preempt != 0 || req->kind == sp::PauseRequest::Kind::Pause)) {
    const sp::PreemptEnd ends = sp::preempt_end(job);
    // A preempt time of a preemption that suspended the job (gang) began no grace.
    view.preempt = sp::grace_preempt_time(view.preempt, ends.suspends);
    // Decides only a running job's pause.
    view.preempt_requeues = req->kind == sp::PauseRequest::Kind::Pause && ends.requeues;
  }
  sp::PauseRequester who;
  who.uid = uid;
  who.operator_ = uid == 0 || validate_operator(static_cast<uid_t>(uid));
  // Asked only when it decides (neither the owner nor an operator): without assoc_mgr's user
  // list it would fetch one from slurmdbd, inside the job write lock.
  who.coordinator = uid != job.user_id && !who.operator_ && job.account != nullptr &&
                    assoc_mgr_is_user_acct_coord(acct_db_conn, uid, job.account);
  const sp::PauseDecision d = sp::decide_pause(view, who, *req);
  const auto now = static_cast<int64_t>(shared.clock.now());
  if (d.outcome == sp::PauseOutcome::Refused) {
    shared.log->log_info(std::string("refused ") + what + " by " + user + ": " +
                         sp::pause_error_text(d.error, job.job_id, view.promise_grace_s));
    return sp::pause_error_code(d.error);
  }
  // The comment stays what it was. Nothing else of the update changes here: Slurm runs one
  // update for every record of an array, and this record's decision must not carry over.
  xfree(desc.comment);
  switch (d.outcome) {
    case sp::PauseOutcome::AlreadyPaused:
      shared.log->log_info(name + " is paused already (asked again by " + user + ")");
      break;
    case sp::PauseOutcome::HoldPending:
      sp::hold_pending(job, who.operator_);  // JobHeldUser, or JobHeldAdmin for an operator
      sp::add_story_note(job, field, sp::note_paused(user, who.operator_, now, -1));
      shared.log->log_info(name + " " + sp::note_paused(user, who.operator_, now, -1));
      last_job_update = static_cast<time_t>(now);
      break;
    case sp::PauseOutcome::Release:
      sp::release_pause_hold(job);
      sp::add_story_note(job, field, sp::note_resumed(user, who.operator_, now));
      shared.log->log_info(name + " " + sp::note_resumed(user, who.operator_, now));
      last_job_update = static_cast<time_t>(now);
      break;
    case sp::PauseOutcome::StartPause: {
      const std::string note = sp::note_paused(user, who.operator_, now, d.grace_s);
      sp::add_story_note(job, field, note);
      // The grace starts as a preemption's would; the watcher, woken now, sends every step
      // (the batch shell included) the pause trigger and requeues the job held at its end.
      job.preempt_time = static_cast<time_t>(now);
      // Never past its time limit (as Slurm's own preemption: MIN(end_time, now + grace)).
      job.end_time = std::min(job.end_time, static_cast<time_t>(now + d.grace_s));
      last_job_update = static_cast<time_t>(now);
      shared.log->log_info(name + " " + note);
      // Told at once, so the watcher looks at this job now (not at its next scan).
      sp::WatchEvent e;
      e.kind = sp::WatchEvent::Kind::Pause;
      e.job_id = job.job_id;
      e.at = now;
      e.start = job.start_time;
      e.restarts = job.restart_cnt;
      sp::bus::publish(e);
      break;
    }
    case sp::PauseOutcome::MarkFinished: {
      // What the job says of its work, for the watcher: once per run is enough.
      const char* story = sp::story_text(job, field);
      const int64_t said = story != nullptr ? sp::last_finished_at(story) : 0;
      if (said != 0 && said >= static_cast<int64_t>(job.start_time)) {
        shared.log->log_info(name + " said its work is finished already (again by " + user + ")");
        break;
      }
      const std::string note = sp::note_finished(user, who.operator_, now);
      sp::add_story_note(job, field, note);
      shared.log->log_info(name + " " + note);
      last_job_update = static_cast<time_t>(now);
      break;
    }
    case sp::PauseOutcome::Refused: break;
  }
  return static_cast<int>(SLURM_SUCCESS);
}

}  // namespace

// scontrol update of a job: refuse what the policy forbids (a preemptible job in an owner's
// partition, a walltime over its QOS' maximum, ...). Routing is for submissions only, and
// root may override. 22.05 gives job_modify no message channel: the refusal is logged and
// the user sees the matching Slurm error.
extern "C" SP_EXPORT int job_modify(job_desc_msg_t* job_desc, job_record_t* job_ptr,
                                    uint32_t submit_uid) {
  if (g_plugin == nullptr || job_desc == nullptr || job_ptr == nullptr) return SLURM_SUCCESS;
  sp::ControllerShared& shared = *g_plugin->shared;
  // A pause or resume request is decided after the policy has judged the rest of the update
  // (the same update may try to change the QOS, licenses, ...).
  const bool pause = job_desc->comment != nullptr && sp::is_pause_request(job_desc->comment);
  const job_record_t* jp = job_ptr;
  if ((job_desc->time_limit != NO_VAL || job_desc->end_time != 0) && IS_JOB_RUNNING(jp) &&
      sp::may_hold_promise(*job_ptr)) {
    // A managed job's time limit (or end time) changes: the watcher looks at it once the update
    // is applied (it waits for the job write lock this update holds), to send the time-limit
    // trigger a raised limit is due or set its timer again, not at its next scan.
    (void)sp::guard(shared.log.get(), "job_modify", 0, [&] {
      sp::WatchEvent e;
      e.kind = sp::WatchEvent::Kind::LimitUpdate;
      e.job_id = job_ptr->job_id;
      e.at = static_cast<int64_t>(shared.clock.now());
      e.start = job_ptr->start_time;
      e.restarts = job_ptr->restart_cnt;
      sp::bus::publish(e);
      return 0;
    });
  }
  if (submit_uid == 0 && !pause) return SLURM_SUCCESS;
  return sp::guard(shared.log.get(), "job_modify", static_cast<int>(SLURM_ERROR), [&] {
    static const std::size_t site = sp::lock_site("job_modify", sp::LockStats::Kind::Write);
    const sp::HoldTimer held(site);  // inside Slurm's job write lock (_update_job)
    sp::fault_point("job_modify");
    if (submit_uid == 0) return pause_or_resume(*job_desc, *job_ptr, submit_uid);
    const std::shared_ptr<const sp::Policy> policy = shared.policy.get();
    if (const std::string why =
            pause ? std::string()
                  : refused_comment(*policy, job_desc->comment, job_ptr->comment, submit_uid);
        !why.empty()) {
      shared.log->log_info("refused an update of JobId=" + std::to_string(job_ptr->job_id) +
                           " by uid " + std::to_string(submit_uid) + ": " + why);
      return static_cast<int>(ESLURM_ACCESS_DENIED);
    }
    if (const std::string why = sp::quota_update_refusal(*policy, *job_desc, *job_ptr);
        !why.empty()) {
      shared.log->log_info("refused an update of JobId=" + std::to_string(job_ptr->job_id) +
                           " by uid " + std::to_string(submit_uid) + ": " + why);
      return static_cast<int>(ESLURM_INVALID_LICENSES);
    }
    if (!sp::update_touches_policy(*job_desc)) {
      return pause ? pause_or_resume(*job_desc, *job_ptr, submit_uid)
                   : static_cast<int>(SLURM_SUCCESS);
    }
    const sp::SubmitView view = sp::view_of_update(*job_desc, *job_ptr);
    const sp::SubmitDecision d = sp::decide(view, *policy, shared.clock.now());
    if (d.accepted()) {
      return pause ? pause_or_resume(*job_desc, *job_ptr, submit_uid)
                   : static_cast<int>(SLURM_SUCCESS);
    }
    // d.reason quotes what it echoes of the update (text.hpp): one bounded line.
    shared.log->log_info("refused an update of JobId=" + std::to_string(job_ptr->job_id) +
                         " by uid " + std::to_string(submit_uid) + ": " + d.reason);
    return sp::error_code(d.kind);
  });
}

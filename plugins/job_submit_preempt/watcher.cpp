#include "watcher.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <queue>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "checkpoint.hpp"
#include "ctld_bus.hpp"
#include "ctld_policy.hpp"
#include "quota.hpp"
#include "fault.hpp"
#include "job_state.hpp"
#include "preemption.hpp"
#include "slurm_list.hpp"
#include "slurm_locks.hpp"
#include "story_slot.hpp"
#include "watch.hpp"
#include "watch_adapter.hpp"

extern "C" {
#include "config.h"
#include <slurm/slurm.h>

#include "src/common/hostlist.h"
#include "src/common/list.h"
#include "src/common/node_conf.h"
#include "src/common/slurm_accounting_storage.h"
#include "src/slurmctld/acct_policy.h"
#include "src/common/slurm_cred.h"
#include "src/common/xstring.h"
#include "src/slurmctld/agent.h"
#include "src/slurmctld/preempt.h"
#include "src/slurmctld/slurmctld.h"
#include "src/slurmctld/state_save.h"

// controller.c: the time this slurmctld took control ("Running as primary controller", a
// backup's takeover too), reset to 0 at the start of each switch between the primary and the
// backup mode. The daemon exports it; no header declares it.
extern time_t control_time;
}

namespace sp {
namespace {

// Sends `signo` to every step of the job but the extern one (whose placeholder process does not
// ignore it) and, unless `with_batch`, the batch step. Asynchronous: Slurm's agent sends it.
void signal_steps(job_record_t& job, int signo, bool with_batch) {
  if (job.step_list == nullptr) return;
  ListWalk<step_record_t> steps(job.step_list);
  while (auto* step = steps.next()) {
    const uint32_t id = step->step_id.step_id;
    if (id == SLURM_EXTERN_CONT || (id == SLURM_BATCH_SCRIPT && !with_batch)) continue;
    slurm_step_id_t step_id = step->step_id;
    (void)job_step_signal(&step_id, static_cast<uint16_t>(signo), 0, slurm_conf.slurm_user_id);
  }
}

// The job whose preemption of others began in [from, to]: the victim's preemptor. It may be
// pending, running, or even done already when the victim left early. A walk of the job list,
// once per preemption.
const job_record_t* preemptor_of(const job_record_t& victim, time_t from, time_t to) {
  const job_record_t* best = nullptr;
  for_each_ro<job_record_t>(job_list, [&](const job_record_t* j) {
    if (j == &victim || j->details == nullptr) return true;
    const time_t t = j->details->preempt_start_time;
    if (t == 0 || t < from || t > to) return true;
    if (best == nullptr || j->priority > best->priority) best = j;
    return true;
  });
  return best;
}

// The note for a preemption of `victim` that began at `at`, by `by` (nullptr: not found),
// with the policy's reason for it. `terms`: the signal and grace the job got (its promise, or
// lib/watch.hpp at_once_terms).
std::string preempted_note(time_t at, const job_record_t& victim, const job_record_t* by,
                           const JobCheckpoint& terms, const Policy& policy) {
  const auto qos_of = [](const job_record_t* j) -> std::string_view {
    return j && j->qos_ptr && j->qos_ptr->name ? j->qos_ptr->name : "";
  };
  PreemptionParties who;
  who.by_qos = qos_of(by);
  who.by_account = by && by->account ? by->account : "";
  who.by_partition = by && by->part_ptr && by->part_ptr->name ? by->part_ptr->name : "";
  who.victim_qos = qos_of(&victim);
  who.victim_account = victim.account ? victim.account : "";
  return note_preempted(at, by ? by->job_id : 0, who.by_qos, who.by_account, terms,
                        preemption_reason(policy, who));
}

// A paused job's requeue: held (JobHeldUser; JobHeldAdmin when an administrator paused it),
// so it never starts by itself; preemptctl resume releases it. Slurm's return code, which
// requeue_held_line says.
int requeue_held(job_record_t& job, bool admin) {
  const int rc = job_requeue(0, job.job_id, nullptr, false, JOB_REQUEUE_HOLD);
  if (rc != SLURM_SUCCESS) return rc;
  if (admin) job.state_reason = WAIT_HELD;
  // squeue then shows the reason's name (JobHeldUser / JobHeldAdmin), not "job requeued in
  // held state"; AdminComment tells the pause.
  xfree(job.state_desc);
  return rc;
}

std::string requeue_held_line(int rc, bool admin) {
  if (rc != SLURM_SUCCESS) return "its requeue was refused: " + std::string(slurm_strerror(rc));
  return admin ? "paused: requeued held (admin hold)" : "paused: requeued held";
}

// What job_signal() sends a running job's nodes (job_mgr.c _signal_job), which it refuses for
// a job that is no longer running. slurmd signals, for KILL_STEPS_ONLY, every step but the
// batch one, and for KILL_FULL_JOB, the batch script's process group.
void queue_node_signal(const job_record_t& job, bitstr_t* nodes, int signo, uint16_t flags) {
  auto* msg = static_cast<signal_tasks_msg_t*>(xmalloc(sizeof(signal_tasks_msg_t)));
  msg->step_id.job_id = job.job_id;
  msg->step_id.step_id = slurm_conf.max_step_cnt + 1;  // no step: the flags say which
  msg->step_id.step_het_comp = NO_VAL;
  msg->flags = flags;
  msg->signal = static_cast<uint16_t>(signo);
  auto* agent = static_cast<agent_arg_t*>(xmalloc(sizeof(agent_arg_t)));
  agent->msg_type = REQUEST_SIGNAL_TASKS;
  agent->retry = 1;
  agent->hostlist = hostlist_create(nullptr);
  agent->protocol_version = SLURM_PROTOCOL_VERSION;
  for (int i = 0; i < node_record_count; ++i) {
    if (!bit_test(nodes, i) || node_record_table_ptr[i] == nullptr) continue;
    agent->protocol_version =
        std::min(agent->protocol_version, node_record_table_ptr[i]->protocol_version);
    hostlist_push_host(agent->hostlist, node_record_table_ptr[i]->name);
    agent->node_count++;
  }
  if (agent->node_count == 0) {
    hostlist_destroy(agent->hostlist);
    xfree(msg);
    xfree(agent);
    return;
  }
  agent->msg_args = msg;
  set_agent_arg_r_uid(agent, SLURM_AUTH_UID_ANY);
  agent_queue_request(agent);
}

// Kills every process of the job still on its completing nodes.
void kill_lingering(const job_record_t& job) {
  bitstr_t* nodes = job.node_bitmap_cg ? job.node_bitmap_cg : job.node_bitmap;
  if (nodes == nullptr) return;
  queue_node_signal(job, nodes, SIGKILL, KILL_STEPS_ONLY);
  if (job.batch_flag) queue_node_signal(job, nodes, SIGKILL, KILL_FULL_JOB);
}

std::string job_name(uint32_t id) { return "JobId=" + std::to_string(id); }

// Slurm logged the ended run's accounting record before the watcher's notes of it: log it again
// with them, in the state Slurm logged it in (_job_requeue_op: PREEMPTED, then back to the
// requeue's). Nothing once Slurm has set up the next run's record.
void account_run_again(job_record_t& job, bool requeued) {
  if (job.db_index == 0) return;
  const uint32_t state = job.job_state;
  if (requeued) job.job_state = JOB_PREEMPTED;
  (void)jobacct_storage_g_job_complete(acct_db_conn, &job);
  job.job_state = state;
}

constexpr int64_t kLockStatsPeriod = 10;  // s between two writes of slurm_preempt_lock_stats

// The cost of one whole tick, lock waits and holds included, into bus::lock_stats():
// "watcher tick" every tick; "watcher tick, no grace" the ticks in which no job was in a grace
// (or draining) and that neither scanned the job list (every 30 s, "watcher scan"), wrote the
// lock-stats file (every 10 s), logged its mode and read the state file (the first tick) nor
// read preempt.yaml again (after a reconfigure): what the watcher costs a cluster with nothing
// to do.
class TickCost {
 public:
  explicit TickCost(bool in_grace) noexcept : in_grace_(in_grace) {}
  ~TickCost() {
    static const std::size_t all = lock_site("watcher tick", LockStats::Kind::None);
    static const std::size_t idle = lock_site("watcher tick, no grace", LockStats::Kind::None);
    const CostClock::Since cost = clock_.read();  // one reading for both sites
    CostClock::record(all, cost);
    if (!in_grace_ && !busy_) CostClock::record(idle, cost);
  }
  void grace(bool in_grace) noexcept { in_grace_ = in_grace_ || in_grace; }
  void busy() noexcept { busy_ = true; }  // scanned, wrote or read a file
  TickCost(const TickCost&) = delete;
  TickCost& operator=(const TickCost&) = delete;

 private:
  bool in_grace_;
  bool busy_ = false;
  CostClock clock_;
};

}  // namespace

PreemptEnd preempt_end(const job_record_t& job) {
  const job_record_t* jp = &job;
  const uint16_t mode = slurm_job_preempt_mode(const_cast<job_record_t*>(jp));
  PreemptEnd e;
  e.requeues = IS_JOB_RUNNING(jp) && mode == PREEMPT_MODE_REQUEUE;
  e.suspends = preemption_suspends(mode, slurm_conf.preempt_mode);
  return e;
}

namespace {

// The scan's preemption_suspends (scan_facts), under the job read lock alone: asked only of a
// job with a preempt time, and never of a heterogeneous job's leader whose template component
// Slurm has not picked yet (slurm_job_preempt_mode would store it in the record): the scan
// visits such a job, and the visit asks (preempt_end). `gang`: slurm.conf's PreemptMode has
// GANG, as the tick read it.
bool scan_suspends(const job_record_t& job, bool gang) {
  if (!gang || job.preempt_time == 0) return false;
  if (job.het_job_list != nullptr && job.job_preempt_comp == nullptr) return false;
  const uint16_t mode = slurm_job_preempt_mode(const_cast<job_record_t*>(&job));
  return preemption_suspends(mode, PREEMPT_MODE_GANG);
}

// When the job's grace began (lib/watch.hpp grace_preempt_time), under the job read lock.
int64_t grace_began(const job_record_t& job, bool gang) {
  return grace_preempt_time(static_cast<int64_t>(job.preempt_time), scan_suspends(job, gang));
}

// Whether the job's visit at `now` kills it at its grace's end (lib/watch.hpp grace_over, on
// Slurm's fields: its end time is the grace end, shortened by the watcher at grace start).
// Caller holds the job read lock at least.
bool grace_over_now(uint32_t id, int64_t now, bool gang) {
  const job_record_t* job = find_job_record(id);
  return job != nullptr && grace_over(IS_JOB_RUNNING(job), grace_began(*job, gang),
                                      static_cast<int64_t>(job->end_time), now);
}

}  // namespace

// Both tell slurmdbd of the change as Slurm's own hold does, but through
// jobacct_storage_job_start_direct: for a job slurmdbd has not numbered yet (db_index 0: just
// submitted, just requeued, or submitted while slurmdbd was down) the plain call waits for
// slurmdbd's answer, here under the job write lock; the direct one sends nothing then, and
// Slurm's own thread that numbers the job records it as it is by that time.
void hold_pending(job_record_t& job, bool admin) {
  const time_t now = time(nullptr);
  job.direct_set_prio = 1;
  job.priority = 0;
  if (job.details != nullptr && job.details->begin_time < now) job.details->begin_time = 0;
  (void)jobacct_storage_job_start_direct(acct_db_conn, &job);
  const job_record_t* jp = &job;
  if (IS_JOB_PENDING(jp)) acct_policy_remove_accrue_time(&job, false);
  if (job.part_ptr_list != nullptr && job.priority_array != nullptr) {
    const int n = list_count(job.part_ptr_list);
    for (int i = 0; i < n; ++i) job.priority_array[i] = 0;
  }
  job.state_reason = admin ? WAIT_HELD : WAIT_HELD_USER;
  xfree(job.state_desc);
}

void release_pause_hold(job_record_t& job) {
  const time_t now = time(nullptr);
  if (job.details != nullptr && job.details->begin_time < now) job.details->begin_time = 0;
  job.direct_set_prio = 0;
  set_job_prio(&job);
  job.state_reason = WAIT_NO_REASON;
  job.job_state &= ~JOB_SPECIAL_EXIT;
  xfree(job.state_desc);
  job.exit_code = 0;
  (void)jobacct_storage_job_start_direct(acct_db_conn, &job);
}

// What visiting one job did: changed it (save the job state), and can let a pending job start
// (ask for a pass of the main scheduler: WatchAction::may_start_a_job).
struct Visited {
  bool changed = false;
  bool may_start = false;
  bool killed = false;  // a grace's end: the visit decided a kill (done in the next hold)
  Visited& operator|=(const Visited& o) {
    changed |= o.changed;
    may_start |= o.may_start;
    killed |= o.killed;
    return *this;
  }
};

struct PreemptionWatcher::Impl {
  explicit Impl(std::shared_ptr<ControllerShared> s) : shared(std::move(s)) {}

  // A managed job's time-limit trigger, due at `when` (end time - lead) for the run `start`.
  struct Timer {
    int64_t when = 0;
    uint32_t id = 0;
    int64_t start = 0;
    bool operator>(const Timer& o) const { return when > o.when; }
  };
  struct Armed {
    int64_t start = 0;
    int64_t lead = 0;  // 0: the job has no time-limit signal
    int64_t when = 0;
  };

  std::shared_ptr<ControllerShared> shared;
  KeptState state;  // records worth keeping (lib/watch.hpp worth_keeping) and draining jobs
  // The control period (control_time) in which the state file was read, once Slurm's state
  // was loaded; 0: not read (lib/watch.hpp control_step).
  int64_t held_period = 0;
  bool held_ended = false;      // held_period was seen not acting (lib/watch.hpp control_step)
  bool sole_controller = true;  // slurm.conf names one SlurmctldHost (read with events_mode)
  bool recovered = false;       // the first scan, with restart recovery, is done
  bool policy_checked = false;
  // The policy was read in the second of slurm.conf's stamp: read again once it is over. At
  // start too (init read it): a reconfigure in the second slurmctld started moves no stamp.
  bool recheck_conf = true;
  bool events_mode = false;  // PreemptType=preempt/quota tells grace starts (ctld_bus.hpp)
  bool gang = false;         // slurm.conf's PreemptMode has GANG (read with events_mode)
  bool mode_logged = false;
  bool wait_logged = false;        // the wait for control is logged (once per wait)
  std::string state_path;          // set by the first read of slurm.conf (with events_mode)
  uint64_t seen_reconfigures = 0;  // bus::reconfigures().count() at the last read of slurm.conf
  std::atomic<int64_t> next_grace_end{0};              // earliest end of a running grace; 0: none
  int64_t next_scan = 0;                               // when the whole job list is scanned next
  std::set<uint32_t> active;                           // jobs looked at every tick (needs_watching)
  std::unordered_map<uint32_t, RunRecord> event_runs;  // runs a grace-start event named
  std::unordered_map<uint32_t, uint32_t> preemptors;   // victim -> preemptor, from events
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers;
  std::unordered_map<uint32_t, Armed> armed;  // the time-limit timer of each running job
  std::vector<WatchEvent> events;             // scratch, reused
  std::vector<uint32_t> visits;               // scratch, reused
  int64_t next_grace = 0;                     // scratch of one tick's visits
  // A kill at a grace's end a visit decided, done in the hold that follows the visit's.
  struct PendingKill {
    DueKill due;
    uint16_t mode = 0;  // slurm_job_preempt_mode at the visit
    bool hold = false;  // a pause's: requeued held
    bool hold_admin = false;
    StoryField field{};
    std::string note;       // the kill's story note (managed jobs); empty: none
    int64_t run_start = 0;  // the run's key in bus::preempted_runs()
  };
  std::optional<PendingKill> pending_kill;
  int64_t last_stats = 0;

  LogSink& log() const { return *shared->log; }

  // Until the next tick (lib/watch.hpp): 1 s, or just past the second the next grace ends;
  // with nothing to follow, until the next scan, time-limit trigger or lock-stats write. Grace
  // starts, pauses, run ends and reconfigures wake the thread at once (ctld_bus.hpp). Asked by
  // the watcher's own thread, between two ticks.
  std::chrono::milliseconds until_next_tick() {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    // A timer of a run that is over or was set again wakes nobody (tick pops the due ones).
    while (!timers.empty() && !timer_is_set(timers.top())) timers.pop();
    WatcherLoad load;
    load.events = events_mode;
    load.reconfigures_told = bus::reconfigures().has_teller();
    load.recovered = recovered;
    load.recheck_conf = recheck_conf;
    load.following = !active.empty() || !state.draining().empty();
    const int64_t idle = idle_until(load, next_scan, timers.empty() ? 0 : timers.top().when,
                                    last_stats + kLockStatsPeriod);
    return std::chrono::milliseconds(
        next_tick_wait_ms(next_grace_end.load(), idle, static_cast<int64_t>(shared->clock.now()),
                          std::chrono::duration_cast<std::chrono::milliseconds>(now).count()));
  }

  // Whether the timer is the one set for its job's current run (not replaced nor dropped).
  bool timer_is_set(const Timer& t) const {
    const auto a = armed.find(t.id);
    return a != armed.end() && a->second.start == t.start && a->second.when == t.when;
  }
  void tick(const std::atomic<bool>& stopping);
  void give_up_control();
  bool acting_in_period();
  bool must_leave(const std::atomic<bool>& stopping);
  bool may_write_state(const std::atomic<bool>& stopping);
  void load_state();
  void save_state(const std::string& text);
  bool write_lock_stats(int64_t now);
  // Under the job read lock: the jobs of the whole list that need a visit, and new timers.
  void scan(int64_t now, int cred_lifetime, bool recovering);
  void arm(const job_record_t& job, const JobCheckpoint* promise);
  // Under the write locks, a hold's budget at a time (kVisitBudget): begin_visits, then each
  // job of `visits` once (visit_id: what it did to the job), then end_visits (the draining
  // jobs, and when the next grace ends).
  void begin_visits();
  // Once, under read locks of its own before the first visit: logs what of the policy Slurm
  // does not know (slurm_config_problem reads the partition and node tables).
  void check_policy_once();
  Visited visit_id(uint32_t id, int64_t now, int cred_lifetime, bool recovering);
  // A job Slurm no longer has: its record, timer and preemptor go. Returns the record after
  // its own.
  RunMap::const_iterator forget_job(uint32_t id);
  void end_visits(int64_t now);
  Visited visit(job_record_t& job, int64_t now, int cred_lifetime, bool recovering);
  void apply(job_record_t& job, const JobCheckpoint* promise, const WatchAction& a, int64_t now);
  std::string kill_due(int64_t now);
  void put_back_failed_kill();
  const job_record_t* preemptor_for(const job_record_t& victim, int64_t from, int64_t to) const;
};

// Whether this slurmctld has loaded Slurm's state (read_slurm_conf, under all of Slurm's write
// locks: call with at least one of them held for reading). The job_submit plugin, and with it
// this thread, starts before: slurmctld then has an empty job list (init_job_conf, when
// accounting goes through slurmdbd) but no job hash, and find_job_record divides by the hash's
// size, 0 until read_slurm_conf's rehash_jobs. That gap lasts as long as slurmctld's start
// waits for slurmdbd, and a backup controller stays in it until it takes over. The partition
// list is made by the same read_slurm_conf.
namespace {
bool slurm_state_loaded() { return job_list != nullptr && part_list != nullptr; }

// This slurmctld's control period: when it took control (0 in standby, or before it first
// took control). Read without a lock, as Slurm's own threads read these globals.
int64_t control_period() {
  return static_cast<int64_t>(__atomic_load_n(&control_time, __ATOMIC_RELAXED));
}

// In control, and no shutdown or hand-over under way. A hand-over begins with resume_backup
// (REQUEST_CONTROL: the primary, back, asks the backup in control) or the shutdown time
// (REQUEST_SHUTDOWN: a backup that takes over asks the primary; SIGTERM). The other controller
// reads Slurm's state, and the watcher's file, after this one has saved Slurm's.
bool acting() {
  return control_period() != 0 &&
         !__atomic_load_n(&slurmctld_config.resume_backup, __ATOMIC_RELAXED) &&
         __atomic_load_n(&slurmctld_config.shutdown_time, __ATOMIC_RELAXED) == 0;
}
}  // namespace

// A hold of Slurm's locks that must touch no job: fini() ran while the thread waited for them,
// Slurm's state is not loaded, or this slurmctld is no longer acting in the control period
// the watcher's records are of.
bool PreemptionWatcher::Impl::must_leave(const std::atomic<bool>& stopping) {
  const bool ended = !acting_in_period();
  return stopping.load() || job_list == nullptr || ended || held_ended ||
         control_period() != held_period;
}

// acting(), noting that the period the records are of stopped acting (held_ended).
bool PreemptionWatcher::Impl::acting_in_period() {
  const bool now = acting();
  if (held_period != 0 && !now) held_ended = true;
  return now;
}

// The state file is written while the watcher acts in its period, and during a sole
// controller's own shutdown (no other controller reads the file). Once a hand-over has begun
// the other controller may be reading it: what that leaves unsaved is rebuilt from Slurm's job
// state, as after a crash.
bool PreemptionWatcher::Impl::may_write_state(const std::atomic<bool>& stopping) {
  if (!must_leave(stopping)) return true;
  return sole_controller && !stopping.load() && held_period == control_period();
}

// The watcher's records are of a control period that is over: this slurmctld gave control
// back (a backup, when the primary returns) and what it followed is the other controller's
// now, while its copy of the job list stays as it was until a next takeover replaces it; or
// it took control again after a standby the watcher slept through. Forgets all of it; the
// first tick in control reads the state file again.
void PreemptionWatcher::Impl::give_up_control() {
  state.replace_saved(WatchState{});
  held_period = 0;
  held_ended = false;
  recovered = false;
  policy_checked = false;
  next_scan = 0;
  active.clear();
  event_runs.clear();
  preemptors.clear();
  timers = {};
  armed.clear();
  pending_kill.reset();
  next_grace_end.store(0);
  (void)bus::events().drain(events);
  events.clear();
  bus::preempted_runs().clear();
  log().log_info(
      "this slurmctld gave up control: the watcher forgets the jobs it followed and "
      "waits; it reads " +
      state_path + " again when this slurmctld takes control");
}

void PreemptionWatcher::Impl::load_state() {
  std::ifstream in(state_path);
  if (!in) {
    log().log_info("no watcher state at " + state_path + ": starting with none");
    return;
  }
  std::stringstream text;
  text << in.rdbuf();
  std::string error;
  if (auto s = decode_watch_state(text.str(), &error)) {
    state.replace_saved(std::move(*s));
    // A restart forgot which runs preempt/quota told are in a grace: the graces these records
    // saw, so that a run Slurm's own grace check ends first is still known killed (refund).
    for (const auto& [id, r] : state.runs()) {
      if (r.triggered && !r.settled && !r.paused && r.grace_end > 0) {
        bus::preempted_runs().remember(id, r.start, r.preempt, r.grace_end);
      }
    }
    log().log_info("watcher state read from " + state_path + ": " +
                   std::to_string(state.runs().size()) + " runs, " +
                   std::to_string(state.draining().size()) + " draining");
  } else {
    log().log_error("cannot read " + state_path + ": " + error +
                    "; rebuilding what it held from Slurm's job state");
  }
}

void PreemptionWatcher::Impl::save_state(const std::string& text) {
  const std::string tmp = state_path + ".new";
  FILE* f = std::fopen(tmp.c_str(), "w");
  bool ok = f != nullptr && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (f != nullptr) ok = (std::fflush(f) == 0) && ok && (fdatasync(fileno(f)) == 0);
  if (f != nullptr) ok = (std::fclose(f) == 0) && ok;
  if (ok && std::rename(tmp.c_str(), state_path.c_str()) == 0) {
    state.saved();
    return;
  }
  log().log_error("cannot write " + state_path + ": a slurmctld restart now may lose a grace");
}

// StateSaveLocation/slurm_preempt_lock_stats, every 10 s: how long our code held slurmctld's
// locks, per site (bench/scale reads it). Written outside every lock.
bool PreemptionWatcher::Impl::write_lock_stats(int64_t now) {
  if (now < last_stats + kLockStatsPeriod) return false;
  last_stats = now;
  const std::string path =
      state_path.substr(0, state_path.rfind('/') + 1) + "slurm_preempt_lock_stats";
  const std::string text = LockStats::format(bus::lock_stats().snapshot());
  const std::string tmp = path + ".new";
  if (FILE* f = std::fopen(tmp.c_str(), "w")) {
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (std::fclose(f) == 0 && ok) (void)std::rename(tmp.c_str(), path.c_str());
  }
  return true;
}

void PreemptionWatcher::Impl::tick(const std::atomic<bool>& stopping) {
  TickCost cost(next_grace_end.load() != 0);
  // Set again by the visits (end_visits). A tick that returns before them has no job in a
  // grace to visit (those are visited every tick); one that fails leaves no stale grace end
  // that would wake the thread every kTickRetryMs.
  next_grace_end.store(0);
  // Only the controller in control follows jobs (lib/watch.hpp control_step).
  const bool acting_now = acting_in_period();
  switch (control_step(control_period(), acting_now, held_period, held_ended)) {
    case ControlStep::Wait:
      // Logged once per wait in standby (or before the first takeover); not in a shutdown.
      if (!wait_logged && control_period() == 0) {
        wait_logged = true;
        log().log_info(
            "the watcher waits for this slurmctld to run as the controller in control: it "
            "follows no job until then");
      }
      return;
    case ControlStep::Forget:
      cost.busy();
      give_up_control();
      return;
    case ControlStep::Act: wait_logged = false; break;
  }
  // This tick scans the whole list if the scan is due now: decided once, for the read of
  // slurm.conf below and for the scan itself.
  const bool recovering = !recovered;
  const bool scanning = recovering || static_cast<int64_t>(shared->clock.now()) >= next_scan;
  // slurm.conf's stamp, under the config read lock, when lib/watch.hpp reads_slurm_conf says.
  const uint64_t reconfigures = bus::reconfigures().count();
  time_t conf_stamp = shared->conf_stamp.load();
  if (reads_slurm_conf(!state_path.empty(), bus::reconfigures().has_teller(),
                       reconfigures != seen_reconfigures, recheck_conf, scanning)) {
    const CtldLock conf({READ_LOCK, NO_LOCK, NO_LOCK, NO_LOCK, NO_LOCK});
    if (stopping.load()) return;
    conf_stamp = slurm_conf.last_update;
    events_mode = xstrcmp(slurm_conf.preempt_type, "preempt/quota") == 0;
    gang = (slurm_conf.preempt_mode & PREEMPT_MODE_GANG) != 0;
    sole_controller = slurm_conf.control_cnt < 2;
    if (state_path.empty()) {
      const char* dir = slurm_conf.state_save_location ? slurm_conf.state_save_location : ".";
      state_path = std::string(dir) + "/job_submit_preempt_state";
    }
    seen_reconfigures = reconfigures;
  }
  if (!mode_logged) {
    cost.busy();
    mode_logged = true;
    log().log_info(events_mode
                       ? "preempt/quota tells grace starts: the watcher follows the jobs in a "
                         "grace or a requeue hold and scans the job list every 30 s"
                       : "PreemptType is not preempt/quota: nothing tells the watcher when a "
                         "grace starts, so it scans the whole job list every second (set "
                         "PreemptType=preempt/quota)");
  }
  if (held_period == 0) {
    // Nothing of Slurm's tables before Slurm has loaded them (slurm_state_loaded), nor the
    // state file: a backup controller reads it when it takes over, not at its own start.
    cost.busy();
    {
      const CtldLock read({NO_LOCK, READ_LOCK, NO_LOCK, NO_LOCK, NO_LOCK}, "watcher start",
                          "watcher lock wait");
      if (stopping.load() || !slurm_state_loaded() || !acting()) return;
    }
    const int64_t period = control_period();
    load_state();
    held_period = period;
    held_ended = false;
  }
  // A reconfigure happened: read preempt.yaml again, here, with no Slurm lock held. The stamp
  // has one-second resolution: a read in the very second of a reconfigure is repeated once
  // after that second, so a second reconfigure within it is not missed.
  const time_t now_s = static_cast<time_t>(shared->clock.now());
  if (conf_stamp != shared->conf_stamp.load() || (recheck_conf && now_s > conf_stamp)) {
    recheck_conf = now_s <= conf_stamp;
    cost.busy();
    reload_policy(log(), shared->policy, conf_stamp);
    shared->conf_stamp.store(conf_stamp);
  }
  // What to look at: the jobs events named, the jobs in a grace or a requeue hold, the
  // time-limit timers that are due, and every 30 s (every second without events) what a scan
  // of the whole list finds. With nothing to look at, no lock is taken.
  events.clear();
  if (const std::size_t dropped = bus::events().drain(events); dropped != 0) {
    log().log_error("the watcher's event queue overflowed (" + std::to_string(dropped) +
                    " events dropped): scanning the job list now");
    next_scan = 0;
  }
  // Read again after each wait for Slurm's locks: under contention a tick waits seconds for
  // them, and a grace that ended meanwhile is over now, not at the next tick.
  auto now = static_cast<int64_t>(shared->clock.now());
  if (write_lock_stats(now)) cost.busy();
  // A kill a throw left undone in the last tick: its record back first, so that this tick
  // orders the job's visit among the graces that have ended.
  put_back_failed_kill();
  visits.clear();
  for (const WatchEvent& e : events) {
    if (e.kind == WatchEvent::Kind::LimitUpdate) {  // a look at the job: its timer, its trigger
      visits.push_back(e.job_id);
      continue;
    }
    if (e.kind == WatchEvent::Kind::RunEnd) {  // a look at the job, nothing more
      const bool followed = state.runs().count(e.job_id) != 0 || active.count(e.job_id) != 0 ||
                            event_runs.count(e.job_id) != 0;
      if (run_end_needs_visit(e.requeued, followed)) visits.push_back(e.job_id);
      continue;
    }
    visits.push_back(e.job_id);
    event_runs[e.job_id] = told_by(e);
    if (e.preemptor != 0) preemptors[e.job_id] = e.preemptor;
  }
  while (!timers.empty() && timers.top().when <= now) {
    const Timer t = timers.top();
    timers.pop();
    if (timer_is_set(t)) visits.push_back(t.id);
  }
  visits.insert(visits.end(), active.begin(), active.end());
  if (!scanning && visits.empty() && state.draining().empty()) return;
  // Only past that return: slurmctld holds the credential context's mutex while munged signs
  // each launch credential, and a tick with nothing to look at waits for nothing.
  int cred_lifetime = 1200;
  (void)slurm_cred_ctx_get(slurmctld_config.cred_ctx, SLURM_CRED_OPT_EXPIRY_WINDOW, &cred_lifetime);

  if (scanning) {
    cost.busy();
    CtldLock read({NO_LOCK, READ_LOCK, NO_LOCK, NO_LOCK, NO_LOCK}, "watcher scan",
                  "watcher lock wait");
    if (must_leave(stopping)) return;
    now = static_cast<int64_t>(shared->clock.now());
    read.units(static_cast<uint64_t>(list_count(job_list)));
    scan(now, cred_lifetime, recovering);
    next_scan = now + (events_mode ? 30 : 1);
  }
  std::sort(visits.begin(), visits.end());
  visits.erase(std::unique(visits.begin(), visits.end()), visits.end());
  // Graces that have ended first, then the graces events just told of (lib/watch.hpp): each
  // hold below begins with a wait for Slurm's locks.
  order_visits(visits, state.runs(), events, now);
  if (!policy_checked) {
    // Once, before the first visit: it reads the partition and node tables and assoc_mgr's
    // lists, so read locks of its own, not the visits' write locks (with 200 nodes in owner
    // groups it walks every owner's nodes and the association list).
    const CtldLock read({READ_LOCK, NO_LOCK, READ_LOCK, READ_LOCK, NO_LOCK}, "watcher policy check",
                        "watcher lock wait");
    if (must_leave(stopping)) return;
    check_policy_once();
  }
  // The locks slurmctld's own periodic job_time_limit() pass takes, kVisitBudget of wall time
  // at a time: however many jobs are in a grace or a requeue hold, one hold stays near the
  // budget, and slurmctld's RPCs and scheduler get the locks in between.
  // Each visit finds its job again by id: what changed between two holds is seen.
  constexpr auto kVisitBudget = std::chrono::microseconds(300);
  // The locks of a visit and of a kill at a grace's end: those of Slurm's own job_time_limit().
  constexpr slurmctld_lock_t kVisitLocks = {READ_LOCK, WRITE_LOCK, WRITE_LOCK, READ_LOCK,
                                            READ_LOCK};
  Visited visited;
  begin_visits();
  std::size_t next = 0;
  if (visits.empty() && state.draining().empty()) {
    // A scan that found nothing to visit (the kept records decided under its read lock): no
    // hold of the write locks.
    end_visits(now);
  } else {
    do {
      {
        CtldLock locks(kVisitLocks, "watcher visit", "watcher lock wait");
        if (must_leave(stopping)) return;
        now = static_cast<int64_t>(shared->clock.now());
        if (next == 0) fault_point("watcher tick");
        const HoldBudget budget(kVisitBudget);
        const std::size_t from = next;
        Visited in_hold;
        while (next < visits.size()) {
          // A grace that has ended gets a hold of its own, never on top of other visits'
          // budget, and the hold that follows it is Slurm's kill and requeue (kill_due).
          if (next > from && grace_over_now(visits[next], now, gang)) break;
          const Visited v = visit_id(visits[next++], now, cred_lifetime, recovering);
          in_hold |= v;
          if (v.killed || budget.spent(next - from)) break;
        }
        std::size_t units = next - from;
        if (next == visits.size()) {
          units += state.draining().size();
          end_visits(now);
        }
        locks.units(units);
        // A grace's end is recorded as a site of its own: "watcher visit" holds are the
        // budgeted visits alone.
        if (in_hold.killed) locks.site("watcher visit at a grace's end");
        if (in_hold.changed) {
          last_job_update = static_cast<time_t>(now);
          schedule_job_save();
        }
        visited |= in_hold;
      }
      if (pending_kill) {
        // The kill the visit decided, in a hold of its own (as stock Slurm's at a grace's end):
        // the visit's work never adds to Slurm's, nor Slurm's to the visit's.
        std::string line;
        {
          CtldLock locks(kVisitLocks, "watcher kill at a grace's end", "watcher lock wait");
          if (must_leave(stopping)) return;
          line = kill_due(static_cast<int64_t>(shared->clock.now()));
        }
        if (!line.empty()) log().log_info(line);
      }
    } while (next < visits.size());
  }
  cost.grace(next_grace_end.load() != 0);
  recovered = true;
  if (visited.may_start) queue_job_scheduler();
  // What a restart could not rebuild from Slurm's job state: the records kept (something seen
  // or done in the run) and the draining jobs. The file changes with preemptions, not with
  // every start; a failed write is tried again by the next tick that gets here.
  if (state.unsaved() && may_write_state(stopping)) save_state(encode_watch_state(state.get()));
}

void PreemptionWatcher::Impl::arm(const job_record_t& job, const JobCheckpoint* promise) {
  Armed a;
  a.start = job.start_time;
  a.lead = promise != nullptr ? promise->lead_s : 0;
  if (a.lead > 0 && job.time_limit != INFINITE) {
    a.when = job.end_time - a.lead;
    timers.push({a.when, job.job_id, a.start});
  }
  armed[job.job_id] = a;
}

void PreemptionWatcher::Impl::scan(int64_t now, int cred_lifetime, bool recovering) {
  // Timers of runs that are over go; so do records of jobs Slurm no longer has, or of a run
  // before the one running (kept_fate); the records a visit could still act on are visited.
  for (auto it = armed.begin(); it != armed.end();) {
    const job_record_t* job = find_job_record(it->first);
    const bool same_run =
        job != nullptr && IS_JOB_RUNNING(job) && job->start_time == it->second.start;
    if (!same_run) {
      it = armed.erase(it);
      continue;
    }
    // A time limit changed since the timer was set: set it again.
    if (it->second.lead > 0 && job->end_time - it->second.lead != it->second.when) {
      it->second.when = job->end_time - it->second.lead;
      timers.push({it->second.when, it->first, it->second.start});
    }
    ++it;
  }
  // The records kept: what a visit would do is decided here, under the read lock, for most of
  // them (lib/watch.hpp kept_fate): the tombstones of settled preemptions, one per preempted job
  // Slurm still keeps, would otherwise cost a write-locked visit each every 30 s.
  for (auto r = state.runs().begin(); r != state.runs().end();) {
    const job_record_t* job = find_job_record(r->first);
    const std::optional<ScanFacts> facts =
        job != nullptr ? std::optional<ScanFacts>(scan_facts(*job, scan_suspends(*job, gang)))
                       : std::nullopt;
    const KeptFate fate =
        recovering ? KeptFate::Visit : kept_fate(r->second, facts ? &*facts : nullptr);
    if (fate == KeptFate::Visit) visits.push_back(r->first);
    if (fate != KeptFate::Forget) {
      ++r;
    } else if (job == nullptr) {
      r = forget_job(r->first);
    } else {
      r = state.forget(r);  // of a run before the one running: its timer is the new run's
    }
  }
  for_each_ro<job_record_t>(job_list, [&](const job_record_t* job) {
    const ScanFacts f = scan_facts(*job, scan_suspends(*job, gang));
    const auto a = armed.find(job->job_id);
    const int64_t timer_start = a == armed.end() ? 0 : a->second.start;
    switch (scan_verdict(f, timer_start, now, cred_lifetime, recovering)) {
      case ScanVerdict::Skip: break;
      case ScanVerdict::Visit: visits.push_back(job->job_id); break;
      case ScanVerdict::ArmTimer: {
        const auto promise = promise_of(*job);
        arm(*job, promise ? &*promise : nullptr);
        break;
      }
    }
    return true;
  });
}

void PreemptionWatcher::Impl::begin_visits() {
  active.clear();
  next_grace = 0;
}

void PreemptionWatcher::Impl::check_policy_once() {
  if (policy_checked) return;
  if (const std::string problem = slurm_config_problem(*shared->policy.get()); !problem.empty()) {
    log().log_error("the policy names what Slurm does not know: " + problem);
  }
  policy_checked = true;
}

RunMap::const_iterator PreemptionWatcher::Impl::forget_job(uint32_t id) {
  armed.erase(id);
  preemptors.erase(id);
  const auto r = state.runs().find(id);
  return r != state.runs().end() ? state.forget(r) : state.runs().upper_bound(id);
}

Visited PreemptionWatcher::Impl::visit_id(uint32_t id, int64_t now, int cred_lifetime,
                                          bool recovering) {
  job_record_t* job = find_job_record(id);
  if (job == nullptr) {
    (void)forget_job(id);
    return {};
  }
  const Visited v = visit(*job, now, cred_lifetime, recovering);
  if (IS_JOB_RUNNING(job) && grace_began(*job, gang) != 0 && job->end_time > now &&
      (next_grace == 0 || job->end_time < next_grace)) {
    next_grace = job->end_time;
  }
  return v;
}

void PreemptionWatcher::Impl::end_visits(int64_t now) {
  event_runs.clear();
  for (auto it = state.draining().begin(); it != state.draining().end();) {
    const auto [id, until] = *it;
    const job_record_t* job = find_job_record(id);
    switch (drain_step(job != nullptr, job != nullptr && IS_JOB_COMPLETING(job), until, now)) {
      case DrainStep::Forget: it = state.undrain(it); break;
      case DrainStep::Kill:
        log().log_info(job_name(id) +
                       " requeued itself during its grace and its processes outlived it: "
                       "killing them so that its nodes go to the preemptor");
        kill_lingering(*job);
        it = state.undrain(it);
        break;
      case DrainStep::Wait:
        if (next_grace == 0 || until < next_grace) next_grace = until;
        ++it;
        break;
    }
  }
  next_grace_end.store(next_grace);
}

Visited PreemptionWatcher::Impl::visit(job_record_t& job, int64_t now, int cred_lifetime,
                                       bool recovering) {
  const uint32_t id = job.job_id;
  const auto promise = promise_of(job);
  const JobCheckpoint* p = promise ? &*promise : nullptr;
  const job_record_t* jp = &job;
  PreemptEnd ends = preempt_end(job);
  const auto old = state.runs().find(id);
  ends.suspends = suspends_for_visit(
      ends.suspends, old != state.runs().end() ? &old->second : nullptr, job.start_time);
  const StoryField field = shared->policy.get()->story.field;
  WatchedJob view = watched_job(job, p, ends, field);
  const auto told = event_runs.find(id);
  std::optional<RunRecord> rebuilt;
  if (old == state.runs().end() && recovering) rebuilt = record_after_restart(view);
  const RunRecord* known = old != state.runs().end() ? &old->second : rebuilt ? &*rebuilt : nullptr;
  // What an event told of the current run: a managed job's, or any job's preemption at once
  // (grace 0: Slurm requeued or cancelled it before this visit).
  const RunRecord* told_now =
      told != event_runs.end() && (p != nullptr || told->second.at_once) ? &told->second : nullptr;
  const std::optional<RunRecord> last = told_run(known, told_now);
  if (last && view.state != WatchedJob::State::Running) {
    // The record's run ended: how, as preempt/quota and priority/fairshare told it.
    if (const auto run = bus::preempted_runs().find(id, last->start)) {
      view.told_preempt = run->preempted;
      view.told_grace_end = run->grace_end;
      view.told_end = run->ended;
    }
  }
  if (rebuilt) {
    log().log_info(job_name(id) +
                   " was being preempted when slurmctld stopped: keeping its promise");
  }
  const WatchAction a = watch(view, last ? &*last : nullptr, now, cred_lifetime);
  if (a.keep && worth_keeping(*a.keep)) {
    state.keep(id, *a.keep);
  } else {
    state.forget(id);
  }
  const int64_t run_start = a.keep ? a.keep->start : last ? last->start : view.start;
  if (a.changes_job() || a.time_limit_signal) apply(job, p, a, now);
  if (a.kill && pending_kill) {
    pending_kill->run_start = run_start;
    pending_kill->due = due_kill(id, view.start, last ? &*last : nullptr);
  }
  // The run's preemption is over (the kill ends it in kill_due, Slurm reporting its end there).
  if (a.settle != Settle::None && !a.kill) bus::preempted_runs().take(id, run_start);
  // After what was done: is the job still one to look at every tick?
  const auto kept = state.runs().find(id);
  const WatchedJob after = watched_job(job, p, ends, field);
  if (needs_watching(after, kept == state.runs().end() ? nullptr : &kept->second, now,
                     cred_lifetime) ||
      a.kill || a.settle != Settle::None) {
    active.insert(id);
  } else {
    preemptors.erase(id);
  }
  // A running managed job's time-limit timer, set again when its end moved.
  if (IS_JOB_RUNNING(jp) && p != nullptr &&
      time_limit_timer_wanted(kept != state.runs().end() ? &kept->second : nullptr,
                              job.time_limit)) {
    const auto arm_it = armed.find(id);
    if (arm_it == armed.end() || arm_it->second.start != job.start_time ||
        (arm_it->second.lead > 0 && arm_it->second.when != job.end_time - arm_it->second.lead)) {
      arm(job, p);
    }
  }
  return {a.changes_job(), a.may_start_a_job(), a.kill};
}

// The kill at a grace's end that a visit decided (pending_kill), under the hold that follows
// the visit's: the story note of the kill, then Slurm's kill and requeue or cancel, or nothing
// when the run ended between the two holds (lib/watch.hpp kill_still_due). Returns a line to
// log once the locks are released. Until Slurm's calls are made, a throw leaves pending_kill
// to the next tick's put_back_failed_kill.
std::string PreemptionWatcher::Impl::kill_due(int64_t now) {
  fault_point("watcher kill");
  const PendingKill& k = *pending_kill;
  const uint32_t id = k.due.id;
  job_record_t* job = find_job_record(id);
  const job_record_t* jp = job;
  if (job == nullptr ||
      !kill_still_due(k.due, IS_JOB_RUNNING(jp), static_cast<int64_t>(job->start_time),
                      static_cast<int64_t>(job->preempt_time))) {
    put_back_failed_kill();
    active.insert(id);
    return job_name(id) +
           "'s run ended before the watcher's kill at its grace's end: not killed; its next "
           "visit settles that end";
  }
  if (!k.note.empty()) add_story_note(*job, k.field, k.note);
  // What follows is Slurm's own work: recorded apart ("watcher visit, Slurm's kill and
  // requeue") inside this hold ("watcher kill at a grace's end").
  static const std::size_t slurm_site =
      lock_site("watcher visit, Slurm's kill and requeue", LockStats::Kind::None);
  const CostClock slurm_work;
  // The grace was the warning: kill the processes outright (without changing the job's
  // state) before Slurm's requeue/cancel, which would otherwise send TERM once more and
  // wait KillWait (30 s by default) for a job that already ignored its warning.
  (void)job_signal(job, SIGKILL, KILL_STEPS_ONLY, 0, false);
  if (job->batch_flag) (void)job_signal(job, SIGKILL, KILL_JOB_BATCH, 0, false);
  const bool held = k.hold;
  const bool admin = k.hold_admin;
  const int64_t run_start = k.run_start;
  int rc = SLURM_SUCCESS;
  if (held) {
    rc = requeue_held(*job, admin);
  } else {
    (void)slurm_job_preempt(job, nullptr, k.mode, false);
  }
  pending_kill.reset();  // done: nothing to put back from here on
  slurm_work.record(slurm_site);
  // The run's preemption is over: Slurm reported its end in the calls above.
  bus::preempted_runs().take(id, run_start);
  last_job_update = static_cast<time_t>(now);
  schedule_job_save();
  return held ? job_name(id) + " " + requeue_held_line(rc, admin) : std::string();
}

// A kill at a grace's end that was decided and not done (its run ended first, or a throw in
// its hold, left to the next tick): the run's record goes back to what it was before its
// visit, so that the next visit decides again or settles the run's end as any other.
void PreemptionWatcher::Impl::put_back_failed_kill() {
  if (!pending_kill) return;
  if (const auto r = state.runs().find(pending_kill->due.id); r != state.runs().end()) {
    state.keep(pending_kill->due.id, kill_missed(r->second, pending_kill->due));
  }
  pending_kill.reset();
}

// The job the victim gives way to: the preemptor a grace-start event named, else (PreemptType
// without events) the job whose preemption of others began in [from, to], by a walk of the job
// list once per preemption.
const job_record_t* PreemptionWatcher::Impl::preemptor_for(const job_record_t& victim, int64_t from,
                                                           int64_t to) const {
  if (const auto it = preemptors.find(victim.job_id); it != preemptors.end()) {
    if (const job_record_t* by = find_job_record(it->second)) return by;
  }
  if (events_mode) return nullptr;
  return preemptor_of(victim, static_cast<time_t>(from), static_cast<time_t>(to));
}

void PreemptionWatcher::Impl::apply(job_record_t& job, const JobCheckpoint* promise,
                                    const WatchAction& a, int64_t now) {
  const std::string name = job_name(job.job_id);
  const std::shared_ptr<const Policy> policy = shared->policy.get();
  const StoryField field = policy->story.field;
  // Notes a preemption that began at `at` once: a job that exits at once is seen preempted
  // and requeued in one tick, and both paths may find the same preemption.
  const auto note_preemption = [&](time_t at, const job_record_t* by, const JobCheckpoint& terms) {
    const std::string note = preempted_note(at, job, by, terms, *policy);
    const char* story = story_text(job, field);
    if (story == nullptr || std::strstr(story, note.c_str()) == nullptr) {
      add_story_note(job, field, note);
    }
    return note;
  };
  if (!a.restore_pause_note.empty()) {
    add_story_note(job, field, a.restore_pause_note);
    log().log_info(name + " lost its pause's note in a slurmctld restart: written back (" +
                   a.restore_pause_note + ")");
  }
  if (a.restore_preempt != 0) {
    job.preempt_time = static_cast<time_t>(a.restore_preempt);
    log().log_info(name + " lost its preemption in a slurmctld restart: its grace started at " +
                   format_utc(a.restore_preempt) + " goes on");
  }
  if (a.set_end != 0) job.end_time = static_cast<time_t>(a.set_end);
  if (a.trigger && promise != nullptr) {
    // Slurm sent the trigger to the batch shell's process group at grace start; the other steps
    // get it now (Slurm can only signal all of them, the extern step included, or none). A
    // pause (job_modify started its grace) sends the pause trigger, the batch step included:
    // the notice then says "pause".
    const bool paused = a.trigger_pause;
    signal_steps(job, paused ? kTriggerPause : kTriggerPreempt, paused);
    // A pause noted itself when it was asked.
    const std::string note =
        paused ? std::string("pausing")
               : note_preemption(job.preempt_time,
                                 preemptor_for(job, job.preempt_time - 2, job.preempt_time + 2),
                                 *promise);
    if (const char* story = story_text(job, field); !paused && story != nullptr) {
      // This preemption may be the one that protects the job from the next (anti-starvation:
      // preempt/quota then takes it as a victim last).
      const Starvation s = starvation_of(story, now, policy->starvation);
      if (s.protected_ && s.last == static_cast<int64_t>(job.preempt_time)) {
        const std::string protect = note_protected(s, policy->starvation);
        add_story_note(job, field, protect);
        log().log_info(name + " " + protect);
      }
    }
    log().log_info(name + " " + note + "; " +
                   std::to_string(static_cast<long>(job.end_time - now)) + " s left");
  }
  if (a.time_limit_signal) {
    log().log_info(name + " ends in " + std::to_string(static_cast<long>(job.end_time - now)) +
                   " s: sending it its time-limit checkpoint signal");
    signal_steps(job, kTriggerTimeLimit, true);
  }
  if (a.kill) {
    log().log_info("grace of " + name + " ended " +
                   std::to_string(static_cast<long>(now - job.end_time)) +
                   " s ago: killing its processes and preempting it now");
    // The note and Slurm's work come in the hold that follows this visit's (kill_due), as
    // stock Slurm does its kill and requeue at a grace's end in a hold of their own.
    PendingKill k;
    k.mode = slurm_job_preempt_mode(&job);
    k.hold = a.hold;
    k.hold_admin = a.hold_admin;
    k.field = field;
    if (a.note_killed) {
      const bool requeue =
          a.hold || (k.mode == PREEMPT_MODE_REQUEUE && job.details && job.details->requeue);
      k.note = note_killed_at_grace_end(now, requeue, job.restart_cnt + 1, a.hold);
    }
    pending_kill = std::move(k);
  }
  if (a.note_unseen_preemption && promise != nullptr && job.preempt_time) {
    (void)note_preemption(job.preempt_time,
                          preemptor_for(job, job.preempt_time - 2, job.preempt_time + 2), *promise);
  }
  switch (a.settle) {
    case Settle::None: break;
    case Settle::RequeuedDuringGrace: {
      if (a.hold) {
        hold_pending(job, a.hold_admin);
        add_story_note(job, field, note_requeued_at_pause_end(job.restart_cnt));
        log().log_info(name + " was requeued by Slurm at its pause's grace end: held");
        break;
      }
      if (a.find_preemptor) {
        // Requeued (which clears preempt_time) before this thread saw the grace start, as a
        // batch trap running `scontrol requeue` at once does: a preemptor that began within
        // the last seconds is the one.
        const job_record_t* by = preemptor_for(job, now - 3, now);
        if (by == nullptr) {
          log().log_info(name + " requeued itself with no preemption under way");
          break;
        }
        const time_t at = by->details != nullptr && by->details->preempt_start_time != 0
                              ? by->details->preempt_start_time
                              : static_cast<time_t>(now);
        (void)note_preemption(at, by, *promise);
      }
      add_story_note(job, field, note_requeued_by_job(job.restart_cnt));
      log().log_info(name + " was requeued during its grace");
      if (a.drain_until != 0) state.drain(job.job_id, a.drain_until);
      break;
    }
    case Settle::KilledAtGraceEnd: {
      // Slurm's own grace check came before this thread's visit (the job lock was busy): the
      // run ended at its grace's end all the same, killed, its work lost. Noted as the
      // watcher's own kill would have, so that its story, sacct and priority/fairshare's
      // refund (given as Slurm reported the end) agree.
      const auto at = static_cast<time_t>(a.preempted_at);
      std::string preempted;
      if (a.find_preemptor && promise != nullptr && at != 0) {
        preempted = note_preemption(at, preemptor_for(job, at - 2, at + 2), *promise) + "; ";
      }
      add_story_note(job, field,
                     note_killed_at_grace_end(a.killed_at, a.requeued, a.restart, false));
      if (a.account_run) account_run_again(job, a.requeued);
      if (a.kill_leftovers) kill_lingering(job);
      log().log_info(name + " " + preempted + "its grace ended and Slurm's own grace check " +
                     (a.requeued ? "requeued it as restart " + std::to_string(a.restart)
                                 : std::string("ended it")) +
                     " before the watcher's kill" +
                     (a.kill_leftovers ? ": killing what is left of its processes" : ""));
      break;
    }
    case Settle::PreemptedAtOnce: {
      // Grace 0: Slurm requeued or cancelled the job in the call that preempted it, before
      // this thread could see it in a grace. Its story gets both notes all the same.
      const auto at = static_cast<time_t>(a.preempted_at);
      const std::string note =
          note_preemption(at, preemptor_for(job, at - 2, at + 2), at_once_terms(promise));
      add_story_note(job, field,
                     note_killed_at_grace_end(a.preempted_at, a.requeued, a.restart, false));
      if (a.account_run) account_run_again(job, a.requeued);
      log().log_info(
          name + " " + note + ": " +
          (a.requeued ? "requeued as restart " + std::to_string(a.restart) : std::string("ended")) +
          " at once");
      break;
    }
    case Settle::RunLost:
      if (a.hold) {
        hold_pending(job, a.hold_admin);
        add_story_note(job, field, note_run_lost_paused());
        log().log_info(name + " was paused, and slurmctld lost its run in a restart: held");
      } else {
        log().log_info(name + " was being preempted, and slurmctld lost its run in a restart");
      }
      break;
    case Settle::ExitedNoRequeue: {
      const int status = watched_job(job, promise, PreemptEnd{}, field).exit_status;
      add_story_note(job, field, note_exited_in_grace(now, status, false, 0));
      jobacct_storage_g_job_complete(acct_db_conn, &job);
      break;
    }
    case Settle::ExitedFinished:
      add_story_note(job, field, note_exited_finished(now));
      log().log_info(name +
                     " exited during its grace (exit 0) after saying its work is finished: "
                     "not requeued");
      jobacct_storage_g_job_complete(acct_db_conn, &job);
      break;
    case Settle::RequeueExited: {
      const int status = watched_job(job, promise, PreemptEnd{}, field).exit_status;
      add_story_note(job, field,
                     note_exited_in_grace(now, status, true, job.restart_cnt + 1, a.hold));
      if (a.hold) {
        log().log_info(name + " exited during its pause's grace (exit " + std::to_string(status) +
                       "): " + requeue_held_line(requeue_held(job, a.hold_admin), a.hold_admin));
        break;
      }
      const int rc = job_requeue(0, job.job_id, nullptr, true, 0);
      log().log_info(name + " exited during its grace (exit " + std::to_string(status) + "): " +
                     (rc == SLURM_SUCCESS ? std::string("requeued")
                                          : "requeue failed: " + std::string(slurm_strerror(rc))));
      break;
    }
  }
  if (a.release_hold && job.details != nullptr) {
    log().log_info("requeued " + name + " is eligible now that its nodes are free, not in " +
                   std::to_string(static_cast<long>(job.details->begin_time - now)) + " s");
    job.details->begin_time = static_cast<time_t>(now);
    // Its priority now, not at the next recalculation: sprio lists it from this moment, and
    // its age restarted with the requeue. Priority 0 is a hold (a paused job): its reason,
    // JobHeldUser or JobHeldAdmin, says whose, and stays.
    if (job.priority != 0) {
      job.state_reason = WAIT_NO_REASON;
      set_job_prio(&job);
    }
  }
}

PreemptionWatcher::PreemptionWatcher(std::shared_ptr<ControllerShared> shared)
    : PreemptionWatcher(std::make_shared<Impl>(std::move(shared))) {}

// The thread's callables own the Impl: it lives as long as the thread, not as this object.
PreemptionWatcher::PreemptionWatcher(const std::shared_ptr<Impl>& impl)
    : thread_(
          impl->shared->log, "preemption watcher", [impl] { return impl->until_next_tick(); },
          [impl](const std::atomic<bool>& stopping) { impl->tick(stopping); }) {
  bus::set_watcher_waker([](void* self) { static_cast<PreemptionWatcher*>(self)->wake(); }, this);
}

PreemptionWatcher::~PreemptionWatcher() { bus::clear_watcher_waker(this); }

}  // namespace sp

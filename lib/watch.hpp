// The preemption watcher's decisions, pure: what to do with one job at one tick, given what the
// watcher remembers of the job's current run. plugins/job_submit_preempt/watcher.cpp turns a
// job_record_t into a WatchedJob, asks watch(), and applies the WatchAction under slurmctld's
// locks; nothing here knows Slurm.
//
// The promise a managed job holds (lib/checkpoint.hpp) is kept through these transitions:
//  - grace start (Slurm set preempt_time): trigger the steps, shorten the grace to what the job
//    asked for, note who preempted it;                                           -> triggered
//  - grace end: kill the processes and let Slurm requeue or cancel it at once;     -> killed
//  - the job exits during its grace (any exit code): requeue it, never COMPLETED; unless it
//    said during this run that its work is finished (`preemptctl finished`) and exits 0;
//  - the job requeues itself during its grace: note it, and kill what is left of it at the
//    grace's end (Slurm would wait KillWait after a TERM it may ignore);
//  - Slurm's own grace check requeued or cancelled it at its grace end before the watcher's
//    visit (the watcher waited for the job lock): note the kill as the watcher's own, and kill
//    what is left of it at once;
//  - a requeued job held by Slurm for cred_expire + 1 s: eligible once its nodes are free;
//  - a preemption with grace 0 (Slurm requeues or cancels the job in the very call that
//    preempts it; only preempt/quota's grace-start event tells it): note the preemption and
//    the kill, managed job or not, and never as a requeue by the job itself;
//  - time limit near: the time-limit trigger once per run, and once more each time the limit
//    is raised above every limit it was sent for (an extension after the job saved);
//  - a paused job (lib/pause.hpp) takes the same path, but its requeue leaves it held;
//  - a job whose preemption suspends it (gang scheduling) has no grace: nothing of the above
//    (grace_preempt_time).
// Records are persisted (encode_watch_state) so that a slurmctld restart during a grace keeps
// every promise; what the file did not see is rebuilt from Slurm's own job state
// (record_after_restart).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint.hpp"
#include "watch_events.hpp"

namespace sp {

// When the job's grace began, from Slurm's preempt_time (0: not preempted), for the views
// below: none (0) for a job whose preemption suspends it (`preemption_suspends`: its preempt
// mode is SUSPEND and slurm.conf's PreemptMode has GANG). Slurm sets such a job's preempt_time
// as the gang scheduler suspends it and never clears it; resumed, it runs on with a preempt time
// that began no grace: nothing to signal (its work was kept in memory), no end time to
// shorten, nothing to kill. Slurm's own time-limit pass ends it at its end time, as it does
// without the plugins.
int64_t grace_preempt_time(int64_t preempt_time, bool preemption_suspends);

// The preemption_suspends a visit decides with, given the record kept for the job (`kept`,
// nullptr: none) and the running run's start: false while a grace the watcher saw start in this
// run is under way (the QOS' mode turned to suspend during it: the grace goes on as promised).
struct RunRecord;
bool suspends_for_visit(bool preemption_suspends, const RunRecord* kept, int64_t run_start);

struct WatchedJob {
  enum class State : uint8_t {
    Pending,
    Running,
    Exited,  // COMPLETED, FAILED, OUT_OF_MEMORY or TIMEOUT: the job ended by itself
    Other,   // cancelled, node failure, preempted, suspended, ...
  };
  uint32_t id = 0;
  State state = State::Other;
  bool completing = false;                 // its processes are still being cleaned up on its nodes
  bool requeue_in_hand = false;            // Slurm is requeueing it already (JOB_REQUEUE)
  const JobCheckpoint* promise = nullptr;  // nullptr: not a managed job
  int64_t start = 0;                       // this run's start time
  int64_t end = 0;                         // end time (grace end while preempted)
  int64_t preempt = 0;  // when Slurm began preempting it (grace_preempt_time); 0: not
  uint32_t restarts = 0;
  bool time_limited = false;      // a finite time limit
  uint32_t time_limit = 0;        // ... of this many minutes
  bool suspended = false;         // suspended (scontrol suspend, gang scheduling)
  bool preempt_requeues = false;  // a preemption requeues it (mode REQUEUE and requeue allowed)
  bool can_requeue = false;       // a batch job that may be requeued
  bool het = false;               // a component of a heterogeneous job
  bool has_details = false;
  int64_t submit = 0;  // details: submit time (the requeue time after a requeue)
  int64_t begin = 0;   // details: begin time
  // The preempted run the watcher's record is of, as preempt/quota and priority/fairshare told
  // it (lib/watch_events.hpp PreemptedRuns), when the job is no longer running it: when its
  // grace began, the grace end Slurm was given, when the run ended; 0: not told.
  int64_t told_preempt = 0;
  int64_t told_grace_end = 0;
  int64_t told_end = 0;
  int exit_status = 0;
  // Paused during this run (lib/pause.hpp: the AdminComment's last mark is a pause made after
  // the run started): its grace ends in a requeue *held* (by an administrator: an admin hold).
  bool paused = false;
  bool paused_by_admin = false;
  std::string_view pause_note{};  // that pause's note (lib/pause_mark.hpp), when paused
  // The job said during this run that its work is finished (lib/pause_mark.hpp's finished
  // mark, made at or after the run's start): an exit 0 in its grace ends it, not requeued.
  bool said_finished = false;
};

// What the watcher remembers of a managed job's current run. Persisted.
struct RunRecord {
  int64_t start = 0;  // the run's start time: a new run forgets the old one
  uint32_t restart = 0;
  bool triggered = false;             // grace start seen and acted on
  bool time_limit_triggered = false;  // time-limit trigger sent
  // The time limit (min) it was last sent for: a higher one (an extension) is due its own.
  // 0: not known (a record of a state file before version 3): the limit at the next visit.
  uint32_t time_limit_for = 0;
  bool settled = false;   // this run's preemption is over: killed at grace end, or settled
  int64_t preempt = 0;    // when the preemption began (set when triggered)
  int64_t grace_end = 0;  // when the grace ends (set when triggered)
  // The grace is a pause's (set when triggered): the run ends requeued held even if a crash
  // of slurmctld lost the pause's note from the job's story, which is then written back.
  bool paused = false;
  bool paused_admin = false;
  std::string pause_note{};
  // Slurm was told a grace of 0 for this run's preemption (the grace-start event): it requeued
  // or cancelled the run at once, in the same call, and the watcher never sees it in a grace.
  // Only in a record an event told (told_run); not persisted: the visit the event brings
  // settles the run.
  bool at_once = false;
  bool operator==(const RunRecord&) const = default;
};

enum class Settle : uint8_t {
  None,
  RequeuedDuringGrace,  // the job requeued itself: note it (and find its preemptor if unseen)
  KilledAtGraceEnd,     // Slurm's own grace check ended the run at its grace end before the
                        // watcher's kill (requeued or cancelled): note the kill as the watcher's
                        // own (and the preemption if unseen); kill what is left at once
  RequeueExited,        // exited during its grace: requeue it
  ExitedNoRequeue,      // exited during its grace and may not be requeued: note and account
  ExitedFinished,       // exited 0 during its grace after saying its work is finished: note
                        // and account, not requeued
  RunLost,              // pending again, not requeued: a slurmctld crash lost the run (hold if
                        // paused)
  PreemptedAtOnce,      // preempted with grace 0 (RunRecord::at_once), managed or not: Slurm
                        // requeued or cancelled it at once; note the preemption (find its
                        // preemptor) and how the run ended, killed at once
};

struct WatchAction {
  std::optional<RunRecord> keep;  // the record to remember until the next tick
  bool trigger = false;           // grace start: signal the steps, note the preemption
  bool trigger_pause = false;     // ... a pause's grace: the pause trigger, to every step
  int64_t set_end = 0;            // set the job's end time to this; 0: leave it
  // Slurm lost a preemption the watcher had seen (slurmctld died before saving its job state):
  // set the job's preempt time back to this, so Slurm does not start the grace over.
  int64_t restore_preempt = 0;
  bool time_limit_signal = false;
  bool kill = false;         // grace over: SIGKILL the processes, then preempt it now
  bool note_killed = false;  // ... and note the kill (managed jobs)
  Settle settle = Settle::None;
  bool note_unseen_preemption = false;  // a preemption the watcher never noted (settle)
  bool find_preemptor = false;  // RequeuedDuringGrace, KilledAtGraceEnd: the grace was not seen
  // PreemptedAtOnce, KilledAtGraceEnd: when Slurm preempted it, and whether it requeued the
  // job (as restart `restart`) or ended it (cancelled); KilledAtGraceEnd: when the run ended.
  int64_t preempted_at = 0;
  int64_t killed_at = 0;
  bool requeued = false;
  uint32_t restart = 0;
  // ... and the ended run's accounting record is still the job's (it was cancelled, or its
  // requeue is still completing: Slurm sets up the next run's record when its epilog ends):
  // send it again, so that slurmdbd's record of the preempted run has the notes too.
  bool account_run = false;
  int64_t drain_until = 0;  // RequeuedDuringGrace and still completing: kill leftovers then
  // KilledAtGraceEnd and still completing: SIGKILL what is left now, as the watcher's own kill
  // does (Slurm's requeue or cancel sends TERM and waits KillWait, 30 s by default).
  bool kill_leftovers = false;
  bool release_hold = false;
  // The requeue (kill at grace end, or RequeueExited) leaves the job held: it was paused. With
  // RequeuedDuringGrace (Slurm requeued it first): hold it now.
  bool hold = false;
  bool hold_admin = false;  // ... as an administrator's hold (JobHeldAdmin)
  // A paused run whose pause note a slurmctld crash lost: write this note back first.
  std::string restore_pause_note;
  bool changes_job() const {
    return trigger || set_end != 0 || restore_preempt != 0 || kill || settle != Settle::None ||
           note_unseen_preemption || release_hold || !restore_pause_note.empty();
  }
  // Whether this action can let a pending job start at once, so that the watcher asks for a
  // pass of Slurm's main scheduler (each ask is a whole pass): only releasing a requeue hold
  // makes a job eligible. A signal, a note, an end time or a hold cannot; neither can a kill or
  // a requeue: their nodes come free when the epilog completes, and Slurm's epilog-complete
  // RPC asks for the pass itself.
  bool may_start_a_job() const { return release_hold; }
};

// One job at one tick. `last`: the record kept for this job at the previous tick (nullptr:
// none). `cred_lifetime`: Slurm's credential lifetime (AuthInfo cred_expire), for the hold.
WatchAction watch(const WatchedJob& job, const RunRecord* last, int64_t now, int64_t cred_lifetime);

// What a grace-start or pause event tells of the job's current run (a run-end event tells
// nothing: the watcher only looks at the job): the run's start and restart count, and, when
// Slurm was given a grace of 0, that it preempted the run at once, when.
RunRecord told_by(const WatchEvent& e);

// Whether a run-end event is worth a visit of its own (each is a hold of the job write lock):
// when Slurm requeued the run (the requeue hold is the watcher's to end as soon as the job's
// nodes are free), or when the watcher follows the job already (a record kept, or a job it
// looks at every tick). A run that ended for good, of a job the watcher knows nothing of, needs
// none: the scan every 30 s finds whatever a visit would have.
bool run_end_needs_visit(bool requeued, bool followed);

// The record the watcher decides with when an event told it of the job's current run (`told`,
// nullptr: no event): the one kept for the job (`kept`, nullptr: none) unless `told` is of
// another run (the kept one is of an earlier run: an unmanaged job's tombstone, or a run the
// watcher never saw running); of the same run, the kept one, told of a preemption at once if
// it saw no grace of that run. nullopt: neither.
std::optional<RunRecord> told_run(const RunRecord* kept, const RunRecord* told);

// What a preemption at once looks like to a job that holds no promise (a preemptible job
// without options whose QOS grace is 0): Slurm's requeue or cancel sends TERM, then KILL.
// A managed job's promise says its own signal. The grace is 0 either way.
JobCheckpoint at_once_terms(const JobCheckpoint* promise);

// Whether the time-limit trigger is due at `now` for a run whose record is `run`, with a time
// limit of `time_limit` minutes ending at `end` and the promise's lead `lead_s`: never sent, or
// sent for a lower limit than this one (raised since: the job may have saved and gone on, and
// its new end needs a checkpoint too); and its end is within the lead. A lowered limit is due
// nothing (the trigger was sent, the job saves already).
bool time_limit_due(const RunRecord& run, uint32_t time_limit, int64_t end, int64_t lead_s,
                    int64_t now);
// Whether a running managed job whose record is `kept` (nullptr: none) needs a time-limit
// timer: a time_limit_due still to come.
bool time_limit_timer_wanted(const RunRecord* kept, uint32_t time_limit);

// Whether a record is worth keeping between ticks (and in the state file): something was seen
// or done in its run. A plain running job needs none.
inline bool worth_keeping(const RunRecord& r) {
  return r.triggered || r.time_limit_triggered || r.settled;
}

// A running job whose grace (begun at `preempt`, 0: none) has ended by `now` (`end`: the job's
// end time, the grace end while preempted): watch() kills it now. The watcher gives that visit
// a hold of its own, so that it never comes on top of a hold's budget of other visits, and
// Slurm's kill and requeue or cancel another hold right after it (DueKill).
inline bool grace_over(bool running, int64_t preempt, int64_t end, int64_t now) {
  return running && preempt != 0 && end <= now;
}

// A kill at a grace's end that a visit decided (WatchAction::kill), done in the hold that
// follows the visit's: the story note of the kill, then Slurm's kill and requeue or cancel, as
// stock Slurm does them in a hold of their own at a grace's end. What the visit saw of the run.
struct DueKill {
  uint32_t id = 0;
  int64_t start = 0;            // the run the visit found at its grace's end
  bool settled_before = false;  // its record was settled before the visit (which settles it)
};

// What a visit of job `id`, whose WatchAction kills its run `start`, hands the kill's hold:
// `last`, the record the visit read (nullptr: none), settled that run already or not.
inline DueKill due_kill(uint32_t id, int64_t start, const RunRecord* last) {
  return {id, start, last != nullptr && last->start == start && last->settled};
}

// Whether the kill is still due when its hold begins: the run the visit saw (`start`) still
// runs and is still preempted. Otherwise the run ended by itself, or Slurm's own grace check
// requeued it, between the two holds: no kill and no note, and the record goes back to what it
// was (kill_missed), so that the next visit settles that end as any other.
inline bool kill_still_due(const DueKill& k, bool running, int64_t start, int64_t preempt) {
  return running && start == k.start && preempt != 0;
}

// The record of a run whose kill did not come: settled only if it was before the visit.
inline RunRecord kill_missed(const RunRecord& r, const DueKill& k) {
  RunRecord back = r;
  if (r.start == k.start) back.settled = k.settled_before;
  return back;
}

// Whether the watcher must look at the job again at its next tick rather than at its next scan
// of the whole job list: a grace under way (any job's: the watcher ends it on time), a run
// whose preemption or pause it saw and has not settled, a requeued job in Slurm's requeue hold
// (released as soon as its nodes are free) or about to enter it (requeued, still completing:
// Slurm sets the hold when the epilog ends, and nothing tells the watcher then). `r`: the
// job's record after this tick.
bool needs_watching(const WatchedJob& j, const RunRecord* r, int64_t now, int64_t cred_lifetime);

// A requeued job whose processes are still being cleaned up: Slurm puts it in the requeue hold
// (begin time = requeue + credential lifetime + 1 s) when its epilog completes.
inline bool awaits_requeue_hold(WatchedJob::State state, uint32_t restarts, bool has_details,
                                bool completing) {
  return state == WatchedJob::State::Pending && restarts > 0 && has_details && completing;
}

// What the periodic scan of the whole job list reads of each job: fields only, no promise
// decoded (the scan runs under slurmctld's job read lock; Slurm's own periodic passes do as
// much every 30 s).
struct ScanFacts {
  bool managed = false;  // may hold a promise (its warn signal is the private trigger)
  WatchedJob::State state = WatchedJob::State::Other;
  int64_t preempt = 0;  // grace_preempt_time
  uint32_t restarts = 0;
  bool has_details = false;
  int64_t submit = 0;
  int64_t begin = 0;
  bool time_limited = false;
  int64_t start = 0;
  bool suspended = false;
  bool completing = false;
};
enum class ScanVerdict : uint8_t {
  Skip,
  Visit,     // needs the watcher now: in a grace, or in Slurm's requeue hold
  ArmTimer,  // a managed job's run with a time limit and no time-limit timer yet
};
// `timer_start`: the run start of the time-limit timer kept for the job (0: none).
// `recovering`: the first scan after slurmctld started, which also visits every managed job
// Slurm remembers being preempted, running or not (record_after_restart).
ScanVerdict scan_verdict(const ScanFacts& f, int64_t timer_start, int64_t now,
                         int64_t cred_lifetime, bool recovering);

// What the periodic scan, under the job read lock, does with a record it keeps (`r`) without
// visiting its job under the write locks, from what it reads of the job (`job`, the same
// ScanFacts as its verdict; nullptr: Slurm no longer has the job).
//  - Forget: the job is gone, or runs a new run with no grace of the old one under way (watch()
//    never reads a record of an earlier run: the new run's grace is the scan verdict's to visit,
//    its time-limit timer the scan's to arm, and its signal then comes at the timer's tick);
//  - Keep: a tombstone of a run that is over (only a requeue hold could need the job, and the
//    scan's verdict visits that), or the time-limit record of the run still running, with no
//    preemption: a visit would change nothing;
//  - Visit: anything else (a grace under way, a run that ended unsettled, a settled run that
//    still runs).
// The first scan after a restart visits every record instead (the watcher asks no fate then).
enum class KeptFate : uint8_t { Keep, Forget, Visit };
KeptFate kept_fate(const RunRecord& r, const ScanFacts* job);

// After a restart: the record for a managed job that Slurm remembers being preempted
// (preempt_time set) when the persisted state has none (slurmctld died before the watcher
// wrote it). Not triggered: a running job gets its steps' trigger, an exited one is settled.
std::optional<RunRecord> record_after_restart(const WatchedJob& job);

// Jobs that requeued themselves during their grace, by id: when that grace ends.
using DrainMap = std::map<uint32_t, int64_t>;
using RunMap = std::map<uint32_t, RunRecord>;

// The order of one tick's visits (`ids`: distinct job ids). Every hold of the job
// write lock begins with a wait behind Slurm's own holders (seconds at 20k jobs, while its main
// scheduler runs pass after pass), and a tick with many jobs to look at (requeue holds, a scan's
// records) takes several holds: a job's place in the list is how many waits its visit comes
// after. First the runs whose grace has ended by `now` as the watcher knows it (its record of
// the run: triggered, not settled; or this tick's grace-start event: its time plus its grace),
// so that their kill comes after one wait; then the other jobs a grace-start or pause event of
// this tick names (the trigger to their steps is what their grace is for); then the rest. By
// id within each. Only the order: each visit still decides from Slurm's job record.
void order_visits(std::vector<uint32_t>& ids, const RunMap& runs,
                  const std::vector<WatchEvent>& events, int64_t now);

// What the watcher has on hand between two ticks, for idle_until.
struct WatcherLoad {
  bool events = false;             // PreemptType=preempt/quota tells grace starts (events)
  bool reconfigures_told = false;  // a loaded plugin tells each reconfigure (ReconfigureNotices)
  bool recovered = false;          // the first scan, with restart recovery, is done
  bool recheck_conf = false;       // preempt.yaml is to be read again after this second
  bool following = false;          // a job in a grace or a requeue hold, or draining
};

// The second until which the watcher may sleep, with nothing to follow (0: it may not, and
// ticks every second): when grace starts, pauses and run ends come as events (they wake it),
// a plugin tells each reconfigure (it wakes it too), the first scan is done, no reconfigure is
// to be read again and no job is followed. Then nothing needs a tick before the earliest of
// `next_scan` (the scan of the whole list, every 30 s), `next_timer` (a time-limit trigger; 0:
// none) and `next_stats` (the lock-stats write): an idle slurmctld sees a tick at those, not
// one a second.
int64_t idle_until(const WatcherLoad& load, int64_t next_scan, int64_t next_timer,
                   int64_t next_stats);

// Whether this tick reads slurm.conf's stamp (under the config read lock, to see a
// reconfigure): on its first tick (`read_before` false), on every tick while no plugin tells
// reconfigures, when one was told since the last read (`told_since`), while a reconfigure is to
// be read again (`recheck_conf`), and when the tick scans (Slurm calls no priority plugin after a
// reconfigure it answers with an error, such as one whose slurm.conf has a change that needs a
// restart, though it applied the rest). Otherwise an idle tick takes no Slurm lock.
bool reads_slurm_conf(bool read_before, bool reconfigures_told, bool told_since, bool recheck_conf,
                      bool scanning);

// How long the watcher sleeps before its next tick, in ms: 1 s, less when a watched grace ends
// sooner, and while idle (`idle_until` > 0, the second idle_until gave) until just past then,
// from 1 s (never more ticks than with nothing idle: a tick that keeps failing before its scan
// leaves the scan due) up to kIdleMaxMs. `next_grace`: the second the earliest watched grace ends,
// as the last tick left it (0: none; always after that tick's `now`). The tick decides by time(),
// which trails the precise clock by up to a kernel tick (6 ms measured on a KVM guest, 10 ms at
// HZ=100): it wakes kTickLateMs past the second on the precise clock (`now_ms`), and while time()
// (`now_s`) still reads the second before, again kTickRetryMs later, never a second later (a
// grace end missed by one tick is one more second in which Slurm's own grace check, not the
// watcher, may end the job). Once `now_s` reaches the grace end the tick is due: kTickRetryMs.
constexpr int64_t kTickMs = 1000;
constexpr int64_t kTickLateMs = 20;
constexpr int64_t kTickRetryMs = 10;
constexpr int64_t kIdleMaxMs = 30000;
int64_t next_tick_wait_ms(int64_t next_grace, int64_t idle_until, int64_t now_s, int64_t now_ms);

// What a draining job's leftovers get at `now`: kill them, keep waiting, or forget the entry
// (gone, or no longer completing).
enum class DrainStep : uint8_t { Forget, Wait, Kill };
DrainStep drain_step(bool job_known, bool completing, int64_t until, int64_t now);

// What a tick does with this slurmctld's role. `control`: the control period it is in (when it
// took control, a backup's takeover too; 0 while it waits in standby or has not yet taken
// control). `acting`: it is in control and no shutdown or hand-over is under way. `held`: the
// control period in which the watcher read its state file and follows jobs (0: none).
// A backup that gives control back waits again with its copy of the job list as it was then,
// while the primary owns the jobs and the state file: records of another period (that
// standby, or a new takeover the watcher slept through) are Forgotten, and the first tick of
// the next period reads the file again (Act, holding nothing). During a shutdown or a
// hand-over, before the period ends, the watcher Waits: it touches no job and writes no file
// while the other controller may be reading it. `held_ended`: the watcher has seen its period
// stop acting; it never acts in that period again (slurmctld, going back to standby, clears
// the shutdown time and resume_backup an instant before the period itself).
enum class ControlStep : uint8_t { Wait, Forget, Act };
ControlStep control_step(int64_t control, bool acting, int64_t held, bool held_ended);

// The watcher's persisted state: "slurm-preempt watcher 3" then one line per record,
//   run JOBID START RESTART FLAGS PREEMPT GRACE_END TIME_LIMIT_FOR[ PAUSE_NOTE]
//       (FLAGS: t triggered, l time limit, s settled, p paused, a paused by an administrator;
//        - for none; PAUSE_NOTE, the rest of the line, with p only)
//   drain JOBID UNTIL
// Version 1 (no p, a or note) and 2 (no TIME_LIMIT_FOR: 0) files are read too: an upgraded
// watcher keeps the promises of the graces under way.
struct WatchState {
  RunMap runs;
  DrainMap draining;
  bool operator==(const WatchState&) const = default;
};
std::string encode_watch_state(const WatchState& s);
// nullopt and `error` (one line with the line number) for anything malformed or out of range.
std::optional<WatchState> decode_watch_state(std::string_view text, std::string* error);

// The watcher's WatchState and whether it changed since it was last saved. Changed only
// through these calls, each of which notes a change only when it makes one (a visit keeps the
// record it found most of the time), so that a tick asks unsaved() instead of encoding every
// record to compare the text with the file's: the tombstones of settled preemptions, one per
// preempted job Slurm still keeps, are thousands after a day of owner traffic, and a tick with
// a job to visit paid for all of them.
class KeptState {
 public:
  const WatchState& get() const { return s_; }
  const RunMap& runs() const { return s_.runs; }
  const DrainMap& draining() const { return s_.draining; }
  // The state read from the file: saved as it is.
  void replace_saved(WatchState s) {
    s_ = std::move(s);
    unsaved_ = false;
  }
  void keep(uint32_t id, const RunRecord& r);
  void forget(uint32_t id) { unsaved_ = s_.runs.erase(id) != 0 || unsaved_; }
  RunMap::const_iterator forget(RunMap::const_iterator it) {
    unsaved_ = true;
    return s_.runs.erase(it);
  }
  void drain(uint32_t id, int64_t until);
  DrainMap::const_iterator undrain(DrainMap::const_iterator it) {
    unsaved_ = true;
    return s_.draining.erase(it);
  }
  bool unsaved() const { return unsaved_; }
  // What get() holds is now in the file.
  void saved() { unsaved_ = false; }

 private:
  WatchState s_;
  bool unsaved_ = false;
};

}  // namespace sp

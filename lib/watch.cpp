#include "watch.hpp"

#include <algorithm>
#include <charconv>
#include <csignal>

#include "preemption.hpp"
#include "refund.hpp"

namespace sp {
namespace {

// When the record's run ended, if known: as priority/fairshare told it, else Slurm's end time
// while the requeue or cancel completes (batch_requeue_fini clears it); 0: not known.
int64_t run_end(const WatchedJob& j, const RunRecord& last) {
  if (j.told_end != 0) return j.told_end;
  return j.completing && j.end >= last.start ? j.end : 0;
}

// Slurm's own grace check ended the record's run (requeued, or cancelled) at or after its grace
// end, before the watcher's visit: the grace end preempt/quota told (the one priority/fairshare
// refunds by), else the one the watcher set. A paused run's end is its pause's, never a kill's.
bool ended_at_grace_end(const WatchedJob& j, const RunRecord& last) {
  if (j.paused) return false;
  const int64_t grace_end = j.told_grace_end != 0 ? j.told_grace_end
                            : last.triggered      ? last.grace_end
                                                  : 0;
  return killed_at_grace_end(grace_end, run_end(j, last), false);
}

void settle_killed(const WatchedJob& j, const RunRecord& last, bool requeued, WatchAction& a) {
  a.settle = Settle::KilledAtGraceEnd;
  a.note_unseen_preemption = false;  // the kill's settle notes the preemption if unseen
  a.find_preemptor = !last.triggered;
  a.preempted_at = last.triggered ? last.preempt : j.told_preempt != 0 ? j.told_preempt : j.preempt;
  a.killed_at = run_end(j, last);
  a.requeued = requeued;
  a.restart = requeued ? j.restarts : 0;
  a.account_run = !requeued || j.completing;
  a.kill_leftovers = j.completing;
}

// A preempted run that is no longer running (the record says what the watcher saw of it).
void settle(const WatchedJob& j, const RunRecord& last, int64_t now, WatchAction& a) {
  if (!last.triggered && j.preempt != 0) a.note_unseen_preemption = true;
  if (j.state == WatchedJob::State::Pending && j.restarts > last.restart &&
      ended_at_grace_end(j, last)) {
    settle_killed(j, last, true, a);
  } else if (j.state == WatchedJob::State::Other && j.start == last.start &&
             ended_at_grace_end(j, last)) {
    settle_killed(j, last, false, a);
  } else if (j.state == WatchedJob::State::Pending && j.restarts > last.restart) {
    // Requeued (which clears preempt_time), by the job itself or its owner, in its grace.
    a.settle = Settle::RequeuedDuringGrace;
    a.find_preemptor = !last.triggered && !j.paused;
    if (j.paused) {
      // Slurm's own grace handling (its periodic pass, or a scheduler that took the job as a
      // victim) requeued a paused job before the watcher: it is held all the same.
      a.hold = true;
      a.hold_admin = j.paused_by_admin;
    }
    const int64_t grace_end = last.triggered ? last.grace_end : now + j.promise->grace_s;
    if (j.completing && grace_end > 0) a.drain_until = grace_end;
  } else if (j.state == WatchedJob::State::Pending && last.triggered &&
             j.restarts == last.restart) {
    // Pending again without a requeue: slurmctld died less than its state-save interval (5 s)
    // after this run started and came back without it (its node's copy is killed as an
    // orphan). A paused run must not start again by itself: hold it.
    a.settle = Settle::RunLost;
    if (j.paused) {
      a.hold = true;
      a.hold_admin = j.paused_by_admin;
    }
  } else if (j.state == WatchedJob::State::Exited && !j.requeue_in_hand && j.start == last.start) {
    // A pause asked for the requeue: the job's --requeue promise is not the question. A job
    // that said its work is finished and exits 0 is done, paused or not: another run would
    // only do it again. Any other exit is requeued, so that nothing is lost.
    const bool requeue = (j.promise->requeue || j.paused) && j.can_requeue;
    const bool finished = j.said_finished && j.exit_status == 0;
    a.settle = finished  ? Settle::ExitedFinished
               : requeue ? Settle::RequeueExited
                         : Settle::ExitedNoRequeue;
    if (a.settle == Settle::RequeueExited && j.paused) {
      a.hold = true;
      a.hold_admin = j.paused_by_admin;
    }
  }
  if (a.settle != Settle::None || a.note_unseen_preemption) {
    RunRecord done = last;
    done.settled = true;  // a tombstone: never settled twice, even after a restart
    a.keep = done;
  }
}

// A run the watcher was told Slurm preempted at once (grace 0) and never saw in a grace: it
// was requeued (pending, a restart more) or ended (cancelled, this run). Anything else (still
// running: the grace path kills it at once) is not settled here.
void settle_at_once(const WatchedJob& j, const RunRecord& last, WatchAction& a) {
  const bool requeued = j.state == WatchedJob::State::Pending && j.restarts > last.restart;
  const bool ended = j.state == WatchedJob::State::Other && j.start == last.start;
  if (!requeued && !ended) return;
  a.settle = Settle::PreemptedAtOnce;
  // Slurm clears preempt_time when the requeue completes (its epilog): then the event's time.
  a.preempted_at = j.preempt != 0 ? j.preempt : last.preempt;
  a.requeued = requeued;
  a.restart = requeued ? j.restarts : 0;
  a.account_run = !requeued || j.completing;
  RunRecord done = last;
  done.settled = true;  // a tombstone: noted once
  done.at_once = false;
  a.keep = done;
}

}  // namespace

void order_visits(std::vector<uint32_t>& ids, const RunMap& runs,
                  const std::vector<WatchEvent>& events, int64_t now) {
  enum Rank : uint8_t { kGraceOver = 0, kTold = 1, kRest = 2 };
  // What this tick's events say, by id (a job named twice: its most urgent).
  std::vector<std::pair<uint32_t, Rank>> told;
  told.reserve(events.size());
  for (const WatchEvent& e : events) {
    if (!tells_a_run(e.kind)) continue;  // a look at the job, nothing more
    const bool over =
        e.kind == WatchEvent::Kind::GraceStart && e.grace > 0 && e.at + e.grace <= now;
    told.emplace_back(e.job_id, over ? kGraceOver : kTold);
  }
  std::sort(told.begin(), told.end());
  const auto rank = [&](uint32_t id) {
    if (const auto r = runs.find(id); r != runs.end()) {
      const RunRecord& k = r->second;
      if (k.triggered && !k.settled && k.grace_end != 0 && k.grace_end <= now) return kGraceOver;
    }
    const auto t = std::lower_bound(told.begin(), told.end(), std::make_pair(id, kGraceOver));
    return t != told.end() && t->first == id ? t->second : kRest;
  };
  std::vector<std::pair<Rank, uint32_t>> ranked;
  ranked.reserve(ids.size());
  for (const uint32_t id : ids) ranked.emplace_back(rank(id), id);
  std::sort(ranked.begin(), ranked.end());
  for (std::size_t i = 0; i < ranked.size(); ++i) ids[i] = ranked[i].second;
}

int64_t grace_preempt_time(int64_t preempt_time, bool preemption_suspends) {
  return preemption_suspends ? 0 : preempt_time;
}

bool suspends_for_visit(bool preemption_suspends, const RunRecord* kept, int64_t run_start) {
  const bool grace_seen =
      kept != nullptr && kept->start == run_start && kept->triggered && !kept->settled;
  return preemption_suspends && !grace_seen;
}

bool run_end_needs_visit(bool requeued, bool followed) { return requeued || followed; }

RunRecord told_by(const WatchEvent& e) {
  RunRecord r;
  r.start = e.start;
  r.restart = e.restarts;
  if (e.kind == WatchEvent::Kind::GraceStart && e.grace == 0) {
    r.at_once = true;
    r.preempt = e.at;
  }
  return r;
}

std::optional<RunRecord> told_run(const RunRecord* kept, const RunRecord* told) {
  if (told == nullptr) return kept != nullptr ? std::optional<RunRecord>(*kept) : std::nullopt;
  if (kept == nullptr || told->restart > kept->restart ||
      (told->restart == kept->restart && told->start != kept->start)) {
    return *told;
  }
  RunRecord r = *kept;
  if (told->restart == kept->restart && told->at_once && !kept->triggered && !kept->settled) {
    r.at_once = true;
    r.preempt = told->preempt;
  }
  return r;
}

JobCheckpoint at_once_terms(const JobCheckpoint* promise) {
  JobCheckpoint c;
  c.signal = promise != nullptr ? promise->signal : SIGTERM;
  c.grace_s = 0;
  return c;
}

WatchAction watch(const WatchedJob& job, const RunRecord* last, int64_t now,
                  int64_t cred_lifetime) {
  WatchAction a;
  WatchedJob j = job;
  if (!j.paused && last != nullptr && last->paused && last->triggered && !last->settled &&
      (j.state != WatchedJob::State::Running || last->start == j.start)) {
    // The watcher saw this run's pause, the job's story no longer tells it: slurmctld died
    // before it saved the job's state. The run is still paused; its note is written back.
    j.paused = true;
    j.paused_by_admin = last->paused_admin;
    a.restore_pause_note = last->pause_note;
  }
  const bool running = j.state == WatchedJob::State::Running;
  RunRecord* run = nullptr;
  if (running && j.promise != nullptr) {
    RunRecord r;
    if (last != nullptr && last->start == j.start) r = *last;
    r.start = j.start;
    r.restart = j.restarts;
    a.keep = r;
    run = &*a.keep;
  } else if (running) {
    // An unmanaged running job: nothing to remember (a tombstone of an earlier run goes).
  } else if (last != nullptr && (last->settled || (j.suspended && last->start == j.start &&
                                                   !last->triggered && !last->at_once))) {
    // A tombstone, kept while Slurm keeps the job; or the record of a suspended run, which
    // goes on once resumed, its time-limit trigger sent or not.
    a.keep = *last;
  } else if (last != nullptr && last->at_once && !last->triggered) {
    settle_at_once(j, *last, a);  // managed or not: Slurm preempted it with grace 0
  } else if (j.promise != nullptr && last != nullptr &&
             (last->triggered || j.preempt != 0 ||
              (j.state == WatchedJob::State::Pending && j.restarts > last->restart))) {
    settle(j, *last, now, a);
  }
  int64_t end = j.end;
  int64_t preempt = j.preempt;
  if (run != nullptr && preempt == 0 && run->triggered && !run->settled && run->preempt != 0 &&
      !j.het) {
    // Slurm clears preempt_time only when a requeue completes: a running job without one that
    // the watcher saw preempted lost it in a slurmctld crash. The grace goes on as promised.
    // Never for one component of a heterogeneous job: Slurm ends the grace of all of them at
    // once and dereferences a null preemptor for a component without one (preempt.c).
    preempt = a.restore_preempt = run->preempt;
    if (run->grace_end > 0) end = a.set_end = run->grace_end;
  }
  if (run != nullptr && preempt != 0) {
    if (!run->triggered) {
      a.trigger = true;
      a.trigger_pause = j.paused;
      run->triggered = true;
      run->preempt = preempt;
      run->paused = j.paused;
      run->paused_admin = j.paused_by_admin;
      if (j.paused) run->pause_note = std::string(j.pause_note);
      // The job may have asked for less than its QOS grace: its nodes come back sooner.
      const int64_t asked = preempt + j.promise->grace_s;
      if (j.promise->grace_s >= 0 && end > asked) end = a.set_end = asked;
      run->grace_end = end;
    } else if (run->grace_end > 0 && end > run->grace_end) {
      end = a.set_end = run->grace_end;  // Slurm's saved end time lost the shortening
    }
  }
  if (run != nullptr && preempt == 0 && j.promise->lead_s > 0 && j.time_limited) {
    if (run->time_limit_triggered && run->time_limit_for == 0) {
      run->time_limit_for = j.time_limit;  // a record from before version 3: sent for this one
    } else if (time_limit_due(*run, j.time_limit, j.end, j.promise->lead_s, now)) {
      a.time_limit_signal = true;
      run->time_limit_triggered = true;
      run->time_limit_for = j.time_limit;
    }
  }
  if (grace_over(running, preempt, end, now)) {
    a.kill = true;
    if (j.paused && j.can_requeue) {
      a.hold = true;
      a.hold_admin = j.paused_by_admin;
    }
    if (j.promise != nullptr) {
      a.note_killed = true;
      if (run != nullptr) run->settled = true;
    }
  } else if (j.state == WatchedJob::State::Pending && j.restarts > 0 && j.has_details &&
             release_requeue_hold(j.submit, j.begin, cred_lifetime, j.completing, now)) {
    a.release_hold = true;
  }
  return a;
}

bool time_limit_due(const RunRecord& run, uint32_t time_limit, int64_t end, int64_t lead_s,
                    int64_t now) {
  return time_limit_timer_wanted(&run, time_limit) && end - lead_s <= now;
}

bool time_limit_timer_wanted(const RunRecord* kept, uint32_t time_limit) {
  return kept == nullptr || !kept->time_limit_triggered || time_limit > kept->time_limit_for;
}

bool needs_watching(const WatchedJob& j, const RunRecord* r, int64_t now, int64_t cred_lifetime) {
  if (j.state == WatchedJob::State::Running && j.preempt != 0) return true;
  if (r != nullptr && r->triggered && !r->settled) return true;
  if (awaits_requeue_hold(j.state, j.restarts, j.has_details, j.completing)) return true;
  return j.state == WatchedJob::State::Pending && j.restarts > 0 && j.has_details &&
         in_requeue_hold(j.submit, j.begin, cred_lifetime, now);
}

ScanVerdict scan_verdict(const ScanFacts& f, int64_t timer_start, int64_t now,
                         int64_t cred_lifetime, bool recovering) {
  if (f.state == WatchedJob::State::Running && f.preempt != 0) return ScanVerdict::Visit;
  if (recovering && f.managed && f.preempt != 0) return ScanVerdict::Visit;
  if (awaits_requeue_hold(f.state, f.restarts, f.has_details, f.completing)) {
    return ScanVerdict::Visit;
  }
  if (f.state == WatchedJob::State::Pending && f.restarts > 0 && f.has_details &&
      in_requeue_hold(f.submit, f.begin, cred_lifetime, now)) {
    return ScanVerdict::Visit;
  }
  if (f.managed && f.state == WatchedJob::State::Running && f.time_limited &&
      timer_start != f.start) {
    return ScanVerdict::ArmTimer;
  }
  return ScanVerdict::Skip;
}

KeptFate kept_fate(const RunRecord& r, const ScanFacts* job) {
  if (job == nullptr) return KeptFate::Forget;
  if (r.triggered && !r.settled) return KeptFate::Visit;  // a grace under way
  if (job->suspended && job->start == r.start && !r.settled && !r.at_once) {
    return KeptFate::Keep;  // watch() keeps it as it is until the run goes on
  }
  if (job->state == WatchedJob::State::Running) {
    if (job->start != r.start) return KeptFate::Forget;
    return !r.settled && job->preempt == 0 ? KeptFate::Keep : KeptFate::Visit;
  }
  return r.settled ? KeptFate::Keep : KeptFate::Visit;
}

std::optional<RunRecord> record_after_restart(const WatchedJob& j) {
  if (j.promise == nullptr || j.preempt == 0) return std::nullopt;
  if (j.state != WatchedJob::State::Running && j.state != WatchedJob::State::Exited) {
    return std::nullopt;
  }
  RunRecord r;
  r.start = j.start;
  r.restart = j.restarts;
  r.preempt = j.preempt;
  r.grace_end = j.end;
  return r;
}

int64_t idle_until(const WatcherLoad& load, int64_t next_scan, int64_t next_timer,
                   int64_t next_stats) {
  if (!load.events || !load.reconfigures_told || !load.recovered || load.recheck_conf ||
      load.following) {
    return 0;
  }
  int64_t until = std::min(next_scan, next_stats);
  if (next_timer > 0) until = std::min(until, next_timer);
  return std::max<int64_t>(until, 1);
}

bool reads_slurm_conf(bool read_before, bool reconfigures_told, bool told_since, bool recheck_conf,
                      bool scanning) {
  return !read_before || !reconfigures_told || told_since || recheck_conf || scanning;
}

int64_t next_tick_wait_ms(int64_t next_grace, int64_t idle_until, int64_t now_s, int64_t now_ms) {
  if (next_grace <= 0) {
    if (idle_until <= 0) return kTickMs;
    return std::clamp<int64_t>(idle_until * 1000 + kTickLateMs - now_ms, kTickMs, kIdleMaxMs);
  }
  if (now_s >= next_grace) return kTickRetryMs;
  return std::clamp<int64_t>(next_grace * 1000 + kTickLateMs - now_ms, kTickRetryMs, kTickMs);
}

DrainStep drain_step(bool job_known, bool completing, int64_t until, int64_t now) {
  if (!job_known || !completing) return DrainStep::Forget;
  return until <= now ? DrainStep::Kill : DrainStep::Wait;
}

ControlStep control_step(int64_t control, bool acting, int64_t held, bool held_ended) {
  if (held != 0 && held != control) return ControlStep::Forget;
  if (held != 0 && held_ended) return ControlStep::Wait;
  return acting && control != 0 ? ControlStep::Act : ControlStep::Wait;
}

namespace {

constexpr std::string_view kStateHeader = "slurm-preempt watcher 3";
constexpr std::string_view kStateHeaderV2 = "slurm-preempt watcher 2";
constexpr std::string_view kStateHeaderV1 = "slurm-preempt watcher 1";
constexpr int64_t kMaxTime = int64_t{1} << 40;  // far past any real epoch second

template <typename T>
bool parse_number(std::string_view t, T max, T* out) {
  T v{};
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size() || v < 0 || v > max) {
    return false;
  }
  *out = v;
  return true;
}

std::string_view next_field(std::string_view& line) {
  const auto sp = line.find(' ');
  const std::string_view f = line.substr(0, sp);
  line = sp == std::string_view::npos ? std::string_view() : line.substr(sp + 1);
  return f;
}

}  // namespace

std::string encode_watch_state(const WatchState& s) {
  std::string out(kStateHeader);
  out += '\n';
  out.reserve(out.size() + 64 * (s.runs.size() + s.draining.size()));
  const auto number = [&out](int64_t v) {
    char buf[24];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    (void)ec;  // 24 characters hold any int64_t
    out.append(buf, end);
  };
  for (const auto& [id, r] : s.runs) {
    out += "run ";
    number(id);
    out += ' ';
    number(r.start);
    out += ' ';
    number(r.restart);
    out += ' ';
    const std::size_t flags = out.size();
    if (r.triggered) out += 't';
    if (r.time_limit_triggered) out += 'l';
    if (r.settled) out += 's';
    if (r.paused) out += 'p';
    if (r.paused && r.paused_admin) out += 'a';
    if (out.size() == flags) out += '-';
    out += ' ';
    number(r.preempt);
    out += ' ';
    number(r.grace_end);
    out += ' ';
    number(r.time_limit_for);
    if (r.paused && !r.pause_note.empty() && r.pause_note.find('\n') == std::string::npos) {
      out += ' ';
      out += r.pause_note;
    }
    out += '\n';
  }
  for (const auto& [id, until] : s.draining) {
    out += "drain ";
    number(id);
    out += ' ';
    number(until);
    out += '\n';
  }
  return out;
}

namespace {

// Sets m[id] to v; whether that changed the map.
template <class Map, class Value>
bool set_changed(Map& m, uint32_t id, const Value& v) {
  const auto [it, inserted] = m.try_emplace(id, v);
  if (inserted) return true;
  if (it->second == v) return false;
  it->second = v;
  return true;
}

}  // namespace

void KeptState::keep(uint32_t id, const RunRecord& r) {
  unsaved_ = set_changed(s_.runs, id, r) || unsaved_;
}

void KeptState::drain(uint32_t id, int64_t until) {
  unsaved_ = set_changed(s_.draining, id, until) || unsaved_;
}

std::optional<WatchState> decode_watch_state(std::string_view text, std::string* error) {
  WatchState s;
  size_t line_no = 0;
  int version = 3;
  const auto fail = [&](std::string_view why) -> std::optional<WatchState> {
    if (error != nullptr) *error = "line " + std::to_string(line_no) + ": " + std::string(why);
    return std::nullopt;
  };
  while (!text.empty()) {
    ++line_no;
    const auto nl = text.find('\n');
    if (nl == std::string_view::npos) return fail("the last line has no newline (truncated?)");
    std::string_view line = text.substr(0, nl);
    text = text.substr(nl + 1);
    if (line_no == 1) {
      if (line == kStateHeaderV1) {
        version = 1;
      } else if (line == kStateHeaderV2) {
        version = 2;
      } else if (line != kStateHeader) {
        return fail("not a slurm-preempt watcher state, version 1, 2 or 3");
      }
      continue;
    }
    const std::string_view kind = next_field(line);
    uint32_t id = 0;
    if (!parse_number(next_field(line), UINT32_MAX, &id) || id == 0) return fail("bad job id");
    if (kind == "run") {
      RunRecord r;
      if (!parse_number(next_field(line), kMaxTime, &r.start)) return fail("bad start time");
      if (!parse_number(next_field(line), UINT32_MAX, &r.restart)) return fail("bad restart");
      const std::string_view flags = next_field(line);
      if (flags.empty()) return fail("no flags");
      for (const char f : flags) {
        if (f == 't') {
          r.triggered = true;
        } else if (f == 'l') {
          r.time_limit_triggered = true;
        } else if (f == 's') {
          r.settled = true;
        } else if (f == 'p' && version >= 2) {
          r.paused = true;
        } else if (f == 'a' && version >= 2) {
          r.paused_admin = true;
        } else if (f != '-' || flags.size() != 1) {
          return fail("bad flags");
        }
      }
      if (!parse_number(next_field(line), kMaxTime, &r.preempt)) return fail("bad preempt time");
      if (!parse_number(next_field(line), kMaxTime, &r.grace_end)) return fail("bad grace end");
      if (version >= 3 && !parse_number(next_field(line), UINT32_MAX, &r.time_limit_for)) {
        return fail("bad time limit");
      }
      if (r.paused_admin && !r.paused) return fail("bad flags");
      if (r.paused && !line.empty()) {
        if (line.size() > 1024) return fail("pause note too long");
        r.pause_note = std::string(line);
        line = {};
      }
      s.runs[id] = r;
    } else if (kind == "drain") {
      int64_t until = 0;
      if (!parse_number(next_field(line), kMaxTime, &until)) return fail("bad drain time");
      s.draining[id] = until;
    } else {
      return fail("unknown record");
    }
    if (!line.empty()) return fail("extra fields");
  }
  if (line_no == 0) return fail("empty");
  return s;
}

}  // namespace sp

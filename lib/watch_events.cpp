#include "watch_events.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "refund.hpp"

namespace sp {

void WatchEventQueue::push(const WatchEvent& e) {
  const std::lock_guard<std::mutex> lk(m_);
  if (events_.size() >= capacity_) {
    events_.pop_front();  // the oldest goes
    ++dropped_;
  }
  events_.push_back(e);
}

std::size_t WatchEventQueue::drain(std::vector<WatchEvent>& out) {
  const std::lock_guard<std::mutex> lk(m_);
  out.insert(out.end(), events_.begin(), events_.end());
  events_.clear();
  const std::size_t dropped = dropped_;
  dropped_ = 0;
  return dropped;
}

std::size_t WatchEventQueue::size() const {
  const std::lock_guard<std::mutex> lk(m_);
  return events_.size();
}

void PreemptedRuns::add(const Run& r) {
  const Key key{r.job_id, r.start};
  runs_[key] = r;
  order_.push_back(key);
  while (runs_.size() > capacity_ && !order_.empty()) {
    runs_.erase(order_.front());
    order_.pop_front();
  }
  // Forgotten runs' keys: dropped once they outnumber the runs, so order_ stays bounded.
  if (order_.size() > 2 * runs_.size() + 64) {
    std::deque<Key> kept;
    for (const Key& k : order_) {
      if (runs_.count(k) != 0) kept.push_back(k);
    }
    order_.swap(kept);
  }
}

void PreemptedRuns::graced(uint32_t job_id, int64_t run_start, int64_t at, int64_t grace_end,
                           bool watched) {
  const std::lock_guard<std::mutex> lk(m_);
  if (capacity_ == 0) return;
  add(Run{job_id, run_start, at, grace_end, 0, watched});
}

void PreemptedRuns::remember(uint32_t job_id, int64_t run_start, int64_t at, int64_t grace_end) {
  const std::lock_guard<std::mutex> lk(m_);
  if (capacity_ == 0 || runs_.count(Key{job_id, run_start}) != 0) return;
  add(Run{job_id, run_start, at, grace_end, 0, true});
}

bool PreemptedRuns::ended(uint32_t job_id, int64_t run_start, int64_t at, bool exited) {
  const std::lock_guard<std::mutex> lk(m_);
  const auto it = runs_.find(Key{job_id, run_start});
  if (it == runs_.end()) return false;
  Run& r = it->second;
  if (r.ended != 0) return true;  // told already: killed then
  const bool killed = killed_at_grace_end(r.grace_end, at, exited);
  if (killed && r.watched) {
    r.ended = at;
  } else {
    runs_.erase(it);
  }
  return killed;
}

std::optional<PreemptedRuns::Run> PreemptedRuns::find(uint32_t job_id, int64_t run_start) const {
  const std::lock_guard<std::mutex> lk(m_);
  const auto it = runs_.find(Key{job_id, run_start});
  if (it == runs_.end()) return std::nullopt;
  return it->second;
}

void PreemptedRuns::take(uint32_t job_id, int64_t run_start) {
  const std::lock_guard<std::mutex> lk(m_);
  runs_.erase(Key{job_id, run_start});
}

void PreemptedRuns::clear() {
  const std::lock_guard<std::mutex> lk(m_);
  runs_.clear();
}

std::size_t PreemptedRuns::size() const {
  const std::lock_guard<std::mutex> lk(m_);
  return runs_.size();
}

std::size_t LockStats::slot(const char* site, Kind kind) {
  const std::lock_guard<std::mutex> lk(m_);
  for (std::size_t i = 0; i < kSites; ++i) {
    const char* name = slots_[i].name.load();
    if (name == nullptr) {
      slots_[i].kind.store(kind);
      slots_[i].name.store(site);
      return i;
    }
    if (std::strcmp(name, site) == 0 && slots_[i].kind.load() == kind) return i;
  }
  return kSites;
}

void LockStats::Series::add(uint64_t ns) {
  sum_ns.fetch_add(ns, std::memory_order_relaxed);
  uint64_t seen = max_ns.load(std::memory_order_relaxed);
  while (ns > seen && !max_ns.compare_exchange_weak(seen, ns, std::memory_order_relaxed)) {
  }
  buckets[bucket_of(ns / 1000)].fetch_add(1, std::memory_order_relaxed);
}

std::size_t LockStats::bucket_of(uint64_t us) {
  const auto octave = static_cast<std::size_t>(std::bit_width(us));  // us in [2^(o-1), 2^o)
  if (octave < 3) return octave;
  const std::size_t quarter = (us >> (octave - 3)) & 3;  // the two bits after the leading one
  return std::min<std::size_t>(3 + (octave - 3) * 4 + quarter, kBuckets - 1);
}

uint64_t LockStats::bucket_upper_us(std::size_t bucket) {
  if (bucket < 3) return uint64_t{1} << bucket;
  const std::size_t i = bucket - 3;
  return (5 + i % 4) << (i / 4);
}

LockStats::Measure LockStats::Series::read() const {
  Measure m;
  m.max_ns = max_ns.load();
  m.sum_ns = sum_ns.load();
  uint64_t total = 0;
  for (std::size_t i = 0; i < kBuckets; ++i) total += m.buckets[i] = buckets[i].load();
  uint64_t seen = 0;
  for (std::size_t i = 0; i < kBuckets; ++i) {
    const uint64_t upper = bucket_upper_us(i);
    const uint64_t before = seen;
    seen += m.buckets[i];
    if (before * 2 < total && seen * 2 >= total) m.p50_us = upper;
    if (before * 100 < total * 99 && seen * 100 >= total * 99) m.p99_us = upper;
  }
  return m;
}

void LockStats::record(std::size_t slot, uint64_t wall_ns, uint64_t cpu_ns, uint64_t units,
                       const HoldDetail& detail) {
  if (slot >= kSites) return;
  Slot& s = slots_[slot];
  s.units.fetch_add(units, std::memory_order_relaxed);
  s.faults.fetch_add(detail.faults, std::memory_order_relaxed);
  s.cpu.add(cpu_ns);
  const bool calm = detail.voluntary_switches == 0 && detail.involuntary_switches == 0;
  const auto above = [cpu_ns](const std::atomic<uint64_t>& max) {
    return cpu_ns > max.load(std::memory_order_relaxed);
  };
  if (above(s.cpu_max_ns) || (calm && above(s.cpu_max_unswitched_ns))) {
    // Rare: a new maximum. Both change together, so a snapshot agrees; a longer hold recorded
    // meanwhile may have been here first.
    const std::lock_guard<std::mutex> lk(s.max_m);
    if (above(s.cpu_max_ns)) {
      s.cpu_max_ns.store(cpu_ns, std::memory_order_relaxed);
      s.cpu_max = detail;
    }
    if (calm && above(s.cpu_max_unswitched_ns)) {
      s.cpu_max_unswitched_ns.store(cpu_ns, std::memory_order_relaxed);
    }
  }
  s.wall.add(wall_ns);  // last: a snapshot's count is the wall histogram's total
}

std::vector<LockStats::Site> LockStats::snapshot() const {
  std::vector<Site> out;
  for (const Slot& s : slots_) {
    const char* name = s.name.load();
    if (name == nullptr) break;
    Site site;
    site.name = name;
    site.kind = s.kind.load();
    site.units = s.units.load();
    site.wall = s.wall.read();
    site.cpu = s.cpu.read();
    site.faults = s.faults.load();
    {
      // The longest CPU hold with its detail, as one: a hold being recorded now may have
      // raised the histogram's maximum without its detail yet.
      const std::lock_guard<std::mutex> lk(s.max_m);
      site.cpu.max_ns = s.cpu_max_ns.load(std::memory_order_relaxed);
      site.cpu_max = s.cpu_max;
      site.cpu_max_unswitched_ns = s.cpu_max_unswitched_ns.load(std::memory_order_relaxed);
    }
    for (const uint64_t n : site.wall.buckets) site.count += n;
    out.push_back(std::move(site));
  }
  return out;
}

namespace {

const char* kind_name(LockStats::Kind k) {
  switch (k) {
    case LockStats::Kind::Write: return "write";
    case LockStats::Kind::None: return "none";
    case LockStats::Kind::Read: break;
  }
  return "read";
}

std::string measure_text(const char* prefix, const LockStats::Measure& m) {
  const std::string p(prefix);
  std::string out = " " + p + "max_us=" + std::to_string(m.max_ns / 1000) + " " + p +
                    "p50_us<=" + std::to_string(m.p50_us) + " " + p +
                    "p99_us<=" + std::to_string(m.p99_us) + " " + p +
                    "sum_us=" + std::to_string(m.sum_ns / 1000) + " " + p + "hist=";
  const char* sep = "";
  for (std::size_t i = 0; i < LockStats::kBuckets; ++i) {
    if (m.buckets[i] == 0) continue;
    out += sep + std::to_string(LockStats::bucket_upper_us(i)) + ":" + std::to_string(m.buckets[i]);
    sep = ",";
  }
  return out;
}

}  // namespace

std::string LockStats::format(const std::vector<Site>& sites) {
  std::string out;
  for (const Site& s : sites) {
    out += s.name + " " + kind_name(s.kind) + " count=" + std::to_string(s.count) +
           " units=" + std::to_string(s.units) + measure_text("", s.wall) +
           measure_text("cpu_", s.cpu) + " cpu_max_at=" + std::to_string(s.cpu_max.at) +
           " cpu_max_faults=" + std::to_string(s.cpu_max.faults) +
           " cpu_max_vcsw=" + std::to_string(s.cpu_max.voluntary_switches) +
           " cpu_max_ivcsw=" + std::to_string(s.cpu_max.involuntary_switches) +
           " faults=" + std::to_string(s.faults) +
           " cpu_max_unswitched_us=" + std::to_string(s.cpu_max_unswitched_ns / 1000) + "\n";
  }
  return out;
}

}  // namespace sp

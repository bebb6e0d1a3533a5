#include "watch_events.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

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

void LostAtOnce::add(uint32_t job_id, int64_t run_start) {
  const std::lock_guard<std::mutex> lk(m_);
  if (capacity_ == 0) return;
  if (runs_.size() >= capacity_) runs_.pop_front();
  runs_.emplace_back(job_id, run_start);
}

bool LostAtOnce::take(uint32_t job_id, int64_t run_start) {
  const std::lock_guard<std::mutex> lk(m_);
  const auto it = std::find(runs_.begin(), runs_.end(), std::make_pair(job_id, run_start));
  if (it == runs_.end()) return false;
  runs_.erase(it);
  return true;
}

std::size_t LostAtOnce::size() const {
  const std::lock_guard<std::mutex> lk(m_);
  return runs_.size();
}

std::size_t LockStats::slot(const char* site, bool write) {
  const std::lock_guard<std::mutex> lk(m_);
  for (std::size_t i = 0; i < kSites; ++i) {
    const char* name = slots_[i].name.load();
    if (name == nullptr) {
      slots_[i].write.store(write);
      slots_[i].name.store(site);
      return i;
    }
    if (std::strcmp(name, site) == 0 && slots_[i].write.load() == write) return i;
  }
  return kSites;
}

void LockStats::record(std::size_t slot, uint64_t ns) {
  if (slot >= kSites) return;
  Slot& s = slots_[slot];
  s.count.fetch_add(1, std::memory_order_relaxed);
  uint64_t seen = s.max_ns.load(std::memory_order_relaxed);
  while (ns > seen && !s.max_ns.compare_exchange_weak(seen, ns, std::memory_order_relaxed)) {
  }
  const uint64_t us = ns / 1000;
  const std::size_t bucket = std::min<std::size_t>(std::bit_width(us), kBuckets - 1);
  s.buckets[bucket].fetch_add(1, std::memory_order_relaxed);
}

std::vector<LockStats::Site> LockStats::snapshot() const {
  std::vector<Site> out;
  for (const Slot& s : slots_) {
    const char* name = s.name.load();
    if (name == nullptr) break;
    Site site;
    site.name = name;
    site.write = s.write.load();
    site.max_ns = s.max_ns.load();
    std::array<uint64_t, kBuckets> b{};
    uint64_t total = 0;
    for (std::size_t i = 0; i < kBuckets; ++i) total += b[i] = s.buckets[i].load();
    site.count = total;
    site.buckets = b;
    uint64_t seen = 0;
    for (std::size_t i = 0; i < kBuckets; ++i) {
      const uint64_t upper = i == 0 ? 1 : uint64_t{1} << i;
      const uint64_t before = seen;
      seen += b[i];
      if (before * 2 < total && seen * 2 >= total) site.p50_us = upper;
      if (before * 100 < total * 99 && seen * 100 >= total * 99) site.p99_us = upper;
    }
    out.push_back(std::move(site));
  }
  return out;
}

std::string LockStats::format(const std::vector<Site>& sites) {
  std::string out;
  for (const Site& s : sites) {
    out += s.name + (s.write ? " write" : " read") + " count=" + std::to_string(s.count) +
           " max_us=" + std::to_string(s.max_ns / 1000) + " p50_us<=" + std::to_string(s.p50_us) +
           " p99_us<=" + std::to_string(s.p99_us) + " hist=";
    const char* sep = "";
    for (std::size_t i = 0; i < kBuckets; ++i) {
      if (s.buckets[i] == 0) continue;
      out += sep + std::to_string(i) + ":" + std::to_string(s.buckets[i]);
      sep = ",";
    }
    out += "\n";
  }
  return out;
}

}  // namespace sp

#include "quota_report.hpp"

#include <algorithm>
#include <charconv>
#include <ctime>

namespace sp {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

bool parse_u64(std::string_view s, uint64_t& out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr != s.data();
}

uint64_t gpus_of(std::string_view tres) {
  while (!tres.empty()) {
    const auto comma = tres.find(',');
    const std::string_view kv = tres.substr(0, comma);
    uint64_t n = 0;
    if (kv.substr(0, 9) == "gres/gpu=" && parse_u64(kv.substr(9), n)) return n;
    tres = comma == std::string_view::npos ? std::string_view() : tres.substr(comma + 1);
  }
  return 0;
}

// "2026-11-23T14:45:56" in local time; 0 for "N/A", "Unknown" or anything else.
int64_t start_of(std::string_view s) {
  std::tm tm{};
  if (s.size() != 19 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
      s[16] != ':') {
    return 0;
  }
  uint64_t v[6] = {};
  const std::size_t at[6] = {0, 5, 8, 11, 14, 17};
  const std::size_t len[6] = {4, 2, 2, 2, 2, 2};
  for (int i = 0; i < 6; ++i) {
    if (!parse_u64(s.substr(at[i], len[i]), v[i])) return 0;
  }
  tm.tm_year = static_cast<int>(v[0]) - 1900;
  tm.tm_mon = static_cast<int>(v[1]) - 1;
  tm.tm_mday = static_cast<int>(v[2]);
  tm.tm_hour = static_cast<int>(v[3]);
  tm.tm_min = static_cast<int>(v[4]);
  tm.tm_sec = static_cast<int>(v[5]);
  tm.tm_isdst = -1;
  const std::time_t t = std::mktime(&tm);
  return t < 0 ? 0 : static_cast<int64_t>(t);
}

std::string limit_of(const QuotaLine& l) { return l.limit < 0 ? "-" : std::to_string(l.limit); }

std::vector<std::vector<std::string>> cells(const std::vector<QuotaLine>& lines) {
  std::vector<std::vector<std::string>> out;
  out.push_back(
      {"project", "pool", "quota", "limit", "used", "nonpreemptible", "borrowed", "pending"});
  for (const auto& l : lines) {
    out.push_back({l.project, l.pool, std::to_string(l.quota), limit_of(l), std::to_string(l.used),
                   std::to_string(l.nonpreemptible), std::to_string(l.borrowed),
                   std::to_string(l.pending)});
  }
  return out;
}

}  // namespace

std::string squeue_quota_format() {
  return "JobID:|,Account:|,Partition:|,QOS:|,State:|,tres-alloc:|,StartTime:|";
}

std::vector<ListedJob> parse_squeue_quota(std::string_view text) {
  std::vector<ListedJob> out;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    std::vector<std::string_view> cols;
    while (!line.empty()) {
      const auto bar = line.find('|');
      cols.push_back(trim(line.substr(0, bar)));
      line = bar == std::string_view::npos ? std::string_view() : line.substr(bar + 1);
    }
    if (cols.size() < 7) continue;
    ListedJob j;
    uint64_t id = 0;
    // An array task reads "12_3"; its leading number is enough for the report.
    const auto r = std::from_chars(cols[0].data(), cols[0].data() + cols[0].size(), id);
    if (r.ec != std::errc() || r.ptr == cols[0].data() || id == 0 || id > UINT32_MAX) continue;
    if (cols[4] != "RUNNING" && cols[4] != "PENDING") continue;
    j.job_id = static_cast<uint32_t>(id);
    j.account = cols[1];
    j.partition = cols[2];
    j.qos = cols[3];
    j.running = cols[4] == "RUNNING";
    j.gpus = gpus_of(cols[5]);
    j.start_time = j.running ? start_of(cols[6]) : 0;
    out.push_back(std::move(j));
  }
  return out;
}

std::string format_quota_parsable(const std::vector<QuotaLine>& lines) {
  std::string out;
  for (const auto& row : cells(lines)) {
    for (std::size_t i = 0; i < row.size(); ++i) out += (i ? "|" : "") + row[i];
    out += '\n';
  }
  return out;
}

std::string format_quota_table(const std::vector<QuotaLine>& lines) {
  const auto table = cells(lines);
  std::vector<std::size_t> width(table[0].size(), 0);
  for (const auto& row : table) {
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : table) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i) line += "  ";
      // Names left-aligned, numbers right-aligned.
      const std::string pad(width[i] - row[i].size(), ' ');
      line += i < 2 ? row[i] + pad : pad + row[i];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + '\n';
  }
  return out;
}

}  // namespace sp

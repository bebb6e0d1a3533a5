#include "units.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <csignal>
#include <cstdio>

namespace sp {
namespace {

std::optional<int64_t> parse_uint(std::string_view s) {
  if (s.empty() || s.size() > 12) return std::nullopt;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// "HH:MM:SS", "MM:SS", "HH" (after a day prefix) -> seconds.
std::optional<int64_t> parse_clock(std::string_view s, bool after_days) {
  std::array<int64_t, 3> parts{};
  std::size_t n = 0;
  while (true) {
    auto colon = s.find(':');
    auto part = parse_uint(s.substr(0, colon));
    if (!part || n == parts.size()) return std::nullopt;
    parts[n++] = *part;
    if (colon == std::string_view::npos) break;
    s.remove_prefix(colon + 1);
  }
  if (after_days) {  // D-HH, D-HH:MM, D-HH:MM:SS
    return parts[0] * 3600 + (n > 1 ? parts[1] * 60 : 0) + (n > 2 ? parts[2] : 0);
  }
  switch (n) {
    case 1: return parts[0];                                     // plain seconds
    case 2: return parts[0] * 60 + parts[1];                     // MM:SS
    default: return parts[0] * 3600 + parts[1] * 60 + parts[2];  // HH:MM:SS
  }
}

struct NamedSignal {
  const char* name;
  int signo;
};
constexpr std::array<NamedSignal, 14> kSignals{{{"HUP", SIGHUP},
                                                {"INT", SIGINT},
                                                {"QUIT", SIGQUIT},
                                                {"ABRT", SIGABRT},
                                                {"KILL", SIGKILL},
                                                {"USR1", SIGUSR1},
                                                {"SEGV", SIGSEGV},
                                                {"USR2", SIGUSR2},
                                                {"PIPE", SIGPIPE},
                                                {"ALRM", SIGALRM},
                                                {"TERM", SIGTERM},
                                                {"CONT", SIGCONT},
                                                {"STOP", SIGSTOP},
                                                {"URG", SIGURG}}};

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(a[i])) != b[i]) return false;
  }
  return true;
}

std::optional<int64_t> parse_duration_unbounded(std::string_view t) {
  if (t.empty()) return std::nullopt;
  const char unit = t.back();
  int64_t mult = 0;
  switch (unit) {
    case 's': mult = 1; break;
    case 'm': mult = 60; break;
    case 'h': mult = 3600; break;
    case 'd': mult = 86400; break;
    default: break;
  }
  if (mult != 0) {
    auto v = parse_uint(t.substr(0, t.size() - 1));
    if (!v) return std::nullopt;
    return *v * mult;
  }
  auto dash = t.find('-');
  if (dash != std::string_view::npos) {
    auto days = parse_uint(t.substr(0, dash));
    auto rest = parse_clock(t.substr(dash + 1), true);
    if (!days || !rest) return std::nullopt;
    return *days * 86400 + *rest;
  }
  return parse_clock(t, false);
}
}  // namespace

std::optional<int64_t> parse_duration(std::string_view t) {
  const auto v = parse_duration_unbounded(t);
  if (!v || *v > kMaxDurationSeconds) return std::nullopt;
  return v;
}

std::optional<int> parse_signal(std::string_view t) {
  if (t.size() > 3 && iequals(t.substr(0, 3), "SIG")) t.remove_prefix(3);
  if (t.empty()) return std::nullopt;
  // A number, bare or as signal_name() prints one without a name ("SIG40").
  if (std::isdigit(static_cast<unsigned char>(t.front()))) {
    auto v = parse_uint(t);
    if (!v || *v < 1 || *v > 64) return std::nullopt;
    return static_cast<int>(*v);
  }
  for (const auto& s : kSignals) {
    if (iequals(t, s.name)) return s.signo;
  }
  return std::nullopt;
}

std::string signal_name(int signo) {
  for (const auto& s : kSignals) {
    if (s.signo == signo) return s.name;
  }
  return "SIG" + std::to_string(signo);
}

std::optional<std::vector<std::string>> expand_hostlist(std::string_view expr,
                                                        std::size_t max_hosts) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < expr.size()) {
    // One item: prefix, optionally followed by [ranges] and a suffix-free end.
    std::size_t start = i;
    while (i < expr.size() && expr[i] != ',' && expr[i] != '[') ++i;
    std::string prefix(expr.substr(start, i - start));
    if (i < expr.size() && expr[i] == '[') {
      auto close = expr.find(']', i);
      if (close == std::string_view::npos || prefix.empty()) return std::nullopt;
      std::string_view ranges = expr.substr(i + 1, close - i - 1);
      if (ranges.empty()) return std::nullopt;
      while (!ranges.empty()) {
        auto comma = ranges.find(',');
        std::string_view r = ranges.substr(0, comma);
        ranges = comma == std::string_view::npos ? std::string_view{} : ranges.substr(comma + 1);
        if (r.empty()) return std::nullopt;
        auto dash = r.find('-');
        std::string_view lo_s = r.substr(0, dash);
        std::string_view hi_s = dash == std::string_view::npos ? lo_s : r.substr(dash + 1);
        auto lo = parse_uint(lo_s);
        auto hi = parse_uint(hi_s);
        if (!lo || !hi || *lo > *hi) return std::nullopt;
        const std::size_t width = lo_s.size();
        for (int64_t v = *lo; v <= *hi; ++v) {
          if (out.size() >= max_hosts) return std::nullopt;
          std::string num = std::to_string(v);
          if (num.size() < width) num.insert(0, width - num.size(), '0');
          out.push_back(prefix + num);
        }
      }
      i = close + 1;
      if (i < expr.size() && expr[i] != ',') return std::nullopt;
    } else {
      if (prefix.empty()) return std::nullopt;
      if (out.size() >= max_hosts) return std::nullopt;
      out.push_back(prefix);
    }
    if (i < expr.size()) {  // at a comma
      ++i;
      if (i == expr.size()) return std::nullopt;
    }
  }
  if (out.empty()) return std::nullopt;
  return out;
}

}  // namespace sp

namespace sp {

std::string format_duration(int64_t s) {
  if (s < 0) s = 0;
  const int64_t d = s / 86400;
  s %= 86400;
  char buf[32];
  if (d > 0) {
    std::snprintf(buf, sizeof buf, "%lld-%02lld:%02lld:%02lld", static_cast<long long>(d),
                  static_cast<long long>(s / 3600), static_cast<long long>(s / 60 % 60),
                  static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  }
  return buf;
}

}  // namespace sp

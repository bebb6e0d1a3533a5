// The one log sink of the suite. lib/ reports through it; each plugin provides the sink that
// forwards to Slurm's log with its "plugin_type: " prefix, so every message is greppable by
// plugin and arrives whole.
#pragma once

#include <cstring>
#include <initializer_list>
#include <string_view>

namespace sp {

enum class LogLevel { Error, Info, Verbose, Debug };

// The helpers are log_info() etc., not info(): Slurm's log.h defines info(), error(), debug()
// and verbose() as function-like macros in every translation unit that includes it.
class LogSink {
 public:
  virtual ~LogSink() = default;
  virtual void write(LogLevel level, std::string_view message) = 0;

  void log_error(std::string_view m) { write(LogLevel::Error, m); }
  void log_info(std::string_view m) { write(LogLevel::Info, m); }
  void log_verbose(std::string_view m) { write(LogLevel::Verbose, m); }
  void log_debug(std::string_view m) { write(LogLevel::Debug, m); }

  // The parts joined by ": " as one error line, built without allocating (truncated at
  // 1 KiB): for catch handlers, which may run because memory ran out.
  void log_error_parts(std::initializer_list<std::string_view> parts) noexcept {
    char line[1024];
    size_t n = 0;
    const auto append = [&](std::string_view part) {
      const size_t k = part.size() < sizeof(line) - n ? part.size() : sizeof(line) - n;
      std::memcpy(line + n, part.data(), k);
      n += k;
    };
    bool first = true;
    for (const std::string_view part : parts) {
      if (!first) append(": ");
      append(part);
      first = false;
    }
    try {
      write(LogLevel::Error, std::string_view(line, n));
    } catch (...) {  // NOLINT(bugprone-empty-catch): a log line that cannot be written is lost
    }
  }
};

}  // namespace sp

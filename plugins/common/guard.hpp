// No exception crosses an extern "C" entry point: every one runs its body through guard(),
// which logs what escaped (through the plugin's sink, when it has one) and returns a fallback.
// The handlers allocate nothing: the exception may be an allocation that failed. Slurm's locks
// taken in the body are released by their scoped objects (slurm_locks.hpp) before this runs.
#pragma once

#include <exception>

#include "log.hpp"

namespace sp {

template <typename F, typename R>
R guard(LogSink* log, const char* where, R fallback, F&& body) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    if (log) log->log_error_parts({where, "internal error", e.what()});
  } catch (...) {
    if (log) log->log_error_parts({where, "internal error"});
  }
  return fallback;
}

}  // namespace sp

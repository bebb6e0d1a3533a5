// How long one hold of slurmctld's write locks may go on over a list of work (README
// "Inside slurmctld"). No Slurm header: the unit tests cover it.
#pragma once

#include <chrono>
#include <cstddef>

namespace sp {

// The wall-time budget of one hold of Slurm's write locks over a list of work (jobs to visit or
// recalculate): `spent(done)` is true once `budget` has passed since construction, the clock read
// every `every` units of work done. The caller releases the locks then and goes on where it
// stopped in the next hold, so one hold stays near the budget whatever the list's length (plus
// one unit: a unit is never cut in two).
class HoldBudget {
 public:
  explicit HoldBudget(std::chrono::microseconds budget, std::size_t every = 1) noexcept
      : start_(std::chrono::steady_clock::now()), budget_(budget), every_(every == 0 ? 1 : every) {}
  [[nodiscard]] bool spent(std::size_t done) const noexcept {
    return done % every_ == 0 && std::chrono::steady_clock::now() - start_ >= budget_;
  }

 private:
  std::chrono::steady_clock::time_point start_;
  std::chrono::microseconds budget_;
  std::size_t every_;
};

}  // namespace sp

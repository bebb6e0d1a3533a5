// Time is injected: plugins pass a SystemClock, tests and benchmarks a fixed one.
#pragma once

#include <cstdint>
#include <ctime>

namespace sp {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t now() const = 0;  // seconds since the epoch
};

class SystemClock final : public Clock {
 public:
  int64_t now() const override { return static_cast<int64_t>(std::time(nullptr)); }
};

class FixedClock final : public Clock {
 public:
  explicit FixedClock(int64_t t) : t_(t) {}
  int64_t now() const override { return t_; }
  void set(int64_t t) { t_ = t; }

 private:
  int64_t t_;
};

}  // namespace sp

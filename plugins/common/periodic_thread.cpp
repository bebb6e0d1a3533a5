#include "periodic_thread.hpp"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

namespace sp {

struct PeriodicThread::Shared {
  std::shared_ptr<LogSink> log;
  std::string name;
  Period period;
  Task task;
  std::mutex m;
  std::condition_variable cv;
  bool woken = false;
  bool exited = false;
  std::atomic<bool> stopping{false};

  void loop() noexcept {
    try {
      std::unique_lock<std::mutex> lk(m);
      while (!stopping.load()) {
        const auto wait = period();
        cv.wait_for(lk, wait, [this] { return stopping.load() || woken; });
        if (stopping.load()) break;
        woken = false;
        lk.unlock();
        run_once();
        lk.lock();
      }
      exited = true;
    } catch (...) {  // NOLINT(bugprone-empty-catch): the lock or the period failed; stop
      log->log_error_parts({name, "stopped by an internal error"});
      const std::lock_guard<std::mutex> lk(m);
      exited = true;
    }
    cv.notify_all();
  }

  void run_once() noexcept {
    try {
      task(stopping);
    } catch (const std::exception& e) {
      log->log_error_parts({name, e.what()});
    } catch (...) {
      log->log_error_parts({name, "unknown error"});
    }
  }
};

PeriodicThread::PeriodicThread(std::shared_ptr<LogSink> log, std::string name, Period period,
                               Task task)
    : s_(std::make_shared<Shared>()) {
  s_->log = std::move(log);
  s_->name = std::move(name);
  s_->period = std::move(period);
  s_->task = std::move(task);
  // The thread holds the shared state: it outlives this object if it must.
  std::thread([s = s_] { s->loop(); }).detach();
}

PeriodicThread::~PeriodicThread() { stop(); }

void PeriodicThread::stop() noexcept {
  // The thread holds the mutex only between waits, never while its task runs (which may wait
  // for Slurm's locks): taking it here cannot block for long, and no wake-up is lost.
  try {
    const std::lock_guard<std::mutex> lk(s_->m);
    s_->stopping.store(true);
  } catch (...) {  // NOLINT(bugprone-empty-catch): stopping without the lock still stops
    s_->stopping.store(true);
  }
  s_->cv.notify_all();
}

void PeriodicThread::wake() {
  {
    const std::lock_guard<std::mutex> lk(s_->m);
    s_->woken = true;
  }
  s_->cv.notify_all();
}

bool PeriodicThread::exited_within(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lk(s_->m);
  return s_->cv.wait_for(lk, timeout, [this] { return s_->exited; });
}

}  // namespace sp

#include "periodic_thread.hpp"

namespace sp {

PeriodicThread::PeriodicThread(LogSink& log, std::string name, Period period,
                               std::function<void()> task)
    : log_(log),
      name_(std::move(name)),
      period_(std::move(period)),
      task_(std::move(task)),
      thread_([this] { loop(); }) {}

PeriodicThread::~PeriodicThread() {
  {
    std::lock_guard<std::mutex> lk(m_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PeriodicThread::wake() {
  {
    std::lock_guard<std::mutex> lk(m_);
    woken_ = true;
  }
  cv_.notify_all();
}

void PeriodicThread::loop() {
  std::unique_lock<std::mutex> lk(m_);
  while (true) {
    cv_.wait_for(lk, period_(), [this] { return stop_ || woken_; });
    if (stop_) return;
    woken_ = false;
    lk.unlock();
    try {
      task_();
    } catch (const std::exception& e) {
      log_.log_error(name_ + ": " + e.what());
    } catch (...) {
      log_.log_error(name_ + ": unknown error");
    }
    lk.lock();
  }
}

}  // namespace sp

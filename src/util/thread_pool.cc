#include "util/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <memory>

#include "util/error.h"

namespace proctor {

void PartitionRange(size_t n, size_t grain, int parts, int part, size_t* begin, size_t* end) {
  const size_t blocks = (n + grain - 1) / grain;
  const size_t b0 = blocks * static_cast<size_t>(part) / static_cast<size_t>(parts);
  const size_t b1 = blocks * static_cast<size_t>(part + 1) / static_cast<size_t>(parts);
  *begin = std::min(n, b0 * grain);
  *end = std::min(n, b1 * grain);
}

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0)
    num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  num_threads_ = num_threads;
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::WorkerLoop(int worker_index) {
  unsigned seen = 0;
  for (;;) {
    const std::function<void(size_t, size_t, int)>* job;
    size_t n, grain;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
      grain = job_grain_;
    }
    size_t begin, end;
    PartitionRange(n, grain, num_threads_, worker_index, &begin, &end);
    std::exception_ptr error;
    if (begin < end) {
      try {
        (*job)(begin, end, worker_index);
      } catch (...) {
        error = std::current_exception();
      }
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (error && !first_error_) first_error_ = error;
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }
}

void ThreadPool::ParallelFor(size_t n, const std::function<void(size_t, size_t, int)>& fn) {
  ParallelForGrain(n, 1, fn);
}

void ThreadPool::ParallelForGrain(size_t n, size_t grain,
                                  const std::function<void(size_t, size_t, int)>& fn) {
  CHECK(grain > 0);
  if (n == 0) return;
  if (num_threads_ == 1 || n <= grain) {
    fn(0, n, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    job_n_ = n;
    job_grain_ = grain;
    pending_ = num_threads_ - 1;
    first_error_ = nullptr;
    ++generation_;
  }
  start_cv_.notify_all();
  size_t begin, end;
  PartitionRange(n, grain, num_threads_, 0, &begin, &end);
  std::exception_ptr error;
  if (begin < end) {
    try {
      fn(begin, end, 0);
    } catch (...) {
      error = std::current_exception();
    }
  }
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
  if (error) std::rethrow_exception(error);
  if (first_error_) std::rethrow_exception(first_error_);
}

namespace {
std::atomic<int> g_requested_threads{0};
std::unique_ptr<ThreadPool>& GlobalSlot() {
  static std::unique_ptr<ThreadPool> pool;
  return pool;
}
std::mutex g_global_mutex;
}  // namespace

ThreadPool& ThreadPool::Global() {
  std::lock_guard<std::mutex> lock(g_global_mutex);
  auto& slot = GlobalSlot();
  if (!slot) slot = std::make_unique<ThreadPool>(g_requested_threads.load());
  return *slot;
}

void ThreadPool::SetGlobalThreads(int num_threads) {
  std::lock_guard<std::mutex> lock(g_global_mutex);
  g_requested_threads = num_threads;
  auto& slot = GlobalSlot();
  const int wanted = num_threads > 0
                         ? num_threads
                         : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (slot && slot->num_threads() != wanted) slot.reset();
}

}  // namespace proctor

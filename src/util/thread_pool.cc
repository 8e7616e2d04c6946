#include "util/thread_pool.h"

#include <emmintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>

#include "util/error.h"

namespace proctor {
namespace {

// Polls `done()` for up to `micros` microseconds; true once it holds.
template <class Done>
bool SpinUntil(Done done, int micros) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(micros);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      _mm_pause();
    }
    if (std::chrono::steady_clock::now() >= deadline) return done();
  }
}

}  // namespace

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
    stop_.store(true);
  }
  start_cv_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::WorkerLoop(int worker_index) {
  unsigned seen = 0;
  const auto job_or_stop = [&] {
    return stop_.load(std::memory_order_acquire) ||
           generation_.load(std::memory_order_acquire) != seen;
  };
  for (;;) {
    if (!SpinUntil(job_or_stop, kSpinMicros)) {
      std::unique_lock<std::mutex> lock(mutex_);
      start_cv_.wait(lock, job_or_stop);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    const std::function<void(size_t, size_t, int)>* job = job_;
    const size_t n = job_n_, grain = job_grain_;
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
    if (error) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!first_error_) first_error_ = error;
    }
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // The caller may be asleep: notify under the mutex its predicate is checked under.
      std::lock_guard<std::mutex> lock(mutex_);
      done_cv_.notify_one();
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
    pending_.store(num_threads_ - 1, std::memory_order_relaxed);
    first_error_ = nullptr;
    generation_.fetch_add(1, std::memory_order_release);
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
  const auto all_done = [&] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!SpinUntil(all_done, kSpinMicros)) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_cv_.wait(lock, all_done);
  }
  std::lock_guard<std::mutex> lock(mutex_);
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

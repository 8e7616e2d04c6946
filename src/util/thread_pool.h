// A small deterministic thread pool.
//
// Work is split by static partitioning: ParallelFor(n, fn) hands thread t the fixed range
// [t*n/T, (t+1)*n/T), so which thread computes which index depends only on n and the thread
// count. Reductions that must be bit-identical run per-partition and are combined in partition
// order by the caller (see ParallelReduce). The calling thread takes partition 0.
//
// Hand-offs spin before they sleep: a worker that finished a job polls for the next one for up
// to kSpinMicros before it waits on a condition variable, and the caller polls for the workers'
// completion as long before it does. A decode step runs hundreds of short products back to
// back; waking a sleeping thread costs tens of microseconds on a virtual machine, about what one
// product of a 1B model takes.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace proctor {

class ThreadPool {
 public:
  // num_threads counts the calling thread; 0 means std::thread::hardware_concurrency().
  explicit ThreadPool(int num_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Calls fn(begin, end, thread_index) once per partition of [0, n); partitions are static and
  // contiguous. Blocks until all are done. Rethrows the first exception a partition threw.
  // Ranges are empty-skipped: fn is never called with begin == end. Not reentrant.
  void ParallelFor(size_t n, const std::function<void(size_t, size_t, int)>& fn);

  // As ParallelFor, but splits [0, n) into partitions aligned to `grain` (the last may be short).
  void ParallelForGrain(size_t n, size_t grain, const std::function<void(size_t, size_t, int)>& fn);

  // The process-wide pool (created on first use with the thread count set by SetGlobalThreads,
  // default hardware_concurrency()).
  static ThreadPool& Global();
  static void SetGlobalThreads(int num_threads);

 private:
  // How long a hand-off polls before it sleeps.
  static constexpr int kSpinMicros = 200;

  void WorkerLoop(int worker_index);

  int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  // The job: written by the caller before it publishes a new generation (release), read by the
  // workers after they see it (acquire).
  const std::function<void(size_t, size_t, int)>* job_ = nullptr;
  size_t job_n_ = 0;
  size_t job_grain_ = 1;
  std::atomic<unsigned> generation_{0};  // changed under mutex_, so sleepers cannot miss it
  std::atomic<int> pending_{0};          // workers still running the job
  std::atomic<bool> stop_{false};
  std::exception_ptr first_error_;
};

// Static partition of [0, n) into `parts` ranges aligned to `grain`: the range of `part`.
void PartitionRange(size_t n, size_t grain, int parts, int part, size_t* begin, size_t* end);

// Deterministic parallel reduction: each partition computes a partial with fn(begin, end);
// partials are combined left to right with combine, in partition order.
template <typename T, typename Fn, typename Combine>
T ParallelReduce(ThreadPool& pool, size_t n, T init, Fn fn, Combine combine) {
  std::vector<T> partials(pool.num_threads(), init);
  std::vector<char> used(pool.num_threads(), 0);
  pool.ParallelFor(n, [&](size_t begin, size_t end, int t) {
    partials[t] = fn(begin, end);
    used[t] = 1;
  });
  T result = init;
  for (int t = 0; t < pool.num_threads(); ++t) {
    if (used[t]) result = combine(result, partials[t]);
  }
  return result;
}

}  // namespace proctor

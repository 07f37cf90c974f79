#include "studies/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <string>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "sim/error.hpp"

namespace allocsim {
namespace {

// Threads joined when the scope ends, an exception's unwinding included: std::jthread's
// join, which LLVM 14's libc++ (the wasm build's) lacks.
struct JoinedThreads {
  std::vector<std::thread> threads;
  JoinedThreads() = default;
  JoinedThreads(const JoinedThreads&) = delete;
  JoinedThreads& operator=(const JoinedThreads&) = delete;
  ~JoinedThreads() {
    for (std::thread& thread : threads) thread.join();
  }
};

}  // namespace

std::size_t parallel_for(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& work,
                         const std::function<void(std::size_t)>& tick, const std::function<bool()>& stop) {
  std::size_t done = 0;
  std::exception_ptr error;
  std::mutex mutex;  // guards done and error
  std::condition_variable changed;
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::atomic<unsigned> running{0};  // workers not yet returned
  const auto workers_wanted = static_cast<unsigned>(std::clamp<std::size_t>(count, 1, std::max(1u, threads)));
  {
    JoinedThreads workers;
    for (unsigned t = 0; t < workers_wanted && count > 0; ++t) {
      ++running;
      workers.threads.emplace_back([&] {
        const auto leave = [&] {
          const std::lock_guard lock(mutex);
          --running;
          changed.notify_one();
        };
        while (!failed) {
          if (stop && stop()) break;
          const std::size_t i = next++;
          if (i >= count) break;
          try {
            work(i);
            const std::lock_guard lock(mutex);
            ++done;
          } catch (...) {
            const std::lock_guard lock(mutex);
            if (!error) error = std::current_exception();
            failed = true;
          }
          changed.notify_one();
        }
        leave();
      });
    }
    std::unique_lock lock(mutex);
    while (done < count && !failed && running > 0) {
      changed.wait_for(lock, std::chrono::milliseconds(200));
      if (tick) {
        const std::size_t now_done = done;
        lock.unlock();  // tick may take long (a checkpoint): the workers go on meanwhile
        tick(now_done);
        lock.lock();
      }
    }
  }  // the workers join here
  if (error) std::rethrow_exception(error);
  if (tick) tick(done);
  return done;
}

unsigned thread_count(int given) {
  if (given < 0) throw Error("--threads " + std::to_string(given) + " is negative; give 1 or more, or 0 for every core");
  return given > 0 ? static_cast<unsigned>(given) : std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace allocsim

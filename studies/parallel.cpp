#include "studies/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace allocsim {

void parallel_for(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& work,
                  const std::function<void(std::size_t)>& tick) {
  std::size_t done = 0;
  std::exception_ptr error;
  std::mutex mutex;  // guards done and error
  std::condition_variable changed;
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  const auto workers_wanted = static_cast<unsigned>(std::clamp<std::size_t>(count, 1, std::max(1u, threads)));
  {
    std::vector<std::jthread> workers;
    for (unsigned t = 0; t < workers_wanted && count > 0; ++t) {
      workers.emplace_back([&] {
        while (!failed) {
          const std::size_t i = next++;
          if (i >= count) return;
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
      });
    }
    std::unique_lock lock(mutex);
    while (done < count && !failed) {
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
}

}  // namespace allocsim

// The one thread pool of the studies: a sweep's points and maxbatch's searches are
// independent tasks, shared among threads. Which thread ran a task never shows in a
// result: callers store results by task index.
#pragma once

#include <cstddef>
#include <functional>

namespace allocsim {

// Runs work(i) for every i in [0, count) on up to `threads` threads (at least one). The
// calling thread waits, calling tick(done) about every 200 ms and once when all are done.
// The first exception stops the tasks not yet started; it is rethrown once the running
// ones have finished (then no final tick). When `stop` (asked between tasks) says so, no
// further task starts; the running ones finish. Returns how many tasks ran.
std::size_t parallel_for(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& work,
                         const std::function<void(std::size_t done)>& tick = {},
                         const std::function<bool()>& stop = {});

// --threads N as given: 0 is every core; a negative count is refused (Error naming --threads).
unsigned thread_count(int given);

}  // namespace allocsim

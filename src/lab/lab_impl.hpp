// Template bodies for src/lab/lab.hpp.
#pragma once

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

namespace flowsketch::app::lab {

template <class Result>
std::vector<Result> run_trials(std::uint64_t trials, unsigned threads,
                               const std::function<Result(std::uint64_t)>& fn) {
    std::vector<Result> results(static_cast<std::size_t>(trials));
    std::atomic<std::uint64_t> next{0};
    std::exception_ptr error;
    std::mutex error_mutex;
    auto worker = [&] {
        for (;;) {
            const std::uint64_t t = next.fetch_add(1);
            if (t >= trials) return;
            try {
                results[static_cast<std::size_t>(t)] = fn(t);
            } catch (...) {
                const std::lock_guard lock(error_mutex);
                if (!error) error = std::current_exception();
                next.store(trials);
                return;
            }
        }
    };
    const unsigned count =
        static_cast<unsigned>(std::clamp<std::uint64_t>(trials, 1, std::max(1u, threads)));
    std::vector<std::thread> pool;
    for (unsigned i = 1; i < count; ++i) pool.emplace_back(worker);
    worker();
    for (auto& thread : pool) thread.join();
    if (error) std::rethrow_exception(error);
    return results;
}

}  // namespace flowsketch::app::lab

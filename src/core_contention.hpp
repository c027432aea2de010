// Whether the second thread of --threads 2 can have a core: the reading
// thread's involuntary context switches over a window of wall time. When
// every core is busy with other work the scheduler preempts the thread every
// few milliseconds, and the two threads share about one core: handing batches
// between them then only adds work, so the pipeline measures on its own
// thread for a while and tries two threads again afterwards.
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <cstdint>

namespace flowsketch::app {

class CoreContention {
public:
    static constexpr std::int64_t window_ns = 50'000'000;     // how long a verdict is based on
    static constexpr std::int64_t alone_for_ns = 1'000'000'000;  // how long one thread runs before a retry
    static constexpr long preemptions = 3;                  // in a window: the cores are taken

    /// Called by the reading thread once per batch: true while it should
    /// measure alone. Reads the clock each call, its own rusage once a window.
    bool run_alone() noexcept { return decide(now_ns(), [] { return involuntary_switches(); }); }

    /// run_alone() at time `now` (ns), `switches()` giving the thread's
    /// involuntary context switches so far (asked only when a window ends).
    template <class Switches>
    bool decide(std::int64_t now, Switches switches) noexcept {
        if (now < alone_until_ns_) return true;
        if (window_start_ns_ == 0 || now < window_start_ns_) {
            start_window(now, switches());
            return false;
        }
        if (now - window_start_ns_ < window_ns) return false;
        const long total = switches();
        const bool contended = total - window_switches_ >= preemptions;
        start_window(now, total);
        if (contended) alone_until_ns_ = now + alone_for_ns;
        return contended;
    }

private:
    static std::int64_t now_ns() noexcept {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
    }
    static long involuntary_switches() noexcept {
        rusage usage{};
        return getrusage(RUSAGE_THREAD, &usage) == 0 ? usage.ru_nivcsw : 0;
    }
    void start_window(std::int64_t now, long switches) noexcept {
        window_start_ns_ = now;
        window_switches_ = switches;
    }

    std::int64_t window_start_ns_ = 0;
    long window_switches_ = 0;
    std::int64_t alone_until_ns_ = 0;
};

}  // namespace flowsketch::app

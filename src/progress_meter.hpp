// A progress line on stderr for long replays: bytes read of the total (or
// so far, for a pipe), packets, packets per second, elapsed time and ETA,
// redrawn at most ten times a second and erased before a report is printed.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include "reports/report_writer.hpp"

namespace flowsketch::app {

class ProgressMeter {
public:
    using Clock = std::chrono::steady_clock;

    enum class Input { files, pipe, live };
    /// Draws on `out` (a terminal). Files: `total_bytes` is their size; a
    /// pipe has none; live capture counts packets only.
    ProgressMeter(std::FILE* out, Input input, std::uint64_t total_bytes);
    ProgressMeter(const ProgressMeter&) = delete;
    ProgressMeter& operator=(const ProgressMeter&) = delete;

    /// Cheap enough to call per batch: looks at the clock every few calls and
    /// redraws when a tenth of a second has passed since the last drawing.
    /// `bytes_read()` is asked only when the line is redrawn.
    template <typename BytesRead>
    void update(std::uint64_t packets, BytesRead&& bytes_read) {
        if (++calls_ % check_every != 0) return;
        const Clock::time_point now = Clock::now();
        if (now - last_draw_ < redraw_period) return;
        draw(bytes_read(), packets, now);
    }
    /// Redraws now (a caller on a timer of its own).
    void show(std::uint64_t bytes, std::uint64_t packets) { draw(bytes, packets, Clock::now()); }
    /// Erases the line (before a report goes to the same terminal, or at the end).
    void clear();

    /// The line for these figures after `elapsed` seconds (no control codes).
    static std::string line(Input input, std::uint64_t bytes, std::uint64_t total_bytes,
                            std::uint64_t packets, double elapsed_seconds);

private:
    static constexpr std::uint32_t check_every = 16;
    static constexpr Clock::duration redraw_period = std::chrono::milliseconds(100);

    void draw(std::uint64_t bytes, std::uint64_t packets, Clock::time_point now);

    std::FILE* out_;
    Input input_;
    std::uint64_t total_bytes_;
    Clock::time_point start_;
    Clock::time_point last_draw_;
    std::uint32_t calls_ = check_every - 1;  // the first call draws
    std::mutex mutex_;  // reports may be written from the measuring thread
    bool shown_ = false;
};

/// Passes every report on to `inner`, first erasing the progress line.
std::unique_ptr<reports::ReportWriter> make_progress_clearing_writer(
    std::unique_ptr<reports::ReportWriter> inner, ProgressMeter& meter);

}  // namespace flowsketch::app

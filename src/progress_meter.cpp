#include "src/progress_meter.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>

namespace flowsketch::app {

namespace {

std::string bytes_text(std::uint64_t bytes) {
    constexpr std::array<const char*, 5> units = {"B", "KiB", "MiB", "GiB", "TiB"};
    double value = static_cast<double>(bytes);
    std::size_t unit = 0;
    for (; value >= 1024.0 && unit + 1 < units.size(); ++unit) value /= 1024.0;
    return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", value, units[unit]);
}

std::string duration_text(double seconds) {
    const auto whole = static_cast<std::uint64_t>(std::llround(std::max(seconds, 0.0)));
    if (whole >= 3600) return fmt::format("{}:{:02}:{:02}", whole / 3600, whole / 60 % 60, whole % 60);
    return fmt::format("{}:{:02}", whole / 60, whole % 60);
}

std::string count_text(double value) {
    if (value >= 1e9) return fmt::format("{:.1f}G", value / 1e9);
    if (value >= 1e6) return fmt::format("{:.1f}M", value / 1e6);
    if (value >= 1e4) return fmt::format("{:.0f}k", value / 1e3);
    return fmt::format("{:.0f}", value);
}

class ProgressClearingWriter final : public reports::ReportWriter {
public:
    ProgressClearingWriter(std::unique_ptr<reports::ReportWriter> inner, ProgressMeter& meter)
        : inner_(std::move(inner)), meter_(meter) {}
    void write(const reports::Report& report) override {
        meter_.clear();
        inner_->write(report);
    }
    void finish() override {
        meter_.clear();
        inner_->finish();
    }

private:
    std::unique_ptr<reports::ReportWriter> inner_;
    ProgressMeter& meter_;
};

}  // namespace

ProgressMeter::ProgressMeter(std::FILE* out, Input input, std::uint64_t total_bytes)
    : out_(out), input_(input), total_bytes_(total_bytes), start_(Clock::now()),
      last_draw_(start_ - redraw_period) {}

std::string ProgressMeter::line(Input input, std::uint64_t bytes, std::uint64_t total_bytes,
                                std::uint64_t packets, double elapsed_seconds) {
    const double rate = elapsed_seconds > 0 ? static_cast<double>(packets) / elapsed_seconds : 0.0;
    std::string text;
    if (input == Input::live) {
        text = fmt::format("{} packets  {} pkt/s  {}", count_text(static_cast<double>(packets)),
                           count_text(rate), duration_text(elapsed_seconds));
    } else if (input == Input::files && total_bytes > 0) {
        const double share = std::min(1.0, static_cast<double>(bytes) / static_cast<double>(total_bytes));
        text = fmt::format("{:5.1f}% {} of {}", 100.0 * share, bytes_text(bytes), bytes_text(total_bytes));
        text += fmt::format("  {} packets  {} pkt/s  {}", count_text(static_cast<double>(packets)),
                            count_text(rate), duration_text(elapsed_seconds));
        if (bytes > 0 && share < 1.0) {
            const double left = elapsed_seconds * (1.0 - share) / share;
            text += fmt::format("  ETA {}", duration_text(left));
        }
    } else {
        text = fmt::format("{} read  {} packets  {} pkt/s  {}", bytes_text(bytes),
                           count_text(static_cast<double>(packets)), count_text(rate),
                           duration_text(elapsed_seconds));
    }
    return text;
}

void ProgressMeter::draw(std::uint64_t bytes, std::uint64_t packets, Clock::time_point now) {
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const std::string text = line(input_, bytes, total_bytes_, packets, elapsed);
    std::lock_guard lock(mutex_);
    last_draw_ = now;
    // Carriage return, the line, erase to its end: one write, redrawn in place.
    std::fputs(fmt::format("\r{}\x1b[K", text).c_str(), out_);
    std::fflush(out_);
    shown_ = true;
}

void ProgressMeter::clear() {
    std::lock_guard lock(mutex_);
    if (!shown_) return;
    std::fputs("\r\x1b[K", out_);
    std::fflush(out_);
    shown_ = false;
}

std::unique_ptr<reports::ReportWriter> make_progress_clearing_writer(
    std::unique_ptr<reports::ReportWriter> inner, ProgressMeter& meter) {
    return std::make_unique<ProgressClearingWriter>(std::move(inner), meter);
}

}  // namespace flowsketch::app

#include "src/replay.hpp"

#include <fmt/format.h>

#include <csignal>
#include <cstdio>

namespace flowsketch::app {

ReplayStream::ReplayStream(std::vector<std::unique_ptr<capture::PcapFileSource>>& sources,
                           Pipeline& pipeline)
    : sources_(sources), pipeline_(pipeline) {}

bool ReplayStream::next(capture::Frame& frame, int& link_type) {
    return next_batch(std::span<capture::Frame>(&frame, 1), link_type) == 1;
}

std::size_t ReplayStream::next_batch(std::span<capture::Frame> frames, int& link_type) {
    interrupted_ = false;
    while (current_ < sources_.size()) {
        capture::PcapFileSource& source = *sources_[current_];
        capture::ReadStatus status = capture::ReadStatus::frame;
        const std::size_t n = source.next_batch(frames, status);
        if (n > 0) {
            link_type = source.link_type();
            return n;
        }
        if (status == capture::ReadStatus::interrupted) {
            interrupted_ = true;
            return 0;
        }
        end_current(status);
    }
    return 0;
}

// The current file is done (cleanly or damaged): warn about damage, go on.
void ReplayStream::end_current(capture::ReadStatus status) {
    capture::PcapFileSource& source = *sources_[current_];
    if (status == capture::ReadStatus::damaged) {
        const std::string message = fmt::format(
            "{}: {} (the packets before the damage are counted)", source.path(),
            source.damage_message());
        if (progress_ != nullptr) progress_->clear();
        fmt::print(stderr, "flowsketch: warning: {}\n", message);
        pipeline_.note_damage(message);
    }
    done_bytes_ += source.bytes_read();
    ++current_;
}

PacedReplay::PacedReplay(boost::asio::io_context& io, ReplayStream& stream, Pipeline& pipeline,
                         double speed, std::uint64_t count, bool keep_serving)
    : io_(io),
      stream_(stream),
      pipeline_(pipeline),
      speed_(speed),
      count_(count),
      keep_serving_(keep_serving),
      timer_(io),
      signals_(io, SIGINT, SIGTERM) {}

void PacedReplay::start() {
    signals_.async_wait([this](const boost::system::error_code& ec, int) {
        if (ec) return;
        keep_serving_ = false;  // the endpoint goes with the loop: no "serving metrics" line
        timer_.cancel();
        finish();
        io_.stop();
    });
    boost::asio::post(io_, [this] { step(); });
}

// Handles frames until the next one is due in the future (then sleeps on the
// timer) or a slice of work is done (then yields to the loop, so the metrics
// endpoint answers while a large file replays).
void PacedReplay::step() {
    constexpr int slice = 4096;
    for (int handled = 0; handled < slice; ++handled) {
        if (!has_pending_) {
            if ((count_ != 0 && frames_ >= count_) || !stream_.next(pending_, pending_link_)) {
                if (stream_.interrupted()) {
                    // A signal ended the wait for a pipe. Through the reactor,
                    // which runs the signal's handler first (a post would read
                    // again before it): on SIGINT/SIGTERM that cancels the timer.
                    timer_.expires_after(std::chrono::milliseconds(1));
                    timer_.async_wait([this](const boost::system::error_code& ec) {
                        if (!ec) step();
                    });
                    return;
                }
                finish();
                if (!keep_serving_) io_.stop();
                return;
            }
            has_pending_ = true;
        }
        if (speed_ > 0) {
            if (!have_origin_) {
                have_origin_ = true;
                origin_packet_ns_ = pending_.timestamp_ns;
                origin_wall_ = std::chrono::steady_clock::now();
            }
            // Timestamps that go backwards are due at once.
            const double offset_ns =
                static_cast<double>(pending_.timestamp_ns - origin_packet_ns_) / speed_;
            const auto due = origin_wall_ + std::chrono::nanoseconds(
                                                static_cast<std::int64_t>(std::max(0.0, offset_ns)));
            if (due > std::chrono::steady_clock::now()) {
                // The pending frame's bytes stay valid: nothing is read until it is handled.
                timer_.expires_at(due);
                timer_.async_wait([this](const boost::system::error_code& ec) {
                    if (!ec) step();
                });
                return;
            }
        }
        pipeline_.on_frame(pending_, pending_link_);
        has_pending_ = false;
        ++frames_;
    }
    boost::asio::post(io_, [this] { step(); });
}

void PacedReplay::finish() {
    if (finished_) return;
    finished_ = true;
    pipeline_.finish();
    if (keep_serving_) {
        std::fprintf(stderr, "flowsketch: replay done; serving metrics until SIGINT/SIGTERM\n");
    }
}

}  // namespace flowsketch::app

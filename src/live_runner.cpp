#include "src/live_runner.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>

namespace flowsketch::app {
namespace {

namespace asio = boost::asio;

std::int64_t wall_now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// Frames per dispatch call, and per wake-up of one interface before the loop
// turns to the others (fairness between interfaces, timer and HTTP).
constexpr int dispatch_batch = 512;
constexpr int wakeup_budget = 16384;
// Fallback poll: some capture devices have no selectable descriptor, and a
// block timeout may expire without the descriptor turning readable.
constexpr std::chrono::milliseconds poll_period{100};

}  // namespace

LiveRunner::LiveRunner(asio::io_context& io, Pipeline& pipeline,
                       std::vector<std::unique_ptr<capture::PcapLiveSource>>& sources,
                       const LiveRunnerConfig& config)
    : io_(io),
      pipeline_(pipeline),
      sources_(sources),
      config_(config),
      interval_timer_(io),
      poll_timer_(io),
      signals_(io),
      interval_ns_(static_cast<std::int64_t>(std::llround(config.interval_seconds * 1e9))) {}

void LiveRunner::start() {
    run_start_ns_ = wall_now_ns();
    interval_start_ns_ = run_start_ns_;
    for (std::size_t i = 0; i < sources_.size(); ++i) {
        Reader reader{sources_[i].get(), i, nullptr};
        if (sources_[i]->selectable_fd() >= 0) {
            // A duplicate descriptor: Asio owns (and closes) it, libpcap keeps its own.
            reader.descriptor = std::make_unique<asio::posix::stream_descriptor>(
                io_, ::dup(sources_[i]->selectable_fd()));
        }
        readers_.push_back(std::move(reader));
    }
    for (auto& reader : readers_) arm(reader);
    arm_poll_timer();
    signals_.add(SIGINT);
    signals_.add(SIGTERM);
    signals_.add(SIGHUP);
    arm_signals();
    if (interval_ns_ > 0) arm_interval_timer();
}

void LiveRunner::on_frame(void* context, const capture::Frame& frame) {
    auto* self = static_cast<LiveRunner*>(context);
    if (self->config_.count != 0 && self->frames_ >= self->config_.count) return;
    ++self->frames_;
    self->pipeline_.on_frame(frame, self->current_link_type_, self->current_source_);
}

void LiveRunner::drain(Reader& reader, int budget) {
    current_source_ = reader.index;
    current_link_type_ = reader.source->link_type();
    try {
        while (budget > 0 && !stopped_) {
            const int n = reader.source->dispatch(dispatch_batch, &LiveRunner::on_frame, this);
            if (n <= 0) break;
            budget -= n;
            if (config_.count != 0 && frames_ >= config_.count) {
                stop();
                return;
            }
        }
    } catch (const capture::CaptureError& e) {
        error_ = e.what();
        stop();
    }
}

void LiveRunner::arm(Reader& reader) {
    if (!reader.descriptor || stopped_) return;
    reader.descriptor->async_wait(asio::posix::stream_descriptor::wait_read,
                                  [this, &reader](const boost::system::error_code& ec) {
                                      if (ec || stopped_) return;
                                      drain(reader, wakeup_budget);
                                      arm(reader);
                                  });
}

void LiveRunner::arm_poll_timer() {
    poll_timer_.expires_after(poll_period);
    poll_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (ec || stopped_) return;
        for (auto& reader : readers_) drain(reader, wakeup_budget);
        arm_poll_timer();
    });
}

void LiveRunner::collect_stats() {
    std::vector<capture::CaptureStats> cumulative;
    for (auto& source : sources_) cumulative.push_back(source->stats());
    pipeline_.set_capture_stats(cumulative);
}

// Boundaries at multiples of the interval in Unix time, so reports of
// several probes cover the same spans and line up on a dashboard.
void LiveRunner::arm_interval_timer() {
    const std::int64_t now = wall_now_ns();
    next_boundary_ns_ = (now / interval_ns_ + 1) * interval_ns_;
    interval_timer_.expires_at(std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::nanoseconds(next_boundary_ns_))));
    interval_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (ec || stopped_) return;
        // Take what the kernel already holds for this interval first.
        for (auto& reader : readers_) drain(reader, wakeup_budget);
        if (stopped_) return;
        collect_stats();
        pipeline_.close_interval_at(interval_start_ns_, next_boundary_ns_);
        interval_start_ns_ = next_boundary_ns_;
        arm_interval_timer();
    });
}

void LiveRunner::arm_signals() {
    signals_.async_wait([this](const boost::system::error_code& ec, int signal) {
        if (ec) return;
        if (signal == SIGHUP) {
            if (on_hangup) on_hangup();
            arm_signals();
            return;
        }
        // Nothing counted is lost: take every frame already captured, then report.
        for (auto& reader : readers_) drain(reader, 1 << 30);
        stop();
    });
}

void LiveRunner::stop() {
    if (stopped_) return;
    stopped_ = true;
    collect_stats();
    pipeline_.finish_at(interval_start_ns_, run_start_ns_, wall_now_ns());
    boost::system::error_code ignored;
    interval_timer_.cancel();
    poll_timer_.cancel();
    signals_.cancel(ignored);
    for (auto& reader : readers_) {
        if (reader.descriptor) reader.descriptor->cancel(ignored);
    }
    io_.stop();
}

}  // namespace flowsketch::app

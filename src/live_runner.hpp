// Live capture on one boost::asio::io_context: every interface's selectable
// descriptor, a wall-clock interval timer aligned to multiples of the
// interval, and SIGINT/SIGTERM (final report, then stop) and SIGHUP (the
// caller's hook, e.g. reopen output files for log rotation).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/system_timer.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "capture/live/pcap_live_source.hpp"
#include "src/pipeline.hpp"

namespace flowsketch::app {

struct LiveRunnerConfig {
    double interval_seconds = 10.0;  // 0 = only the final report (at the signal)
    std::uint64_t count = 0;         // stop after this many frames; 0 = no limit
};

class LiveRunner {
public:
    LiveRunner(boost::asio::io_context& io, Pipeline& pipeline,
               std::vector<std::unique_ptr<capture::PcapLiveSource>>& sources,
               const LiveRunnerConfig& config);

    /// Arms the descriptors, the timer and the signals. Run the io_context after.
    void start();
    /// Final report and stop: what SIGINT/SIGTERM do. Idempotent.
    void stop();

    std::function<void()> on_hangup;  // SIGHUP
    /// Set when a capture failed (interface gone): the run ended with an error.
    const std::string& error() const noexcept { return error_; }

private:
    struct Reader {
        capture::PcapLiveSource* source;
        std::size_t index;
        std::unique_ptr<boost::asio::posix::stream_descriptor> descriptor;
    };

    void arm(Reader& reader);
    void drain(Reader& reader, int budget);
    void arm_interval_timer();
    void arm_poll_timer();
    void arm_signals();
    void collect_stats();
    static void on_frame(void* context, const capture::Frame& frame);

    boost::asio::io_context& io_;
    Pipeline& pipeline_;
    std::vector<std::unique_ptr<capture::PcapLiveSource>>& sources_;
    LiveRunnerConfig config_;
    std::vector<Reader> readers_;
    boost::asio::system_timer interval_timer_;
    boost::asio::steady_timer poll_timer_;
    boost::asio::signal_set signals_;
    std::int64_t interval_ns_;
    std::int64_t run_start_ns_ = 0;
    std::int64_t interval_start_ns_ = 0;
    std::int64_t next_boundary_ns_ = 0;
    std::uint64_t frames_ = 0;
    std::size_t current_source_ = 0;
    int current_link_type_ = 0;
    bool stopped_ = false;
    std::string error_;
};

}  // namespace flowsketch::app

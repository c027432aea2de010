#include "src/replay.hpp"

#include <fmt/format.h>

#include <csignal>
#include <cstdio>

#include "capture/decode/decode.hpp"
#include "capture/link_type_name.hpp"

namespace flowsketch::app {

ReplayStream::ReplayStream(std::vector<std::unique_ptr<capture::PcapFileSource>>& sources,
                           Pipeline& pipeline, bool filtered)
    : sources_(sources), pipeline_(pipeline), interfaces_(sources.size()), filtered_(filtered) {
    // The interfaces read at open (the first of each pcapng file), up front:
    // their warnings come before any report.
    for (std::size_t file = 0; file < sources_.size(); ++file) update_interfaces(file);
}

bool ReplayStream::next(capture::Frame& frame, int& link_type, std::size_t& interface) {
    return next_batch(std::span<capture::Frame>(&frame, 1), link_type, interface) == 1;
}

std::size_t ReplayStream::next_batch(std::span<capture::Frame> frames, int& link_type,
                                     std::size_t& interface) {
    interrupted_ = false;
    while (current_ < sources_.size()) {
        capture::PcapFileSource& source = *sources_[current_];
        capture::ReadStatus status = capture::ReadStatus::frame;
        const std::size_t n = source.next_batch(frames, status);
        if (n > 0) {
            link_type = source.link_type();
            interface = Pipeline::no_interface;
            if (source.reads_interfaces()) {
                FileInterfaces& known = interfaces_[current_];
                if (known.sources.size() != source.interfaces().size() ||
                    source.interfaces()[source.batch_interface()].unfiltered != 0) {
                    update_interfaces(current_);
                }
                interface = known.sources[source.batch_interface()];
            }
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

// Interfaces the file described since the last look go to the pipeline
// (warned about if their frames cannot all be counted); frames the filter
// could not run on are noted for their interface.
void ReplayStream::update_interfaces(std::size_t file) {
    const capture::PcapFileSource& source = *sources_[file];
    if (!source.reads_interfaces()) return;
    FileInterfaces& known = interfaces_[file];
    const auto& described = source.interfaces();
    // Interface Statistics Blocks read since (usually at the end of the file).
    for (std::size_t i = 0; i < known.sources.size(); ++i) {
        pipeline_.set_file_interface_statistics(known.sources[i], described[i].if_received, described[i].if_dropped,
                                                described[i].os_dropped);
    }
    for (std::size_t i = known.sources.size(); i < described.size(); ++i) {
        const capture::file::InterfaceDescription& d = described[i];
        reports::FileInterfaceReport interface;
        interface.name = d.name.empty() ? fmt::format("#{}", i) : d.name;
        interface.file = source.path();
        interface.index = static_cast<std::uint32_t>(i);
        interface.section = d.section;
        interface.id = d.id;
        interface.link_type = d.link_type;
        interface.link_type_name = capture::link_type_name(d.link_type);
        known.sources.push_back(pipeline_.add_file_interface(interface));
        known.unfiltered.push_back(0);
        const std::string what = fmt::format("{}: interface {} ({}, link type {} {})", source.path(),
                                             i, interface.name, d.link_type, interface.link_type_name);
        if (!d.filter_compiles) {
            const std::string message = fmt::format(
                "{}: the filter does not compile for its link type, so its frames are not counted ({})",
                what, d.filter_error);
            fmt::print(stderr, "flowsketch: warning: {}\n", message);
            pipeline_.note_warning(message);
        } else if (!capture::is_supported_link_type(d.link_type)) {
            fmt::print(stderr,
                       "flowsketch: warning: {}: link type not decoded; its frames are counted as "
                       "unsupported_link_type\n",
                       what);
        }
    }
    if (described.size() > 1) pipeline_.list_file_interfaces();
    for (std::size_t i = 0; i < described.size(); ++i) {
        if (described[i].unfiltered != known.unfiltered[i]) {
            pipeline_.note_unfiltered(known.sources[i], described[i].unfiltered - known.unfiltered[i]);
            known.unfiltered[i] = described[i].unfiltered;
        }
    }
}

// The current file is done (cleanly or damaged): warn about damage and
// packets not counted, go on.
void ReplayStream::end_current(capture::ReadStatus status) {
    capture::PcapFileSource& source = *sources_[current_];
    update_interfaces(current_);
    if (status == capture::ReadStatus::damaged) {
        const std::string message = fmt::format(
            "{}: {} (the packets before the damage are counted)", source.path(),
            source.damage_message());
        if (progress_ != nullptr) progress_->clear();
        fmt::print(stderr, "flowsketch: warning: {}\n", message);
        pipeline_.note_damage(message);
        uncounted_.push_back(fmt::format("{}: {}", source.path(), source.damage_message()));
    }
    if (source.reads_interfaces()) {
        if (const std::uint64_t unknown = source.unknown_interface_frames(); unknown != 0) {
            const std::string message = fmt::format(
                "{}: {} packets on an interface id no Interface Description Block describes are "
                "not counted",
                source.path(), unknown);
            fmt::print(stderr, "flowsketch: warning: {}\n", message);
            pipeline_.note_warning(message);
            uncounted_.push_back(message);
        }
        std::uint64_t unfiltered = 0;
        for (const auto& interface : source.interfaces()) unfiltered += interface.unfiltered;
        if (unfiltered != 0) {
            uncounted_.push_back(fmt::format(
                "{}: {} packets not counted: the filter does not compile for their link type",
                source.path(), unfiltered));
        }
    }
    done_bytes_ += source.bytes_read();
    ++current_;
}

// Nothing counted: no frame read, or every frame of a link type not decoded.
std::string ReplayStream::nothing_counted() const {
    const std::uint64_t frames = pipeline_.frames_total();
    if (frames == 0) {
        std::string why = "no frame read";
        if (!uncounted_.empty()) {
            for (const std::string& reason : uncounted_) why += "; " + reason;
        } else if (filtered_) {
            why += " (none passed the filter)";
        } else {
            why += " (the input holds no packet)";
        }
        return why;
    }
    if (pipeline_.skipped_total(capture::SkipReason::unsupported_link_type) == frames) {
        return fmt::format("no frame decoded: all {} frames have a link type flowsketch does not "
                           "decode",
                           frames);
    }
    return {};
}

void ReplayStream::note_nothing_counted() {
    const std::string why = nothing_counted();
    if (!why.empty()) pipeline_.note_warning(why);
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
        stopped_ = true;
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
            if ((count_ != 0 && frames_ >= count_) ||
                !stream_.next(pending_, pending_link_, pending_interface_)) {
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
        pipeline_.on_frame(pending_, pending_link_, pending_interface_);
        has_pending_ = false;
        ++frames_;
    }
    boost::asio::post(io_, [this] { step(); });
}

void PacedReplay::finish() {
    if (finished_) return;
    finished_ = true;
    if (!stopped_) stream_.note_nothing_counted();
    pipeline_.finish();
    if (keep_serving_) {
        std::fprintf(stderr, "flowsketch: replay done; serving metrics until SIGINT/SIGTERM\n");
    }
}

}  // namespace flowsketch::app

// Replay of capture files as one stream: in a plain loop (as fast as the
// files can be read), or paced by packet timestamps on an Asio event loop
// (--realtime / --speed, e.g. to feed a dashboard through --listen).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "capture/file/pcap_file_source.hpp"
#include "src/pipeline.hpp"
#include "src/progress_meter.hpp"

namespace flowsketch::app {

/// The files in order as one stream of frames. Damage (a file cut short) is
/// warned about on stderr, noted in the pipeline's reports, and the stream
/// moves on to the next file. The interfaces of pcapng files are made known
/// to the pipeline as they appear (a link type not decoded, or a filter that
/// does not compile for it, is warned about once per interface).
class ReplayStream {
public:
    /// `filtered`: a BPF expression selects the frames.
    ReplayStream(std::vector<std::unique_ptr<capture::PcapFileSource>>& sources, Pipeline& pipeline,
                 bool filtered = false);
    /// The next frame and its link type; false at the end of the last file.
    bool next(capture::Frame& frame, int& link_type, std::size_t& interface);
    /// The next frames, all of one file and one interface and so of one link
    /// type (at most frames.size(), which must not be 0; see
    /// PcapFileSource::next_batch); `interface` is the pipeline's source for
    /// them. 0 at the end of the last file, or when interrupted().
    std::size_t next_batch(std::span<capture::Frame> frames, int& link_type, std::size_t& interface);

    /// What the files held that no frame counts: damage, packets on
    /// undescribed interfaces, packets the filter could not run on. Empty if nothing.
    const std::vector<std::string>& uncounted() const noexcept { return uncounted_; }
    /// After the last file: why the replay counted nothing (no frame read, or
    /// none decoded for its link type), or "" if it counted something.
    std::string nothing_counted() const;
    /// Puts nothing_counted(), if any, in the final report's warnings (call before Pipeline::finish).
    void note_nothing_counted();
    /// The last read returned nothing because a signal ended its wait for a
    /// pipe (ReadStatus::interrupted); reading again goes on.
    bool interrupted() const noexcept { return interrupted_; }
    /// What keeps the bytes of the last frames read (PcapFileSource::frame_storage).
    std::shared_ptr<const void> frame_storage() const {
        return current_ < sources_.size() ? sources_[current_]->frame_storage() : nullptr;
    }
    /// Bytes of the files read so far, for progress.
    std::uint64_t bytes_read() const noexcept {
        return done_bytes_ + (current_ < sources_.size() ? sources_[current_]->bytes_read() : 0);
    }
    /// Erases `progress`'s line before a warning is printed (null: none shown).
    void set_progress(ProgressMeter* progress) noexcept { progress_ = progress; }

private:
    // A file's interfaces as the pipeline knows them.
    struct FileInterfaces {
        std::vector<std::size_t> sources;     // pipeline source per interface
        std::vector<std::uint64_t> unfiltered;  // noted so far
    };
    void end_current(capture::ReadStatus status);
    void update_interfaces(std::size_t file);

    std::vector<std::unique_ptr<capture::PcapFileSource>>& sources_;
    Pipeline& pipeline_;
    std::vector<FileInterfaces> interfaces_;  // per file
    std::vector<std::string> uncounted_;
    bool filtered_ = false;

    std::size_t current_ = 0;
    std::uint64_t done_bytes_ = 0;
    ProgressMeter* progress_ = nullptr;
    bool interrupted_ = false;
};

/// Replays on an io_context, pacing frames so that packet time runs `speed`
/// times as fast as wall time. SIGINT/SIGTERM end the replay with the final
/// report. With `keep_serving`, the loop keeps running after the last report
/// (so a metrics endpoint stays up) until SIGINT/SIGTERM.
class PacedReplay {
public:
    PacedReplay(boost::asio::io_context& io, ReplayStream& stream, Pipeline& pipeline,
                double speed, std::uint64_t count, bool keep_serving);
    void start();
    /// SIGINT or SIGTERM ended the replay before its last file did.
    bool stopped() const noexcept { return stopped_; }

private:
    void step();
    void finish();

    boost::asio::io_context& io_;
    ReplayStream& stream_;
    Pipeline& pipeline_;
    double speed_;
    std::uint64_t count_;
    bool keep_serving_;
    boost::asio::steady_timer timer_;
    boost::asio::signal_set signals_;
    capture::Frame pending_;
    int pending_link_ = 0;
    std::size_t pending_interface_ = 0;
    bool has_pending_ = false;
    bool have_origin_ = false;
    std::int64_t origin_packet_ns_ = 0;
    std::chrono::steady_clock::time_point origin_wall_;
    std::uint64_t frames_ = 0;
    bool finished_ = false;
    bool stopped_ = false;  // by SIGINT/SIGTERM
};

}  // namespace flowsketch::app

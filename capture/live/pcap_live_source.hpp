// Live capture from a network interface through libpcap, non-blocking, with
// a selectable descriptor so one event loop can drive several interfaces.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "capture/source.hpp"

struct pcap;

namespace flowsketch::capture {

struct LiveOptions {
    std::string interface;        // as libpcap names it; "any" on Linux
    int snaplen = 262144;         // bytes captured per frame (-s)
    bool promiscuous = true;      // -p turns it off
    int buffer_size = 0;          // kernel buffer bytes (--buffer-size); 0 = libpcap's default
    bool immediate = false;       // deliver each frame at once instead of in blocks
    int timeout_ms = 100;         // block delivery timeout when not immediate
    std::string filter;           // BPF expression; empty = none
};

class PcapLiveSource final : public Source {
public:
    /// Opens and activates the interface. Throws CaptureError naming the
    /// interface (no such device, permission denied, ...) or FilterError.
    explicit PcapLiveSource(const LiveOptions& options);
    ~PcapLiveSource() override;
    PcapLiveSource(const PcapLiveSource&) = delete;
    PcapLiveSource& operator=(const PcapLiveSource&) = delete;

    /// Descriptor to wait on for readability; -1 if the platform has none.
    int selectable_fd() const noexcept { return fd_; }
    int link_type() const noexcept override { return link_type_; }
    const std::string& name() const noexcept { return name_; }

    using FrameHandler = void (*)(void* context, const Frame& frame);
    /// Hands every frame available now (at most `max_frames`) to `handler`
    /// without blocking. Returns the number handled; throws CaptureError if
    /// the interface failed (e.g. went down).
    int dispatch(int max_frames, FrameHandler handler, void* context);

    /// The frames available now, at most frames.size(), without blocking:
    /// status would_block when there is none (wait on selectable_fd()).
    /// Frames stay valid until the next read. Throws as dispatch() does.
    std::size_t next_batch(std::span<Frame> frames, ReadStatus& status) override;

    /// Cumulative counters since the interface was opened.
    CaptureStats stats() override;

    void close() noexcept override;

private:
    std::string name_;
    pcap* handle_ = nullptr;
    int fd_ = -1;
    int link_type_ = 0;
    std::int64_t subsecond_scale_ = 1;
    std::uint32_t last_raw_[3] = {0, 0, 0};
    CaptureStats totals_;
};

}  // namespace flowsketch::capture

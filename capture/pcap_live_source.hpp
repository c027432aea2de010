// Live capture from a network interface through libpcap, non-blocking, with
// a selectable descriptor so one event loop can drive several interfaces.
#pragma once

#include <cstdint>
#include <string>

#include "capture/pcap_file_source.hpp"

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

/// Counters libpcap keeps per interface, widened to 64 bits (libpcap's are
/// 32-bit and wrap; deltas are taken modulo 2^32).
struct CaptureStats {
    std::uint64_t received = 0;    // frames the kernel handed to the filter
    std::uint64_t dropped = 0;     // dropped for lack of buffer space
    std::uint64_t if_dropped = 0;  // dropped by the interface or its driver
};

class PcapLiveSource {
public:
    /// Opens and activates the interface. Throws CaptureError naming the
    /// interface (no such device, permission denied, ...) or FilterError.
    explicit PcapLiveSource(const LiveOptions& options);
    ~PcapLiveSource();
    PcapLiveSource(const PcapLiveSource&) = delete;
    PcapLiveSource& operator=(const PcapLiveSource&) = delete;

    /// Descriptor to wait on for readability; -1 if the platform has none.
    int selectable_fd() const noexcept { return fd_; }
    int link_type() const noexcept { return link_type_; }
    const std::string& name() const noexcept { return name_; }

    using FrameHandler = void (*)(void* context, const Frame& frame);
    /// Hands every frame available now (at most `max_frames`) to `handler`
    /// without blocking. Returns the number handled; throws CaptureError if
    /// the interface failed (e.g. went down).
    int dispatch(int max_frames, FrameHandler handler, void* context);

    /// Cumulative counters since the interface was opened.
    CaptureStats stats();

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

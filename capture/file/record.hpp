// A record as the walks read it, and the rules that turn it into a frame.
// Kept free of libpcap's header, which only the walks' code needs
// (record_frame.hpp).
#pragma once

#include <cstdint>

struct bpf_program;

namespace flowsketch::capture::file {

// A record header, as libpcap 1.10 reads it: the time fields signed 32-bit
// in the host's byte order, unsigned when it swaps them (pcapng: seconds and
// nanoseconds already).
struct RecordHeader {
    std::int64_t seconds;
    std::int64_t subsecond;
    std::uint32_t caplen;
    std::uint32_t len;
};

// How a walk turns records into frames.
struct RecordRules {
    std::uint32_t snapshot = 0;        // libpcap's adjusted snapshot length
    bool microseconds = false;         // classic µs timestamps (scaled to ns, as libpcap does)
    const bpf_program* filter = nullptr;  // null: every record passes
};

}  // namespace flowsketch::capture::file

// From a record walked in place to a Frame: the snapshot cut, the timestamp
// and the BPF filter, as libpcap applies them. Shared by the pcap and pcapng
// walks, and inlined into their loops: it is most of their work per record.
#pragma once

#include <pcap/pcap.h>

#include <cstdint>

#include "capture/file/record.hpp"
#include "capture/frame.hpp"

namespace flowsketch::capture::file {

// The frame of a record wholly in the block; false if the filter rejects it.
[[gnu::always_inline]] inline bool to_frame(const RecordRules& rules, const RecordHeader& header,
                                            const std::uint8_t* data, Frame& frame) {
    // A record longer than the snapshot is cut to it (the rest is skipped).
    const std::uint32_t captured = header.caplen > rules.snapshot ? rules.snapshot : header.caplen;
    const std::int64_t subsecond_ns =
        rules.microseconds ? header.subsecond * 1000 : header.subsecond;
    if (rules.filter != nullptr) {
        pcap_pkthdr h{};
        h.ts.tv_sec = static_cast<time_t>(header.seconds);
        h.ts.tv_usec = static_cast<suseconds_t>(subsecond_ns);
        h.caplen = captured;
        h.len = header.len;
        if (pcap_offline_filter(rules.filter, &h, data) == 0) return false;
    }
    frame.timestamp_ns = clamp_timestamp_ns(header.seconds, subsecond_ns);
    frame.captured_length = captured;
    frame.wire_length = header.len;
    frame.data = data;
    return true;
}

}  // namespace flowsketch::capture::file

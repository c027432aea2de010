// The rules of libpcap 1.10 (sf-pcap.c, sf-pcapng.c) the in-place walks
// follow to the byte, for the link types flowsketch decodes.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "capture/decode/link_type.hpp"

namespace flowsketch::capture::file {

// Classic pcap (pcap_next_packet).
inline constexpr std::uint32_t max_record_length = 262144;  // max_snaplen_for_dlt() of these types
inline constexpr std::size_t record_header_bytes = 16;
inline constexpr std::size_t file_header_bytes = 24;

// pcapng.
inline constexpr std::uint32_t pcapng_section_header = 0x0a0d0d0a;
inline constexpr std::uint32_t pcapng_interface = 1;
inline constexpr std::uint32_t pcapng_packet = 2;  // obsolete packet block
inline constexpr std::uint32_t pcapng_simple_packet = 3;
inline constexpr std::uint32_t pcapng_interface_statistics = 5;
inline constexpr std::uint32_t pcapng_enhanced_packet = 6;
inline constexpr std::uint32_t pcapng_byte_order_magic = 0x1a2b3c4d;
inline constexpr std::size_t pcapng_block_header_bytes = 8;  // type, total length
inline constexpr std::size_t pcapng_block_frame_bytes = 12;  // and the trailing length
inline constexpr std::size_t pcapng_packet_fields = 20;      // enhanced and obsolete packet blocks
// libpcap refuses longer blocks (INITIAL_MAX_BLOCKSIZE; what these link types'
// snapshot lengths allow is smaller).
inline constexpr std::uint32_t pcapng_max_block_bytes = 16 * 1024 * 1024;
// The blocks libpcap reads at open, up to the first interface's, are read
// again to learn it; past this much, the file is left to libpcap.
inline constexpr off_t pcapng_max_prefix_bytes = 64 * 1024 * 1024;

// Frames libpcap rewrites after reading them (pcap_post_process): in files of
// the other byte order, the CAN ID behind a Linux cooked header. The walks do
// not, so such files stay with libpcap.
inline bool rewritten_by_libpcap(int link_type, bool swapped) noexcept {
    return swapped && (link_type == link_type::linux_sll || link_type == link_type::linux_sll2);
}

// libpcap's damage messages, which take one or two numbers.
inline std::string format_message(const char* pattern, unsigned long long a,
                                  unsigned long long b = 0) {
    char text[160];
    std::snprintf(text, sizeof text, pattern, a, b);
    return text;
}

}  // namespace flowsketch::capture::file

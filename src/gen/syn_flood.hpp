// The SYN flood of `flowsketch gen` (`--syn-flood`): single-packet SYN flows
// from distinct spoofed sources to one victim, on top of either mode. It has
// its own random streams, so the background packets are the same bytes with
// or without it.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "core/key/flow_key.hpp"
#include "src/gen/gen_config.hpp"
#include "src/gen/random_streams.hpp"

namespace flowsketch::gen {

/// `--syn-flood`: `config.syn_flood` single-packet TCP SYN flows (flags 0x02,
/// 60-byte Ethernet/IPv4/TCP frames, no payload: IPv4 total length 40 and six
/// bytes of Ethernet padding) from spoofed IPv4 sources to one victim,
/// 198.51.100.80:80 (TEST-NET-2, RFC 5737, outside every background prefix, so
/// no flood flow can equal a background flow).
///
/// Sources: a keyed 48-bit Feistel permutation P (keys from the seed) is walked
/// at 0, 1, 2, ...; P(k) = address << 16 | port is used when it is a plausible
/// spoofed unicast source (address not in 0/8, 127/8, 224/3 or the victim's
/// 198.51.100.0/24; port >= 1024) and skipped otherwise. P is a bijection, so
/// the flows are distinct by construction, with no set of seen keys.
///
/// Times: the flood's packets sit at uniformly random positions in [0, span]
/// (span: the background's last timestamp, so the flood covers the background's
/// span), i.e. a Poisson process conditioned on its count: the i-th time is
/// span * (E_1 + ... + E_i) / (E_1 + ... + E_{n+1}) for n + 1 exponentials,
/// floored to microseconds (their sum comes from a first pass over the stream).
class SynFlood {
  public:
    static constexpr std::uint32_t victim = 0xc6336450;  // 198.51.100.80
    static constexpr std::uint16_t victim_port = 80;
    static constexpr std::uint32_t frame_size = 60;
    static constexpr std::uint8_t tcp_flags_syn = 0x02;

    /// One flood packet (= flow): its source and timestamp.
    struct Packet {
        std::uint64_t source = 0;   // IPv4 address << 16 | source port
        std::uint64_t time_us = 0;  // microseconds since config.start
    };

    SynFlood(const GenConfig& config, std::uint64_t span_us);
    bool done() const noexcept { return emitted_ == count_; }
    /// Timestamp of the next packet (requires !done()); non-decreasing.
    std::uint64_t next_time_us() const noexcept { return next_time_us_; }
    /// The next packet; writes its frame_size-byte frame to `frame`. Requires !done().
    Packet next(std::span<std::uint8_t, frame_size> frame) noexcept;

    /// The flow key of a source.
    static core::FlowKey key(std::uint64_t source) noexcept;
    /// Whether P(k) = `source` is used (see above).
    static bool usable_source(std::uint64_t source) noexcept;

  private:
    std::uint64_t permute(std::uint64_t x) const noexcept;
    void draw_time() noexcept;

    std::array<std::uint64_t, 6> round_keys_{};
    Rng time_rng_;
    Rng header_rng_;
    std::uint64_t count_;
    std::uint64_t emitted_ = 0;
    std::uint64_t walk_ = 0;  // next k to try
    double span_us_;
    double total_ = 0;       // E_1 + ... + E_{n+1}
    double cumulative_ = 0;  // E_1 + ... + E_{emitted + 1}
    std::uint64_t next_time_us_ = 0;
};

}  // namespace flowsketch::gen

// The SYN flood: Feistel-walked sources, conditioned-Poisson times, bare SYN frames.
#include "src/gen/syn_flood.hpp"

#include <algorithm>
#include <cstring>

#include "src/gen/distributions.hpp"
#include "src/gen/flows.hpp"
#include "src/gen/frame_builder.hpp"
#include "src/gen/wire.hpp"

namespace flowsketch::gen {

SynFlood::SynFlood(const GenConfig& config, std::uint64_t span_us)
    : time_rng_(stream_rng(config.seed, Stream::flood_times)),
      header_rng_(stream_rng(config.seed, Stream::flood_headers)),
      count_(config.syn_flood),
      span_us_(static_cast<double>(span_us)) {
    Rng keys = stream_rng(config.seed, Stream::flood_sources);
    for (std::uint64_t& k : round_keys_) k = keys.next();
    if (count_ == 0) return;
    // First pass: the sum of all n + 1 exponentials, so the second pass can
    // place each partial sum in [0, span] as it goes.
    Rng pass = time_rng_;
    for (std::uint64_t i = 0; i <= count_; ++i) total_ += exponential(pass, 1.0);
    draw_time();
}

void SynFlood::draw_time() noexcept {
    // Partial sums only grow and never exceed the total (the first pass added the
    // same numbers in the same order), so times are non-decreasing and <= span.
    cumulative_ += exponential(time_rng_, 1.0);
    const double t = total_ > 0 ? cumulative_ / total_ * span_us_ : 0;
    next_time_us_ = std::min(static_cast<std::uint64_t>(t), static_cast<std::uint64_t>(span_us_));
}

std::uint64_t SynFlood::permute(std::uint64_t x) const noexcept {
    // Balanced Feistel network on two 24-bit halves: a bijection of [0, 2^48)
    // whatever the round function.
    constexpr std::uint64_t half = (std::uint64_t{1} << 24) - 1;
    std::uint64_t left = x >> 24;
    std::uint64_t right = x & half;
    for (const std::uint64_t k : round_keys_) {
        const std::uint64_t mixed = left ^ (splitmix_mix(right ^ k) & half);
        left = right;
        right = mixed;
    }
    return left << 24 | right;
}

bool SynFlood::usable_source(std::uint64_t source) noexcept {
    const auto address = static_cast<std::uint32_t>(source >> 16);
    const auto port = static_cast<std::uint16_t>(source);
    const std::uint32_t first = address >> 24;
    return port >= 1024 && first != 0 && first != 127 && first < 224 &&
           (address >> 8) != (victim >> 8);
}

core::FlowKey SynFlood::key(std::uint64_t source) noexcept {
    return core::FlowKey::ipv4(static_cast<std::uint32_t>(source >> 16), victim,
                               static_cast<std::uint16_t>(source), victim_port, proto_tcp);
}

SynFlood::Packet SynFlood::next(std::span<std::uint8_t, frame_size> frame) noexcept {
    Packet packet;
    packet.time_us = next_time_us_;
    // About 15% of P(k) are skipped; k < 2^48 always holds for any allowed count.
    do {
        packet.source = permute(walk_++);
    } while (!usable_source(packet.source));
    ++emitted_;
    if (!done()) draw_time();

    const std::uint64_t bits = header_rng_.next();
    const auto source_address = static_cast<std::uint32_t>(packet.source >> 16);
    std::uint8_t* p = frame.data();
    std::memset(p, 0, frame.size());  // the last 6 bytes are Ethernet padding
    std::memcpy(p, ethernet_macs.data(), ethernet_macs.size());
    put16(p + 12, 0x0800);
    std::uint8_t* ip = p + 14;
    ip[0] = 0x45;
    put16(ip + 2, 40);  // IPv4 + TCP headers, no payload
    put16(ip + 4, static_cast<std::uint32_t>(bits >> 32) & 0xffff);  // IPv4 ID
    put16(ip + 6, 0x4000);                                           // DF
    ip[8] = 64;
    ip[9] = proto_tcp;
    put32(ip + 12, source_address);
    put32(ip + 16, victim);
    put16(ip + 10, fold_checksum(sum16(ip, 20)));
    std::uint8_t* tcp = ip + 20;
    put16(tcp, static_cast<std::uint16_t>(packet.source));
    put16(tcp + 2, victim_port);
    put32(tcp + 4, static_cast<std::uint32_t>(bits));  // initial sequence number
    // Acknowledgment number 0: ACK is not set.
    tcp[12] = 0x50;  // data offset 5 words, no options
    tcp[13] = tcp_flags_syn;
    put16(tcp + 14, 64240);  // window
    const std::uint32_t pseudo_sum = sum16(ip + 12, 8) + proto_tcp + 20;
    put16(tcp + 16, fold_checksum(pseudo_sum + sum16(tcp, 20)));
    return packet;
}

}  // namespace flowsketch::gen

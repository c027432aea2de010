// `flowsketch gen`: synthetic, seeded traffic with exact per-flow truth.
//
// The generator is split in three:
//   make_flows()      the flow population: one Flow record per 5-tuple;
//   PacketScheduler   decides which flow sends the next packet, when, and how big
//                     (stationary traffic), or LifetimeScheduler (flows arrive,
//                     live for a while, may pause once, and end, optionally with
//                     FIN or RST);
//   FrameBuilder      turns (Flow, wire length, TCP flags) into header bytes.
// generate() runs the per-packet loop over those and writes the pcap and truth.
// The lifetime mode is opt-in: without it every byte is what it always was.
// SynFlood (`--syn-flood`) adds single-packet SYN flows on top of either mode,
// merged in time order; it has its own random streams, so the background
// packets are the same bytes with or without it.
//
// Everything random comes from our own xoshiro256** and our own sampling code,
// never from std:: distributions (whose output is implementation-defined), so
// one seed gives the same bytes on every platform.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/key/flow_key.hpp"
#include "core/sketch/random.hpp"

namespace flowsketch::gen {

/// The project's xoshiro256** (seeded through SplitMix64): deterministic on
/// every platform, which the pinned-output tests rely on.
using Rng = core::Xoshiro256;

/// Walker/Vose alias table: O(n) build, O(1) sample from a discrete distribution.
class AliasTable {
  public:
    /// Weights must be finite and >= 0 with a positive sum.
    explicit AliasTable(std::span<const double> weights);
    std::uint32_t sample(Rng& rng) const noexcept;
    std::size_t size() const noexcept { return alias_.size(); }

  private:
    // Acceptance thresholds in units of 2^-53, compared with 53 random bits as
    // integers, so sampling itself involves no floating point.
    std::vector<std::uint64_t> threshold_;
    std::vector<std::uint32_t> alias_;
};

/// Zipf weights r^-s for ranks r = 1..n (unnormalised; s = 0 is uniform).
std::vector<double> zipf_weights(std::uint64_t n, double s);

/// One bin of the packet-size mix: frame length (Ethernet header to end of
/// payload, no FCS) and relative weight.
struct SizeBin {
    std::uint32_t size = 0;
    double weight = 0;
};

inline constexpr std::uint32_t min_frame_size = 60;  // Ethernet minimum without FCS
inline constexpr std::uint32_t max_frame_size = 65535;

/// The classic "simple IMIX" 7:4:1 of 64/576/1500-byte frames.
std::vector<SizeBin> default_size_mix();
/// Parses "64:0.5,576:0.2,1500:0.3". Throws std::invalid_argument naming the bad entry.
std::vector<SizeBin> parse_size_mix(std::string_view text);
std::string format_size_mix(const std::vector<SizeBin>& mix);

/// Flow lifetimes (`--lifetimes`). Times are seconds of packet time.
struct LifetimeConfig {
    bool enabled = false;
    /// Poisson arrivals of new flows per second; 0: rate * flows / packets, so
    /// the run spans about packets / rate seconds as in the stationary mode.
    double flow_rate = 0;
    double duration_mean = 1.0;  // exponential; first to last packet, pause excluded
    double idle_gap_fraction = 0.25;  // of flows with >= 2 packets: pause once
    double idle_gap = 1.0;            // pause uniform in [0.5, 1.5] * idle_gap
    double fin_fraction = 0.6;        // of TCP flows: last packet carries FIN
    double rst_fraction = 0.1;        // of TCP flows: last packet carries RST
    /// The truth lists every silence longer than this; < 0: idle_gap / 4.
    double gap_min = -1;
};

struct GenConfig {
    std::string out_path;
    std::string truth_path;
    std::uint64_t packets = 1'000'000;
    std::uint64_t flows = 10'000;
    double zipf = 1.1;
    std::vector<SizeBin> sizes = default_size_mix();
    double rate = 100'000;  // mean packets per second of packet time
    double ipv6_fraction = 0.2;
    double vlan_fraction = 0;
    double tcp_fraction = 0.8;
    std::uint32_t snaplen = 128;
    bool pcapng = false;                  // `--format pcapng`: the capture as pcapng, not classic pcap
    std::uint64_t start = 1'700'000'000;  // UNIX seconds of the first packet
    std::uint64_t seed = 1;
    LifetimeConfig life;
    /// `--syn-flood`: this many extra single-packet SYN flows (SynFlood), on top
    /// of (not counted in) `packets`; 0: none, and no byte changes.
    std::uint64_t syn_flood = 0;
};

/// `config.life` with the defaults that depend on other options filled in
/// (flow_rate > 0, gap_min >= 0).
LifetimeConfig resolved_lifetimes(const GenConfig& config);

/// Limits the command line enforces (memory is about 100 bytes per flow;
/// --lifetimes about 170).
inline constexpr std::uint64_t max_flows = 50'000'000;
inline constexpr std::uint64_t max_packets = std::uint64_t{1} << 40;
/// --lifetimes counts a flow's packets in 32 bits to keep its per-flow record small.
inline constexpr std::uint64_t max_lifetime_packets = 0xffff'ffff;
inline constexpr std::uint32_t max_snaplen = 262'144;
/// --syn-flood keeps 16 bytes per flood flow (its source and time, for the truth).
inline constexpr std::uint64_t max_syn_flood = 50'000'000;

/// One flow: its key and encapsulation, per-flow header state, and its truth
/// counters. Lifetime state lives beside it (LifetimeScheduler), so the
/// stationary mode pays nothing for it.
struct Flow {
    core::FlowKey key;
    std::uint64_t packets = 0;  // truth: packets emitted
    std::uint64_t bytes = 0;    // truth: sum of wire lengths
    std::uint32_t tcp_seq = 0;
    std::uint32_t ipv6_flow_label = 0;
    std::uint16_t ipv4_id = 0;
    std::uint16_t vlan_id = 0;  // 0: untagged
};

/// Draws `config.flows` flows with distinct 5-tuples. Index i is popularity rank i + 1.
std::vector<Flow> make_flows(const GenConfig& config);

/// One scheduled packet.
struct PacketEvent {
    std::uint32_t flow = 0;       // index into the flow vector
    std::uint64_t time_us = 0;    // microseconds since config.start
    std::uint32_t wire_size = 0;  // requested frame size (FrameBuilder may raise it)
};

/// Stationary traffic: Zipf-popular flows, sizes from the mix, Poisson arrivals.
/// Each concern has its own random stream, so changing e.g. --sizes leaves the
/// choice of flows for each packet unchanged.
class PacketScheduler {
  public:
    explicit PacketScheduler(const GenConfig& config);
    PacketEvent next() noexcept;

  private:
    AliasTable popularity_;
    AliasTable sizes_;
    std::vector<std::uint32_t> size_values_;
    Rng flow_rng_;
    Rng size_rng_;
    Rng time_rng_;
    double mean_gap_us_;
    double time_us_ = 0;  // exact time; rounded down to microseconds on output
};

/// Timestamp of the last of `config.packets` stationary packets (what the last
/// PacketScheduler::next() returns), from the arrival stream alone.
std::uint64_t stationary_last_time_us(const GenConfig& config) noexcept;

/// TCP flag bytes the generator writes.
inline constexpr std::uint8_t tcp_flags_psh_ack = 0x18;
inline constexpr std::uint8_t tcp_flags_fin_ack = 0x11;
inline constexpr std::uint8_t tcp_flags_rst_ack = 0x14;

/// How a flow's last packet ends it (lifetime mode; TCP only).
enum class FlowEnd : std::uint8_t { none = 0, fin = 1, rst = 2 };

/// Flows that arrive, live and end (`--lifetimes`). Each flow gets, up front:
/// a packet budget (1 + its share of the rest by Zipf rank, so --packets and
/// --flows are exact), an arrival time (Poisson at flow_rate, in a random order
/// of ranks), a duration (exponential), maybe one pause, and an ending. Its
/// packets are planned over the duration (first at 0, last at the duration,
/// interior ones uniform order statistics); a pause after packet j replaces the
/// planned spacing between packets j and j + 1, so that silence is exactly the
/// drawn pause and the packets after it move by (pause - spacing). A heap of the
/// active flows' next-packet times orders packets by time; arrivals are pushed
/// lazily, so memory is per flow (a fixed-size record) plus per active flow.
class LifetimeScheduler {
  public:
    /// Per-flow lifetime plan, progress and truth.
    struct Life {
        double start_us = 0;     // arrival = first packet (timestamp: this, floored)
        double duration_us = 0;  // first to last packet as planned, before the pause
        double pause_us = 0;     // scheduled pause (0: none)
        double shift_us = 0;     // added to the packets after the pause
        double position = 0;     // latest interior order statistic in [0, 1]
        std::uint64_t last_us = 0;           // truth: latest emitted timestamp
        std::uint64_t pause_silence_us = 0;  // truth: the pause as emitted (whole us)
        std::uint32_t budget = 0;            // packets this flow sends
        std::uint32_t pause_after = 0;  // packet number followed by the pause (0: none)
        std::uint32_t sent = 0;         // packets scheduled so far
        FlowEnd end = FlowEnd::none;

        std::uint64_t first_us() const noexcept { return static_cast<std::uint64_t>(start_us); }
    };
    /// A silence longer than gap_min between two consecutive packets of a flow.
    struct Gap {
        std::uint32_t flow = 0;
        std::uint64_t start_us = 0;  // the packet before (since config.start)
        std::uint64_t end_us = 0;    // the packet after
    };

    /// `flows` is make_flows(config); its protocols decide which flows may end with FIN/RST.
    LifetimeScheduler(const GenConfig& config, const std::vector<Flow>& flows);
    bool done() const noexcept { return heap_.empty() && next_arrival_ == order_.size(); }
    /// The next packet in time order (ties: lower flow index first). Requires !done().
    PacketEvent next();
    /// TCP flags of the packet `event` (FIN/RST on a flow's last packet).
    std::uint8_t tcp_flags(const PacketEvent& event, std::uint64_t packet_number) const noexcept;
    /// Records truth (first/last time, gaps) for a packet as emitted.
    void record(const PacketEvent& event, std::uint64_t packet_number);
    /// Groups the gap records by flow (call once, after the last packet).
    void finish();
    /// One flow's gap records in time order (after finish()).
    std::span<const Gap> gaps_of(std::uint32_t flow) const noexcept;

    const std::vector<Life>& lives() const noexcept { return lives_; }
    const std::vector<Gap>& gaps() const noexcept { return gaps_; }
    std::uint64_t gap_min_us() const noexcept { return gap_min_us_; }

  private:
    struct Event {
        double time_us;
        std::uint32_t flow;
        // std::priority_queue is a max-heap: "less" means later.
        friend bool operator<(const Event& a, const Event& b) noexcept {
            return a.time_us != b.time_us ? a.time_us > b.time_us : a.flow > b.flow;
        }
    };
    double next_time_us(std::uint32_t flow, std::uint64_t packet_number) noexcept;

    std::vector<Life> lives_;
    std::vector<std::uint32_t> order_;  // flows in arrival order
    std::vector<Event> heap_;           // std::push_heap/pop_heap over Event::operator<
    std::vector<Gap> gaps_;
    std::size_t next_arrival_ = 0;
    double arrival_us_ = 0;
    double mean_arrival_gap_us_;
    std::uint64_t gap_min_us_ = 0;  // list silences strictly longer than this
    AliasTable sizes_;
    std::vector<std::uint32_t> size_values_;
    Rng size_rng_;
    Rng arrival_rng_;
    Rng spacing_rng_;
};

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

/// Writes link, IP and transport headers of one frame and advances the flow's
/// header state (IPv4 ID, TCP sequence). The payload is zeros, which lets the
/// TCP/UDP checksums be computed from the headers alone.
class FrameBuilder {
  public:
    static constexpr std::size_t max_header_size = 14 + 4 + 40 + 20;
    /// Smallest frame that holds this flow's headers (at least min_frame_size).
    static std::uint32_t min_size(const Flow& flow) noexcept;
    /// Fills `out` (max_header_size bytes) with the headers of a frame of
    /// `wire_size` bytes (>= min_size(flow)); returns the header length.
    static std::size_t build(Flow& flow, std::uint32_t wire_size,
                             std::span<std::uint8_t, max_header_size> out,
                             std::uint8_t tcp_flags = tcp_flags_psh_ack) noexcept;
};

/// Output file written in 1 MiB write() calls.
class BufferedFile {
  public:
    static constexpr std::size_t buffer_size = std::size_t{1} << 20;
    /// Creates or truncates `path`. Throws std::runtime_error naming the file.
    explicit BufferedFile(std::string path);
    ~BufferedFile();
    BufferedFile(const BufferedFile&) = delete;
    BufferedFile& operator=(const BufferedFile&) = delete;

    /// Space for n bytes (n <= buffer_size) at the end of the buffer, already counted as written.
    std::uint8_t* append(std::size_t n);
    void append(std::string_view bytes);
    /// Flushes and closes; throws std::runtime_error on any write error.
    void close();

  private:
    void flush();
    std::string path_;
    int fd_ = -1;
    std::vector<std::uint8_t> buffer_;
    std::size_t used_ = 0;
};

/// Classic pcap (microsecond timestamps), or pcapng (one section, one
/// interface with the default microsecond units, an enhanced packet block per
/// packet, as Wireshark's dumpcap writes them), little-endian on every host.
class PcapWriter {
  public:
    static constexpr std::uint32_t linktype_ethernet = 1;
    PcapWriter(std::string path, std::uint32_t snaplen, std::uint32_t linktype, bool pcapng = false);
    /// Appends a record header and returns space for its `captured` bytes.
    std::uint8_t* begin_record(std::uint32_t ts_sec, std::uint32_t ts_usec, std::uint32_t captured,
                               std::uint32_t wire);
    void close() { file_.close(); }

  private:
    BufferedFile file_;
    bool pcapng_;
};

struct GenSummary {
    std::uint64_t packets = 0;        // all packets written, --syn-flood's included
    std::uint64_t bytes = 0;          // sum of wire lengths
    std::uint64_t active_flows = 0;   // flows with at least one packet, flood flows included
    std::uint64_t flood_packets = 0;  // of `packets`, the --syn-flood ones (one per flood flow)
    std::uint64_t last_time_us = 0;   // relative to config.start
};

/// The command line that reproduces `config`'s content (output paths left out,
/// as they do not change a byte of it).
std::string canonical_command(const GenConfig& config);

/// Total order of flows in truth files: packets descending, then proto, src, dst
/// (numeric, IPv4 before IPv6), sport, dport — as scripts/tshark_truth.py sorts.
bool truth_order(const Flow& a, const Flow& b) noexcept;

/// Generates the pcap and the truth file. Throws std::runtime_error on I/O errors.
GenSummary generate(const GenConfig& config);

}  // namespace flowsketch::gen

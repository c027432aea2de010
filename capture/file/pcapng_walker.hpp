// The walk over pcapng blocks in place, block by block. On what libpcap reads
// it reads as libpcap's pcap_ng_next_packet does: the same frames, and the
// same damage, with the same message, at the same block. It reads on where
// libpcap 1.10 stops: interfaces that differ in link type or snapshot length,
// sections of either byte order, and packets on an interface id no block
// described (counted, not damage). Sections reset the interfaces; each
// Interface Description Block adds one (pcapng_interface.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "capture/bpf_filter.hpp"
#include "capture/file/block_pool.hpp"
#include "capture/file/pcapng_interface.hpp"
#include "capture/file/record.hpp"
#include "capture/source.hpp"

namespace flowsketch::capture::file {

class PcapngWalker {
public:
    /// libpcap has read the section header and the blocks up to the first
    /// interface's (it refuses a file without one), `opened_at` bytes: reads
    /// them again from `stream`, for the byte order and that interface's
    /// timestamp units, which libpcap keeps private. False (the file stays
    /// with libpcap) if they are not what libpcap accepted.
    bool start(std::FILE* stream, std::int64_t opened_at, int link_type);
    /// libpcap's adjusted snapshot length of the first interface.
    void set_snapshot(std::uint32_t snapshot) noexcept;
    /// The filter of every interface, compiled for its link type (null: none).
    void set_filters(FilterSet* filters);

    /// The next packet that passes the filter, reading as needed.
    ReadStatus next(BlockPool& pool, Frame& frame);

    /// Enhanced packet blocks wholly in the block, of one interface, at most
    /// frames.size(): the blocks nearly every pcapng file is made of. Anything
    /// else, or anything next() would call damage, ends the batch and is left to it.
    std::size_t next_batch(BlockPool& pool, std::span<Frame> frames);

    /// Every interface described so far, in file order across sections.
    const std::vector<InterfaceDescription>& interfaces() const noexcept { return described_; }
    /// The interface (an index into interfaces()) of the frames last returned.
    std::uint32_t batch_interface() const noexcept { return batch_interface_; }
    /// Packets on an interface id their section did not describe: not counted as frames.
    std::uint64_t unknown_interface_frames() const noexcept { return unknown_interface_frames_; }
    /// The walk has read on past a block where libpcap 1.10 calls the file
    /// damaged (an interface of another link type or snapshot length than the
    /// first, a section of the other byte order, a packet on an undescribed
    /// interface): the frames since differ from pcap_next_ex's, which has none.
    bool past_libpcap() const noexcept { return past_libpcap_; }

private:
    // Adds an interface from an Interface Description Block's link type,
    // snapshot length and options; empty on success, else the damage message.
    std::string add_interface(int link_type, std::uint32_t snapshot, const std::uint8_t* options,
                              std::size_t length);
    void apply_filter(PcapngInterface& interface, InterfaceDescription& description);
    void read_statistics(const std::uint8_t* body, std::size_t length);

    bool swapped_ = false;  // the current section is in the other byte order than the host's
    FilterSet* filters_ = nullptr;
    std::uint32_t section_ = 0;
    std::uint32_t batch_interface_ = 0;
    std::uint64_t unknown_interface_frames_ = 0;
    bool past_libpcap_ = false;
    int first_link_type_ = 0;  // libpcap's mapped one, and its snapshot length
    std::uint32_t first_snapshot_ = 0;
    // The interfaces of the current section (the first one's read at open,
    // again, since libpcap keeps its own private), and of the whole file.
    std::vector<PcapngInterface> interfaces_;
    std::vector<InterfaceDescription> described_;
};

}  // namespace flowsketch::capture::file

// The walk over pcapng blocks in place, block by block, as libpcap's
// pcap_ng_next_packet reads them: the same frames, and the same damage, with
// the same message, at the same block. Sections reset the interfaces; each
// Interface Description Block adds one (pcapng_interface.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

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
    void set_snapshot(std::uint32_t snapshot) noexcept { rules_.snapshot = snapshot; }
    void set_filter(const bpf_program* filter) noexcept { rules_.filter = filter; }

    /// The next packet that passes the filter, reading as needed.
    ReadStatus next(BlockPool& pool, Frame& frame);

    /// Enhanced packet blocks wholly in the block, at most frames.size(): the
    /// blocks nearly every pcapng file is made of. Anything else, or anything
    /// next() would call damage, ends the batch and is left to it.
    std::size_t next_batch(BlockPool& pool, std::span<Frame> frames);

private:
    // Adds an interface from an Interface Description Block's options; empty
    // on success, else the damage message.
    std::string add_interface(const std::uint8_t* options, std::size_t length);

    int link_type_ = 0;     // the first interface's, mapped by libpcap
    bool swapped_ = false;  // every section in the other byte order than the host's
    RecordRules rules_;     // classic µs scaling never applies: timestamps come in ns
    // The interfaces of the current section, as libpcap keeps them (the
    // first one's read at open, again, since libpcap keeps its own private).
    std::vector<PcapngInterface> interfaces_;
};

}  // namespace flowsketch::capture::file

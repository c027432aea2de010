// The walk over classic pcap 2.4 records in place: 16-byte record headers in
// either byte order, micro- or nanosecond timestamps. The same frames,
// lengths, timestamps, errors and messages as pcap_next_ex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "capture/file/block_pool.hpp"
#include "capture/file/byte_order.hpp"
#include "capture/file/record.hpp"
#include "capture/source.hpp"

namespace flowsketch::capture::file {

class PcapWalker {
public:
    /// `swapped`: the file is in the other byte order than the host's.
    void start(bool swapped, bool microseconds, std::uint32_t snapshot) noexcept {
        swapped_ = swapped;
        rules_.microseconds = microseconds;
        rules_.snapshot = snapshot;
    }
    void set_filter(const bpf_program* filter) noexcept { rules_.filter = filter; }

    /// The next record that passes the filter, reading as needed.
    ReadStatus next(BlockPool& pool, Frame& frame);

    /// Records wholly in the block, at most frames.size(): reading more would
    /// move the bytes under the frames already taken. Whatever needs a read,
    /// or is damaged, is left to next() once no frame is pending.
    std::size_t next_batch(BlockPool& pool, std::span<Frame> frames);

private:
    RecordHeader read_record_header(const std::uint8_t* p) const noexcept {
        return RecordHeader{time_field(p), time_field(p + 4), load32(p + 8, swapped_),
                            load32(p + 12, swapped_)};
    }
    std::int64_t time_field(const std::uint8_t* p) const noexcept {
        const std::uint32_t value = load32(p, swapped_);
        return swapped_ ? std::int64_t{value} : std::int64_t{static_cast<std::int32_t>(value)};
    }

    bool swapped_ = false;
    RecordRules rules_;
};

}  // namespace flowsketch::capture::file

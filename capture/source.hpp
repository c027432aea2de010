// What every source of frames offers — capture files, pipes and live
// interfaces: the next batch of frames, the link type, counters, and close.
//
// The interface is per batch, never per frame: a virtual call is paid once per
// batch. The replay holds the concrete PcapFileSource (final) anyway, so its
// calls are direct and can be inlined.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "capture/errors.hpp"
#include "capture/frame.hpp"

namespace flowsketch::capture {

enum class ReadStatus {
    frame,        // a frame was read
    end_of_file,  // clean end
    damaged,      // the file is cut short or corrupt: damage_message() says how
    /// A signal arrived while the walk waited for a pipe to deliver more
    /// (SIGINT or SIGTERM, whose handlers do not restart the read): no frame
    /// is lost, and the next call goes on where this one stopped.
    interrupted,
    /// A live source has no frame now: wait on its selectable descriptor.
    would_block,
};

/// Counters libpcap keeps per interface, widened to 64 bits (libpcap's are
/// 32-bit and wrap; deltas are taken modulo 2^32). Files have none: zero.
struct CaptureStats {
    std::uint64_t received = 0;    // frames the kernel handed to the filter
    std::uint64_t dropped = 0;     // dropped for lack of buffer space
    std::uint64_t if_dropped = 0;  // dropped by the interface or its driver
};

class Source {
public:
    virtual ~Source() = default;

    /// The next frames that pass the filter, at most frames.size() (which must
    /// not be 0). Returns how many: at least 1 with status `frame`; 0 with any
    /// other status. Frames stay valid until the next read.
    virtual std::size_t next_batch(std::span<Frame> frames, ReadStatus& status) = 0;

    /// The link type (DLT_*) of the frames of the last batch. A pcapng file's
    /// interfaces may differ in link type: its batches hold one interface's frames.
    virtual int link_type() const noexcept = 0;

    /// Cumulative counters since the source was opened.
    virtual CaptureStats stats() = 0;

    /// Releases the handle and buffers now instead of at destruction; reads
    /// after it end (end_of_file). Idempotent.
    virtual void close() noexcept = 0;

protected:
    Source() = default;
    Source(const Source&) = default;
    Source& operator=(const Source&) = default;
};

}  // namespace flowsketch::capture

// Replay of capture files through libpcap: classic pcap (either byte order,
// micro- or nanosecond) and pcapng, recognised by content, not by name.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

struct pcap;

namespace flowsketch::capture {

/// One captured frame. `data` is valid only until the next read.
struct Frame {
    std::int64_t timestamp_ns = 0;
    std::uint32_t captured_length = 0;
    std::uint32_t wire_length = 0;  // the record's original length
    const std::uint8_t* data = nullptr;
};

/// Latest packet time flowsketch represents (2^62 ns, in the year 2116).
inline constexpr std::int64_t max_timestamp_ns = std::int64_t{1} << 62;

/// Packet time in Unix nanoseconds, clamped to [0, max_timestamp_ns]: a
/// damaged or hostile capture (pcapng timestamps are 64-bit) cannot make the
/// interval arithmetic downstream overflow.
std::int64_t clamp_timestamp_ns(std::int64_t seconds, std::int64_t subsecond_ns) noexcept;

/// A file (or interface) that cannot be opened or read: message names it.
class CaptureError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// A BPF expression that does not compile: a usage error.
class FilterError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

enum class ReadStatus {
    frame,        // a frame was read
    end_of_file,  // clean end
    damaged,      // the file is cut short or corrupt: damage_message() says how
};

class PcapFileSource {
public:
    /// Opens `path` and compiles `filter` (empty: none) against its link type.
    /// Throws CaptureError (file missing, not a capture) or FilterError.
    PcapFileSource(const std::string& path, const std::string& filter);
    /// The same reader over an already open stream (e.g. fmemopen in the fuzz
    /// target), so in-memory captures take exactly the path `-r` takes. `name`
    /// stands in for the path in messages. Takes ownership of `stream`: it is
    /// closed by the destructor, or before the constructor throws.
    PcapFileSource(std::FILE* stream, const std::string& name, const std::string& filter);
    ~PcapFileSource();
    PcapFileSource(const PcapFileSource&) = delete;
    PcapFileSource& operator=(const PcapFileSource&) = delete;

    /// Next frame that passes the filter.
    ReadStatus next(Frame& frame);

    const std::string& path() const noexcept { return path_; }
    int link_type() const noexcept { return link_type_; }
    const std::string& damage_message() const noexcept { return damage_; }

private:
    void apply_filter(const std::string& filter);

    std::string path_;
    pcap* handle_ = nullptr;
    int link_type_ = 0;
    std::string damage_;
};

}  // namespace flowsketch::capture

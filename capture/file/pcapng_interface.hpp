// The per-interface state of a pcapng section, one per Interface Description
// Block: how the interface's timestamps become seconds and nanoseconds (as
// libpcap keeps it), its link type, and the snapshot length and BPF program
// its records are read with. Interfaces of one file may differ in all of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "capture/file/record.hpp"

namespace flowsketch::capture::file {

/// What a file's interface is, for the report: one per Interface Description
/// Block, numbered in file order across sections.
struct InterfaceDescription {
    std::string name;                 // if_name, or empty
    int link_type = 0;                // DLT_* (LINKTYPE_RAW read as DLT_RAW)
    std::uint32_t section = 0;        // the section it belongs to, from 0
    std::uint32_t id = 0;             // its interface id within the section
    bool filter_compiles = true;      // the BPF expression compiles for its link type
    std::string filter_error;         // else, libpcap's message
    std::uint64_t unfiltered = 0;     // frames not counted: the filter could not run on them
    /// The counters of the interface's last Interface Statistics Block, where
    /// it has them (isb_ifrecv, isb_ifdrop, isb_osdrop): what the capturing
    /// host counted, cumulative from the start of its capture.
    std::optional<std::uint64_t> if_received;
    std::optional<std::uint64_t> if_dropped;
    std::optional<std::uint64_t> os_dropped;
};

struct PcapngInterface {
    std::uint64_t units_per_second = 1'000'000;  // if_tsresol
    std::uint64_t offset_seconds = 0;            // if_tsoffset
    bool binary = false;                         // if_tsresol a power of 2
    RecordRules rules;                           // snapshot length and filter
    std::uint32_t file_index = 0;                // its InterfaceDescription
    bool filter_compiles = true;

    /// Reads an Interface Description Block's options (`swapped`: the
    /// section's byte order), as libpcap's add_interface and
    /// process_idb_options do; `name` gets if_name. Empty on success, else
    /// the message that makes the file damaged.
    std::string read_options(const std::uint8_t* options, std::size_t length, bool swapped,
                             std::string& name);

    /// A timestamp of this interface in seconds and nanoseconds, with
    /// libpcap's arithmetic (unsigned, wrapping; the fraction cut to an int as
    /// it stores it in the header). Micro- and nanosecond units, nearly every
    /// file, divide by constants.
    RecordHeader record_header(std::uint64_t time, std::uint32_t caplen,
                               std::uint32_t len) const noexcept {
        constexpr std::uint64_t ns_per_second = 1'000'000'000;
        const std::uint64_t units = units_per_second;
        std::uint64_t seconds;
        std::uint64_t fraction;
        if (units == 1'000'000) {
            seconds = time / 1'000'000;
            fraction = time % 1'000'000 * 1000;
        } else if (units == ns_per_second) {
            seconds = time / ns_per_second;
            fraction = time % ns_per_second;
        } else {
            seconds = time / units;
            fraction = time % units;
            if (binary) {
                fraction = fraction * ns_per_second / units;
            } else if (units > ns_per_second) {
                fraction /= units / ns_per_second;
            } else {
                fraction *= ns_per_second / units;
            }
        }
        seconds += offset_seconds;
        return RecordHeader{static_cast<std::int64_t>(seconds),
                            static_cast<std::int64_t>(static_cast<std::int32_t>(fraction)), caplen,
                            len};
    }
};

}  // namespace flowsketch::capture::file

#include "capture/file/pcapng_interface.hpp"

#include "capture/file/byte_order.hpp"
#include "capture/file/libpcap_rules.hpp"

namespace flowsketch::capture::file {

std::string PcapngInterface::read_options(const std::uint8_t* options, std::size_t length,
                                          bool swapped, std::string& name) {
    bool saw_resolution = false;
    bool saw_offset = false;
    const std::string too_short =
        format_message("block of type %llu in pcapng dump file is too short", pcapng_interface);
    while (length != 0) {
        if (length < 4) return too_short;
        const std::uint16_t code = load16(options, swapped);
        const std::uint16_t option_length = load16(options + 2, swapped);
        const std::size_t padded = (std::size_t{option_length} + 3) / 4 * 4;
        if (length - 4 < padded) return too_short;
        const std::uint8_t* value = options + 4;
        options += 4 + padded;
        length -= 4 + padded;
        if (code == 0) {  // opt_endofopt
            if (option_length != 0) {
                return format_message("Interface Description Block has opt_endofopt option with length %llu != 0",
                                      option_length);
            }
            break;
        }
        if (code == 2) {  // if_name: UTF-8, not necessarily terminated
            std::size_t end = 0;
            while (end < option_length && value[end] != 0) ++end;
            name.assign(reinterpret_cast<const char*>(value), end);
        } else if (code == 9) {  // if_tsresol
            if (option_length != 1) {
                return format_message("Interface Description Block has if_tsresol option with length %llu != 1",
                                      option_length);
            }
            if (saw_resolution) return "Interface Description Block has more than one if_tsresol option";
            saw_resolution = true;
            const std::uint8_t resolution = value[0];
            if ((resolution & 0x80) != 0) {
                const unsigned shift = resolution & 0x7fu;
                if (shift > 63) {
                    return format_message("Interface Description Block if_tsresol option resolution 2^-%llu is too high",
                                          shift);
                }
                binary = true;
                units_per_second = std::uint64_t{1} << shift;
            } else {
                if (resolution > 19) {
                    return format_message("Interface Description Block if_tsresol option resolution 10^-%llu is too high",
                                          resolution);
                }
                binary = false;
                units_per_second = 1;
                for (unsigned i = 0; i < resolution; ++i) units_per_second *= 10;
            }
        } else if (code == 14) {  // if_tsoffset
            if (option_length != 8) {
                return format_message("Interface Description Block has if_tsoffset option with length %llu != 8",
                                      option_length);
            }
            if (saw_offset) return "Interface Description Block has more than one if_tsoffset option";
            saw_offset = true;
            offset_seconds = load64(value, swapped);
        }
    }
    return {};
}

}  // namespace flowsketch::capture::file

// The capture writer of `flowsketch gen`: classic pcap or pcapng.
#pragma once

#include <cstdint>
#include <string>

#include "src/gen/buffered_file.hpp"

namespace flowsketch::gen {

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

}  // namespace flowsketch::gen

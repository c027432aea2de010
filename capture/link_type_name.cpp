#include "capture/link_type_name.hpp"

#include <pcap/pcap.h>

namespace flowsketch::capture {

std::string link_type_name(int link_type) {
    const char* name = pcap_datalink_val_to_name(link_type);
    return name != nullptr ? std::string(name) : "DLT_" + std::to_string(link_type);
}

}  // namespace flowsketch::capture

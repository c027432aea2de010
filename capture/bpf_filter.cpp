#include "capture/bpf_filter.hpp"

#include <pcap/pcap.h>

namespace flowsketch::capture {

void BpfProgramDeleter::operator()(bpf_program* program) const noexcept {
    pcap_freecode(program);
    delete program;
}

BpfProgram compile_filter(pcap* handle, const std::string& filter, std::string& error) {
    BpfProgram program(new bpf_program{});
    if (pcap_compile(handle, program.get(), filter.c_str(), 1, PCAP_NETMASK_UNKNOWN) != 0) {
        error = "invalid filter expression '" + filter + "': " + pcap_geterr(handle);
        return nullptr;
    }
    return program;
}

}  // namespace flowsketch::capture

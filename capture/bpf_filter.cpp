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

void FilterSet::adopt(int link_type, BpfProgram program) {
    compiled_[link_type] = Compiled{std::move(program), {}};
}

const bpf_program* FilterSet::program_for(int link_type, std::string& error) {
    auto found = compiled_.find(link_type);
    if (found == compiled_.end()) {
        Compiled compiled;
        // A handle of that link type only to compile against (262144: the
        // snapshot libpcap gives the link types flowsketch decodes).
        pcap* dead = pcap_open_dead(link_type, 262144);
        if (dead == nullptr) {
            compiled.error = "libpcap cannot compile for link type " + std::to_string(link_type);
        } else {
            compiled.program = compile_filter(dead, expression_, compiled.error);
            pcap_close(dead);
        }
        found = compiled_.emplace(link_type, std::move(compiled)).first;
    }
    error = found->second.error;
    return found->second.program.get();
}

}  // namespace flowsketch::capture

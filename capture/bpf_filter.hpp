// BPF filters, compiled by libpcap against a source's handle; shared by the
// file source (which runs them itself on records walked in place) and the
// live source (which hands them to the kernel).
#pragma once

#include <memory>
#include <string>

struct pcap;
struct bpf_program;

namespace flowsketch::capture {

struct BpfProgramDeleter {
    void operator()(bpf_program* program) const noexcept;
};
using BpfProgram = std::unique_ptr<bpf_program, BpfProgramDeleter>;

/// Compiles `filter` (not empty) for `handle`'s link type. Null on failure,
/// with `error` set to the message a FilterError carries. The caller throws:
/// it has its handle to close first.
BpfProgram compile_filter(pcap* handle, const std::string& filter, std::string& error);

}  // namespace flowsketch::capture

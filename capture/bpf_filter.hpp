// BPF filters, compiled by libpcap against a source's handle; shared by the
// file source (which runs them itself on records walked in place) and the
// live source (which hands them to the kernel).
#pragma once

#include <map>
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

/// One expression compiled once per link type, for a file whose interfaces
/// differ in link type (pcapng): a BPF program reads link-layer offsets, so
/// each link type needs its own.
class FilterSet {
public:
    explicit FilterSet(std::string expression) : expression_(std::move(expression)) {}

    /// The program for an already compiled link type (the one the file was opened with).
    void adopt(int link_type, BpfProgram program);

    /// The program for `link_type`, compiled at the first call; null if the
    /// expression does not compile for it (`error` then says why).
    const bpf_program* program_for(int link_type, std::string& error);

private:
    struct Compiled {
        BpfProgram program;
        std::string error;
    };
    std::string expression_;
    std::map<int, Compiled> compiled_;
};

}  // namespace flowsketch::capture

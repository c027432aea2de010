#include "capture/pcap_file_source.hpp"

#include <pcap/pcap.h>

namespace flowsketch::capture {

std::int64_t clamp_timestamp_ns(std::int64_t seconds, std::int64_t subsecond_ns) noexcept {
    constexpr std::int64_t ns_per_second = 1'000'000'000;
    if (seconds < 0 || subsecond_ns < 0) return 0;
    if (seconds >= max_timestamp_ns / ns_per_second) return max_timestamp_ns;
    const std::int64_t ns = seconds * ns_per_second + subsecond_ns % ns_per_second;
    return ns > max_timestamp_ns ? max_timestamp_ns : ns;
}

PcapFileSource::PcapFileSource(const std::string& path, const std::string& filter) : path_(path) {
    char errbuf[PCAP_ERRBUF_SIZE] = {};
    // Nanosecond precision: libpcap scales microsecond files up, never loses digits.
    handle_ = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO,
                                                      errbuf);
    if (handle_ == nullptr) throw CaptureError(path + ": " + errbuf);
    apply_filter(filter);
}

PcapFileSource::PcapFileSource(std::FILE* stream, const std::string& name,
                               const std::string& filter)
    : path_(name) {
    char errbuf[PCAP_ERRBUF_SIZE] = {};
    handle_ = pcap_fopen_offline_with_tstamp_precision(stream, PCAP_TSTAMP_PRECISION_NANO, errbuf);
    if (handle_ == nullptr) {
        // libpcap leaves the stream to us when it fails; on success pcap_close closes it.
        std::fclose(stream);
        throw CaptureError(name + ": " + errbuf);
    }
    apply_filter(filter);
}

// Runs inside a constructor: on failure it closes the handle itself, because
// the destructor of a half-built object does not run.
void PcapFileSource::apply_filter(const std::string& filter) {
    link_type_ = pcap_datalink(handle_);
    if (filter.empty()) return;

    bpf_program program{};
    if (pcap_compile(handle_, &program, filter.c_str(), 1, PCAP_NETMASK_UNKNOWN) != 0) {
        std::string message = "invalid filter expression '" + filter + "': " + pcap_geterr(handle_);
        pcap_close(handle_);
        handle_ = nullptr;
        throw FilterError(message);
    }
    const int status = pcap_setfilter(handle_, &program);
    pcap_freecode(&program);
    if (status != 0) {
        std::string message = "cannot apply filter '" + filter + "' to " + path_ + ": " +
                              pcap_geterr(handle_);
        pcap_close(handle_);
        handle_ = nullptr;
        throw FilterError(message);
    }
}

PcapFileSource::~PcapFileSource() {
    if (handle_ != nullptr) pcap_close(handle_);
}

ReadStatus PcapFileSource::next(Frame& frame) {
    pcap_pkthdr* header = nullptr;
    const u_char* data = nullptr;
    const int status = pcap_next_ex(handle_, &header, &data);
    if (status == 1) {
        frame.timestamp_ns = clamp_timestamp_ns(static_cast<std::int64_t>(header->ts.tv_sec),
                                                static_cast<std::int64_t>(header->ts.tv_usec));
        frame.captured_length = header->caplen;
        frame.wire_length = header->len;
        frame.data = data;
        return ReadStatus::frame;
    }
    if (status == PCAP_ERROR_BREAK) return ReadStatus::end_of_file;
    damage_ = pcap_geterr(handle_);
    return ReadStatus::damaged;
}

}  // namespace flowsketch::capture

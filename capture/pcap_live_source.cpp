#include "capture/pcap_live_source.hpp"

#include <pcap/pcap.h>

namespace flowsketch::capture {
namespace {

struct DispatchContext {
    PcapLiveSource::FrameHandler handler;
    void* context;
    std::int64_t subsecond_scale;  // 1 for nanosecond timestamps, 1000 for microsecond
};

extern "C" void on_packet(u_char* user, const pcap_pkthdr* header, const u_char* data) {
    auto* dispatch = reinterpret_cast<DispatchContext*>(user);
    Frame frame;
    frame.timestamp_ns =
        clamp_timestamp_ns(static_cast<std::int64_t>(header->ts.tv_sec),
                           static_cast<std::int64_t>(header->ts.tv_usec) * dispatch->subsecond_scale);
    frame.captured_length = header->caplen;
    frame.wire_length = header->len;
    frame.data = data;
    dispatch->handler(dispatch->context, frame);
}

}  // namespace

PcapLiveSource::PcapLiveSource(const LiveOptions& options) : name_(options.interface) {
    char errbuf[PCAP_ERRBUF_SIZE] = {};
    handle_ = pcap_create(options.interface.c_str(), errbuf);
    if (handle_ == nullptr) throw CaptureError("interface " + options.interface + ": " + errbuf);
    const auto fail = [&](const std::string& what) {
        std::string message = "interface " + options.interface + ": " + what;
        pcap_close(handle_);
        handle_ = nullptr;
        throw CaptureError(message);
    };
    pcap_set_snaplen(handle_, options.snaplen);
    pcap_set_promisc(handle_, options.promiscuous ? 1 : 0);
    pcap_set_timeout(handle_, options.timeout_ms);
    if (options.immediate) pcap_set_immediate_mode(handle_, 1);
    if (options.buffer_size > 0) pcap_set_buffer_size(handle_, options.buffer_size);
    // Nanosecond timestamps where the kernel offers them; fine if it does not.
    pcap_set_tstamp_precision(handle_, PCAP_TSTAMP_PRECISION_NANO);

    const int status = pcap_activate(handle_);
    if (status < 0) {
        std::string reason = pcap_statustostr(status);
        const char* detail = pcap_geterr(handle_);
        if (status == PCAP_ERROR && detail != nullptr && *detail != '\0') reason = detail;
        if ((status == PCAP_ERROR_NO_SUCH_DEVICE || status == PCAP_ERROR_PERM_DENIED) &&
            detail != nullptr && *detail != '\0') {
            reason += std::string(" (") + detail + ")";
        }
        fail(reason);
    }
    subsecond_scale_ = pcap_get_tstamp_precision(handle_) == PCAP_TSTAMP_PRECISION_NANO ? 1 : 1000;
    link_type_ = pcap_datalink(handle_);
    if (!options.filter.empty()) {
        bpf_program program{};
        if (pcap_compile(handle_, &program, options.filter.c_str(), 1, PCAP_NETMASK_UNKNOWN) != 0) {
            std::string message = "invalid filter expression '" + options.filter + "': " +
                                  pcap_geterr(handle_);
            pcap_close(handle_);
            handle_ = nullptr;
            throw FilterError(message);
        }
        const int set = pcap_setfilter(handle_, &program);
        pcap_freecode(&program);
        if (set != 0) fail(std::string("cannot apply filter: ") + pcap_geterr(handle_));
    }
    if (pcap_setnonblock(handle_, 1, errbuf) != 0) fail(errbuf);
    fd_ = pcap_get_selectable_fd(handle_);
}

PcapLiveSource::~PcapLiveSource() {
    if (handle_ != nullptr) pcap_close(handle_);
}

int PcapLiveSource::dispatch(int max_frames, FrameHandler handler, void* context) {
    DispatchContext dispatch{handler, context, subsecond_scale_};
    const int n = pcap_dispatch(handle_, max_frames, on_packet, reinterpret_cast<u_char*>(&dispatch));
    if (n == PCAP_ERROR) throw CaptureError("interface " + name_ + ": " + pcap_geterr(handle_));
    return n < 0 ? 0 : n;
}

CaptureStats PcapLiveSource::stats() {
    pcap_stat raw{};
    if (pcap_stats(handle_, &raw) != 0) return totals_;
    const std::uint32_t now[3] = {raw.ps_recv, raw.ps_drop, raw.ps_ifdrop};
    std::uint64_t* targets[3] = {&totals_.received, &totals_.dropped, &totals_.if_dropped};
    for (int i = 0; i < 3; ++i) {
        *targets[i] += static_cast<std::uint32_t>(now[i] - last_raw_[i]);  // modulo 2^32
        last_raw_[i] = now[i];
    }
    return totals_;
}

}  // namespace flowsketch::capture

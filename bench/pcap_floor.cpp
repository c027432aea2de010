// The libpcap floor: walks capture files with pcap_next_ex and does nothing
// else. flowsketch's whole-process benchmark is quoted as a ratio to this.
#include <pcap/pcap.h>

#include <cstdint>
#include <cstdio>

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: pcap_floor FILE...\n");
        return 2;
    }
    std::uint64_t packets = 0;
    std::uint64_t bytes = 0;
    for (int i = 1; i < argc; ++i) {
        char errbuf[PCAP_ERRBUF_SIZE] = {};
        pcap_t* handle = pcap_open_offline(argv[i], errbuf);
        if (handle == nullptr) {
            std::fprintf(stderr, "pcap_floor: %s: %s\n", argv[i], errbuf);
            return 1;
        }
        pcap_pkthdr* header = nullptr;
        const u_char* data = nullptr;
        while (pcap_next_ex(handle, &header, &data) == 1) {
            ++packets;
            bytes += header->len;
        }
        pcap_close(handle);
    }
    std::printf("%llu packets %llu bytes\n", static_cast<unsigned long long>(packets),
                static_cast<unsigned long long>(bytes));
    return 0;
}

#include "zaya/sysinfo.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

void zaya_sysinfo_cpu_model(char *out, size_t cap) {
    snprintf(out, cap, "unknown");
    FILE *ci = fopen("/proc/cpuinfo", "r");
    if (!ci) return;
    char buf[512];
    while (fgets(buf, sizeof buf, ci)) {
        char *colon = strchr(buf, ':');
        if (!strncmp(buf, "model name", 10) && colon) {
            snprintf(out, cap, "%s", colon + 2);
            out[strcspn(out, "\n")] = 0;
            break;
        }
    }
    fclose(ci);
}

int64_t zaya_sysinfo_peak_rss_bytes(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return -1;
    return (int64_t)ru.ru_maxrss * 1024; /* Linux reports KiB */
}

/* Facts about the machine that results files record. */
#ifndef ZAYA_SYSINFO_H
#define ZAYA_SYSINFO_H

#include <stddef.h>

/* "model name" from /proc/cpuinfo, or "unknown". */
void zaya_sysinfo_cpu_model(char *buf, size_t cap);

#endif

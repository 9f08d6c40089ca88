/* cal_machine.c - describing the machine a calibration ran on: host name, CPU model from
 * /proc/cpuinfo, online cores, and the date. Read-only looks at the system; no state kept. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dtsim/kern.h"

static void cpu_model(char *out, size_t size)
{
    snprintf(out, size, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *v = strchr(line, ':');
        if (!v) continue;
        v++;
        while (*v == ' ' || *v == '\t') v++;
        size_t n = strcspn(v, "\n");
        snprintf(out, size, "%.*s", (int)n, v);
        break;
    }
    fclose(f);
}

void cal_result_set_machine(cal_result *c)
{
    if (gethostname(c->hostname, sizeof c->hostname) != 0) snprintf(c->hostname, sizeof c->hostname, "unknown");
    c->hostname[sizeof c->hostname - 1] = '\0';
    cpu_model(c->cpu_model, sizeof c->cpu_model);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    c->cores = n > 0 ? (int)n : 1;
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(c->date, sizeof c->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

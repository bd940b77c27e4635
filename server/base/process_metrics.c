/*
 * process_metrics.c - the process's own figures in Prometheus text, as
 * every Prometheus client library's process collector names them
 * (process_cpu_seconds_total, process_resident_memory_bytes, ...), so
 * that dashboards made for any exporter read rlockd's. Read from /proc
 * (Linux) at each scrape; owns no state, and never fails a scrape for a
 * figure it cannot read: that figure is left out.
 */
#include "base/process_metrics.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* One figure: its HELP, TYPE and sample; -ENOMEM or 0. */
static int append_figure(struct buffer *out, const char *name, const char *type,
                         const char *help, double value)
{
    char text[384];
    int n =
        snprintf(text, sizeof(text), "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n",
                 name, help, name, type, name, value);

    if (n < 0 || (size_t)n >= sizeof(text))
        return 0; /* cannot happen with this file's names */
    return buffer_append(out, text, (size_t)n) == 0 ? 0 : -ENOMEM;
}

/* Open descriptors: the entries of /proc/self/fd but . and .., and the
 * one the listing itself holds; -1 when it cannot be read. */
static long open_fds(void)
{
    DIR *dir = opendir("/proc/self/fd");
    struct dirent *e;
    long count = 0;

    if (dir == NULL)
        return -1;
    while ((e = readdir(dir)) != NULL)
        if (e->d_name[0] != '.')
            count++;
    closedir(dir);
    return count - 1;
}

/* The process's start, in seconds since the epoch: the boot time
 * (/proc/stat's btime) plus its start in clock ticks after boot (field
 * 22 of /proc/self/stat, after the command name in parentheses). */
static bool start_time(double *seconds)
{
    char line[512], *after_name;
    unsigned long long btime = 0, ticks = 0;
    bool found = false;
    FILE *f = fopen("/proc/stat", "r");

    if (f == NULL)
        return false;
    while (!found && fgets(line, sizeof(line), f) != NULL)
        found = sscanf(line, "btime %llu", &btime) == 1;
    fclose(f);
    f = fopen("/proc/self/stat", "r");
    if (f == NULL)
        return false;
    after_name = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
    fclose(f);
    /* after ")": state (3), then fields 4 to 21, then starttime (22) */
    if (!found || after_name == NULL ||
        sscanf(after_name + 1,
               " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d "
               "%*d %*d %*d %*d %*d %llu",
               &ticks) != 1)
        return false;
    *seconds = (double)btime + (double)ticks / (double)sysconf(_SC_CLK_TCK);
    return true;
}

int process_metrics_append(struct buffer *out)
{
    long page = sysconf(_SC_PAGESIZE), fds = open_fds();
    unsigned long long size_pages, resident_pages;
    struct rusage ru;
    struct rlimit rl;
    double started;
    int err = 0;
    FILE *statm = fopen("/proc/self/statm", "r");

    if (getrusage(RUSAGE_SELF, &ru) == 0)
        err |= append_figure(
            out, "process_cpu_seconds_total", "counter",
            "Total user and system CPU time spent in seconds.",
            (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
    if (statm != NULL &&
        fscanf(statm, "%llu %llu", &size_pages, &resident_pages) == 2) {
        err |= append_figure(out, "process_virtual_memory_bytes", "gauge",
                             "Virtual memory size in bytes.",
                             (double)size_pages * (double)page);
        err |= append_figure(out, "process_resident_memory_bytes", "gauge",
                             "Resident memory size in bytes.",
                             (double)resident_pages * (double)page);
    }
    if (statm != NULL)
        fclose(statm);
    if (fds >= 0)
        err |= append_figure(out, "process_open_fds", "gauge",
                             "Number of open file descriptors.", (double)fds);
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        err |= append_figure(out, "process_max_fds", "gauge",
                             "Maximum number of open file descriptors.",
                             (double)rl.rlim_cur);
    if (start_time(&started))
        err |= append_figure(
            out, "process_start_time_seconds", "gauge",
            "Start time of the process since unix epoch in seconds.", started);
    return err ? -ENOMEM : 0;
}

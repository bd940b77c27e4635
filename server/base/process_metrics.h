/*
 * process_metrics.h - the process collector's standard figures
 * (process_*), appended to /metrics' Prometheus text.
 */
#ifndef RLOCKD_PROCESS_METRICS_H
#define RLOCKD_PROCESS_METRICS_H

#include "buffer.h"

/* Appends the figures that can be read now; 0 or -ENOMEM. */
int process_metrics_append(struct buffer *out);

#endif

/*
 * status_page.h - the status page served at GET / (status_page.html,
 * compiled in by scripts/embed.sh), and the Content-Security-Policy it is
 * served with.
 */
#ifndef RLOCKD_STATUS_PAGE_H
#define RLOCKD_STATUS_PAGE_H

#include <stddef.h>

extern const char status_page_html[];
extern const size_t status_page_html_len;

/* The page's Content-Security-Policy header value: it may run its own
 * script and styles and fetch from the endpoint that served it, nothing
 * else. Built once, on the first call. */
const char *status_page_policy(void);

#endif

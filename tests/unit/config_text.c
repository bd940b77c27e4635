/*
 * config_text.c - see config_text.h.
 */
#include "config_text.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int load_text(const char *text, struct config *cfg, char *err, size_t err_size)
{
    char path[] = "/tmp/rlockd-unit-XXXXXX";
    int fd = mkstemp(path), rc;

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    rc = config_load(cfg, path, err, err_size);
    unlink(path);
    return rc;
}

/*
 * fuzz_config.c - libFuzzer target for the settings' value parsers
 * (server/base/config_value.c): every key's setter, and the address-list
 * walker [redis] sentinels goes through, with operator text of any bytes.
 *
 * Input layout: byte 0 picks a key of the settings table, or past its
 * end a key of a [user NAME] section (acl_set: password_sha256,
 * commands, names, tls_subject); the rest, NUL-terminated, is the value.
 * A user row that acl_set accepts must leave a table acl_validate can
 * judge, and a tls_subject accepted must find its user again. Besides memory safety,
 * it checks that a value config_set accepts for [redis] sentinels walks
 * to its end with config_next_addr without an error, and that every
 * address it yields is one config_split_host_port accepts again. A broken
 * property ends in abort(), which libFuzzer reports with the input.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/acl.h"
#include "base/config.h"
#include "fuzz_check.h"

static size_t key_count(void)
{
    size_t n = 0;

    while (config_key_name(n) != NULL)
        n++;
    return n;
}

static void check_addr_list(const char *value)
{
    const char *list = value;
    char host[256], again[320];
    int port, port_again, n;

    while ((n = config_next_addr(&list, host, sizeof(host), &port)) > 0) {
        snprintf(again, sizeof(again), strchr(host, ':') ? "[%s]:%d" : "%s:%d",
                 host, port);
        CHECK(config_split_host_port(again, host, sizeof(host), &port_again) ==
              0);
        CHECK(port_again == port);
    }
    CHECK(n == 0);
}

static const char *const user_keys[] = {"password_sha256", "commands", "names",
                                        "tls_subject"};
#define USER_KEYS (sizeof(user_keys) / sizeof(user_keys[0]))

static void check_user_row(const char *key, const char *value)
{
    struct acl *acl = NULL;
    char err[256];
    int line;

    if (acl_set(&acl, "u", key, value, 1, true, err, sizeof(err)) == 0) {
        (void)acl_validate(acl, &line, err, sizeof(err));
        if (strcmp(key, "tls_subject") == 0)
            CHECK(acl_find_tls_subject(acl, value) == acl_find(acl, "u", 1));
    }
    acl_free(acl);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct config cfg;
    static size_t keys;
    char err[256], *value;
    size_t k;

    if (size == 0)
        return 0;
    if (keys == 0)
        keys = key_count();
    k = data[0] % (keys + USER_KEYS);
    value = malloc(size);
    if (value == NULL)
        return 0;
    memcpy(value, data + 1, size - 1);
    value[size - 1] = '\0';
    if (k >= keys) {
        check_user_row(user_keys[k - keys], value);
        free(value);
        return 0;
    }
    config_set_defaults(&cfg);
    if (config_set(&cfg, config_key_section(k), config_key_name(k), value, err,
                   sizeof(err)) == 0 &&
        strcmp(config_key_name(k), "sentinels") == 0)
        check_addr_list(cfg.sentinels);
    free(value);
    return 0;
}

/*
 * scripts.c - script sources, as Redisson (3.x) writes them.
 */
#include "engine/scripts.h"

#include <stdlib.h>
#include <string.h>

struct script scripts[SCRIPT_COUNT] = {
    [SCRIPT_ACQUIRE] =
        {"acquire",
         "if ((redis.call('exists', KEYS[1]) == 0) "
         "or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then "
         "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
         "redis.call('pexpire', KEYS[1], ARGV[1]); "
         "return nil; "
         "end; "
         "return redis.call('pttl', KEYS[1]);",
         ""},
    [SCRIPT_RELEASE] =
        {"release",
         "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then "
         "return nil; "
         "end; "
         "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); "
         "if (counter > 0) then "
         "redis.call('pexpire', KEYS[1], ARGV[2]); "
         "return 0; "
         "else "
         "redis.call('del', KEYS[1]); "
         "redis.call('publish', KEYS[2], ARGV[1]); "
         "return 1; "
         "end; "
         "return nil;",
         ""},
    [SCRIPT_FORCE_RELEASE] = {"force_release",
                              "if (redis.call('del', KEYS[1]) == 1) then "
                              "redis.call('publish', KEYS[2], ARGV[1]); "
                              "return 1 "
                              "else "
                              "return 0 "
                              "end",
                              ""},
    [SCRIPT_RELEASE_OWNER] =
        {"release_owner",
         "if (redis.call('hexists', KEYS[1], ARGV[2]) == 0) then "
         "return 0; "
         "end; "
         "redis.call('del', KEYS[1]); "
         "redis.call('publish', KEYS[2], ARGV[1]); "
         "return 1;",
         ""},
    [SCRIPT_RENEW_MANY] =
        {"renew_many",
         "local result = {}; "
         "for i = 1, #KEYS do "
         "if (redis.call('hexists', KEYS[i], ARGV[2 * i - 1]) == 1) then "
         "redis.call('pexpire', KEYS[i], ARGV[2 * i]); "
         "result[i] = 1; "
         "else "
         "result[i] = 0; "
         "end; "
         "end; "
         "return result;",
         ""},
};

/* Redisson: prefix + ":{" + name + "}", but a name that already holds a
 * '{' keeps its own hash tag: prefix + ":" + name. */
char *script_channel_name(const char *name, size_t len, size_t *out_len)
{
    static const char prefix[] = "redisson_lock__channel:";
    int tagged = memchr(name, '{', len) != NULL;
    size_t n = sizeof(prefix) - 1 + len + (tagged ? 0 : 2);
    char *channel = malloc(n + 1), *p = channel;

    if (channel == NULL)
        return NULL;
    memcpy(p, prefix, sizeof(prefix) - 1);
    p += sizeof(prefix) - 1;
    if (!tagged)
        *p++ = '{';
    memcpy(p, name, len);
    p += len;
    if (!tagged)
        *p++ = '}';
    *p = '\0';
    *out_len = n;
    return channel;
}

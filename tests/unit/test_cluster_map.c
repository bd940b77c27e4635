/*
 * test_cluster_map.c - reading CLUSTER NODES and MOVED/ASK as Redis 7.0
 * writes them: masters, replicas and their flags, slot ranges, migrating
 * markers, a node that does not know its own address, and lines that do
 * not parse (skipped whole: no slot of theirs is mapped).
 */
#include <check.h>
#include <string.h>

#include "backend/cluster_map.h"
#include "suites.h"

static struct cluster_node nodes[8];
static struct cluster_map map = {.nodes = nodes, .max = 8};

static void parse(const char *text)
{
    cluster_map_parse(&map, text, strlen(text), "10.0.0.9");
}

/* Captured from redis-server 7.0.15 (ids shortened). */
static const char three_masters[] =
    "b2 127.0.0.1:7402@17402 master - 0 1795501386384 2 connected "
    "5461-10922\n"
    "c3 127.0.0.1:7403@17403 master - 0 1795501386384 3 connected "
    "10923-16383\n"
    "a1 127.0.0.1:7401@17401 myself,master - 0 1795501386000 1 connected "
    "0-5460\n"
    "d4 127.0.0.1:7404@17404 slave a1 0 1795501386384 1 connected\n"
    "e5 127.0.0.1:7405@17405 slave,fail b2 0 1795501386384 2 "
    "disconnected\n";

START_TEST(masters_replicas_and_slots)
{
    parse(three_masters);
    ck_assert_uint_eq(map.count, 5);
    ck_assert_uint_eq(map.bad_lines, 0);
    ck_assert_str_eq(nodes[0].id, "b2");
    ck_assert_str_eq(nodes[0].addr.host, "127.0.0.1");
    ck_assert_int_eq(nodes[0].addr.port, 7402);
    ck_assert(nodes[0].master && !nodes[0].failed && nodes[0].connected);
    ck_assert_uint_eq(nodes[0].epoch, 2);
    ck_assert_uint_eq(nodes[0].slots, 5462);
    ck_assert_uint_eq(nodes[2].slots, 5461);
    ck_assert_uint_eq(map.owner[0], 2);
    ck_assert_uint_eq(map.owner[5460], 2);
    ck_assert_uint_eq(map.owner[5461], 0);
    ck_assert_uint_eq(map.owner[16383], 1);
    ck_assert(!nodes[3].master);
    ck_assert_str_eq(nodes[3].master_id, "a1");
    ck_assert(nodes[3].connected && !nodes[3].failed);
    ck_assert(nodes[4].failed && !nodes[4].connected);
}
END_TEST

START_TEST(migrating_markers_single_slots_and_hostnames)
{
    parse("a1 127.0.0.1:7401@17401,node-a myself,master - 0 0 4 connected "
          "0-99 [100->-b2] 200\n"
          "b2 :7402@17402 master,fail? - 0 0 5 connected 100-199 "
          "[300-<-a1]\n");
    ck_assert_uint_eq(map.count, 2);
    ck_assert_uint_eq(nodes[0].slots, 101);
    ck_assert_uint_eq(map.owner[200], 0);
    ck_assert_uint_eq(map.owner[100], 1);
    ck_assert_uint_eq(map.owner[201], CLUSTER_NO_NODE);
    ck_assert_str_eq(nodes[1].addr.host, "10.0.0.9"); /* the one asked */
    ck_assert(!nodes[1].connected && !nodes[1].failed);
}
END_TEST

START_TEST(a_line_that_does_not_parse_maps_nothing)
{
    parse("a1 127.0.0.1:7401@17401 master - 0 0 1 connected 0-99 50-40\n"
          "b2 127.0.0.1:7402@17402 master - 0 0 1 connected 100-16384\n"
          "c3 127.0.0.1:x@17403 master - 0 0 1 connected 200\n"
          "d4 127.0.0.1:7404@17404 slave a1 0 0 1 connected 300\n"
          "e5 127.0.0.1:7405@17405 master - 0 0 1\n"
          "f6 127.0.0.1:7406@17406 master - 0 0 1 connected 400\n");
    ck_assert_uint_eq(map.bad_lines, 5);
    ck_assert_uint_eq(map.count, 1);
    ck_assert_str_eq(nodes[0].id, "f6");
    for (unsigned s = 0; s < KEYSLOT_COUNT; s++)
        ck_assert_uint_eq(map.owner[s], s == 400 ? 0 : CLUSTER_NO_NODE);
}
END_TEST

START_TEST(redirections)
{
    struct redis_addr addr;
    unsigned slot;
    static const char *const bad[] = {
        "MOVED 3999",         "MOVED x 127.0.0.1:6381",
        "MOVED 16384 h:1",    "ASK 1 127.0.0.1:0",
        "ASK 1 :6381",        "MOVED 1 h:1 extra",
        "ASK 1 127.0.0.1:6x", ""};

    ck_assert(
        cluster_redirect_parse("MOVED 3999 127.0.0.1:6381", 25, &slot, &addr));
    ck_assert_uint_eq(slot, 3999);
    ck_assert_str_eq(addr.host, "127.0.0.1");
    ck_assert_int_eq(addr.port, 6381);
    ck_assert(cluster_redirect_parse("ASK 0 ::1:7000", 14, &slot, &addr));
    ck_assert_str_eq(addr.host, "::1");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(
            !cluster_redirect_parse(bad[i], strlen(bad[i]), &slot, &addr),
            "accepted \"%s\"", bad[i]);
}
END_TEST

Suite *cluster_map_suite(void)
{
    Suite *s = suite_create("cluster_map");
    TCase *tc = tcase_create("cluster_map");

    tcase_add_test(tc, masters_replicas_and_slots);
    tcase_add_test(tc, migrating_markers_single_slots_and_hostnames);
    tcase_add_test(tc, a_line_that_does_not_parse_maps_nothing);
    tcase_add_test(tc, redirections);
    suite_add_tcase(s, tc);
    return s;
}

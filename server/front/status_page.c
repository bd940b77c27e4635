/*
 * status_page.c - the Content-Security-Policy the status page is served
 * with, built from the page itself.
 *
 * The page shows lock names, client names and event texts, which any
 * client may choose. Its script writes them as text (textContent); the
 * policy is the second wall behind that: whatever a name holds, the page
 * can run no script but its own, load nothing, and send nothing but its
 * requests to this endpoint. Its one script and one style sheet are named
 * by their SHA-256 (CSP level 2's hash-source,
 * https://www.w3.org/TR/CSP2/#source-list-syntax), so the page stays one
 * document with nothing else to fetch, without 'unsafe-inline'.
 *
 * Never: a policy that allows inline code by anything but its hash.
 */
#include "front/status_page.h"

#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "base/digest.h"

/* "'sha256-" + base64 of 32 bytes (44) + "'" and NUL */
#define HASH_SOURCE_SIZE 64

/* The hash-source of the text between open and close in the page (its
 * first such element). A page without one is a build mistake: it gets
 * 'none', no allowance, rather than a loose one. */
static void hash_source(const char *open, const char *close, char *out)
{
    const char *end = status_page_html + status_page_html_len;
    const char *start =
        memmem(status_page_html, status_page_html_len, open, strlen(open));
    const char *stop;
    unsigned char digest[DIGEST_SIZE];
    unsigned char base64[4 * ((DIGEST_SIZE + 2) / 3) + 1];

    stop = start == NULL ? NULL
                         : memmem(start + strlen(open),
                                  (size_t)(end - start) - strlen(open), close,
                                  strlen(close));
    if (stop == NULL) {
        snprintf(out, HASH_SOURCE_SIZE, "'none'");
        return;
    }
    start += strlen(open);
    digest_sha256(start, (size_t)(stop - start), digest);
    EVP_EncodeBlock(base64, digest, DIGEST_SIZE);
    snprintf(out, HASH_SOURCE_SIZE, "'sha256-%s'", (const char *)base64);
}

const char *status_page_policy(void)
{
    static char policy[512];
    char script[HASH_SOURCE_SIZE], style[HASH_SOURCE_SIZE];

    if (policy[0] != '\0')
        return policy;
    hash_source("<script>", "</script>", script);
    hash_source("<style>", "</style>", style);
    snprintf(policy, sizeof(policy),
             "default-src 'none'; script-src %s; style-src %s; "
             "connect-src 'self'; base-uri 'none'; form-action 'none'; "
             "frame-ancestors 'none'",
             script, style);
    return policy;
}

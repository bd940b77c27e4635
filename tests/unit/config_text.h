/*
 * config_text.h - loading a config from text in a test, through the
 * real file loader (config_load), for the config and user tests.
 */
#ifndef RLOCKD_TEST_CONFIG_TEXT_H
#define RLOCKD_TEST_CONFIG_TEXT_H

#include <stddef.h>

#include "base/config.h"

/* Writes text to a temporary file, loads it and removes the file;
 * config_load's result. */
int load_text(const char *text, struct config *cfg, char *err, size_t err_size);

#endif

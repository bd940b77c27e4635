/*
 * connection.h - the commands a Redis client sends about its connection
 * rather than about locks: HELLO, CLIENT, SELECT, ECHO, COMMAND, TIME
 * and RESET, answered as Redis 7 answers them in RESP2, so that every
 * Redis client connects to rlockd with its default options.
 *
 * Their handlers are named by COMMAND_LIST's rows (command_<handler>).
 * Nothing here talks to the lock engine but through the client (RESET's
 * new session).
 */
#ifndef RLOCKD_CONNECTION_H
#define RLOCKD_CONNECTION_H

#include "base/config.h"
#include "front/commands.h"

void connection_init(const struct config *cfg);

command_handler command_hello;
command_handler command_client;
command_handler command_select;
command_handler command_echo;
command_handler command_command;
command_handler command_time;
command_handler command_reset;

#endif

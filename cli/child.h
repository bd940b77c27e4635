/*
 * child.h - COMMAND's process group: starting it, the terminal it may
 * read, and the guardian that ends it if rlock dies. Only child.c forks,
 * and only it touches the terminal's foreground process group.
 */
#ifndef RLOCK_CLI_CHILD_H
#define RLOCK_CLI_CHILD_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

struct child {
    pid_t pid;       /* COMMAND's pid, and its process group's id */
    pid_t guardian;  /* the process that outlives rlock if it dies */
    int guardian_fd; /* its pipe: closed without a word if rlock died */
};

/* What child_spawn() needs: argv and env for execvpe; mask, the signal
 * mask COMMAND starts with; kill_grace_ms, the guardian's wait between
 * SIGTERM and SIGKILL; name, the lock's, for the guardian's message. */
struct child_spec {
    char **argv;
    char **env;
    const sigset_t *mask;
    int kill_grace_ms;
    const char *name; /* what is held, for messages: "lock 'NAME'" */
};

/* The signals rlock must block before child_spawn(), besides the ones it
 * handles: SIGTTOU, so that it may hand the terminal on and take it back
 * from outside the foreground. */
void child_blocked_signals(sigset_t *set);
/* Starts COMMAND in a process group of its own, and its guardian;
 * COMMAND execs only once the guardian stands. 0, or an exit status
 * (reported). */
int child_spawn(const struct child_spec *spec, struct child *ch);
/* Sends sig to COMMAND's process group, then SIGCONT, as shells do, so
 * that a stopped COMMAND gets it too. */
void child_signal(const struct child *ch, int sig);
/* COMMAND was stopped by the terminal (SIGTSTP, SIGTTIN, SIGTTOU): rlock
 * takes the terminal back and stops its process group (SIGTSTP), so that
 * its shell sees the job stopped and gets the terminal back; SIGCONT
 * then comes when it is continued. Where no shell could continue rlock
 * (an orphaned group), COMMAND is continued at once instead. */
void child_stopped(struct child *ch);
/* rlock was continued (fg or bg): COMMAND gets the terminal if rlock has
 * it, and SIGCONT. */
void child_continued(struct child *ch);
/* After COMMAND was reaped and the lock released: rlock takes the
 * terminal back, dismisses the guardian and reaps it. */
void child_finish(struct child *ch);

#endif

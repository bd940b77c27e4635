/*
 * child.c - COMMAND's process group (child.h).
 *
 * The terminal: a COMMAND that reads the terminal from outside its
 * foreground process group is stopped (SIGTTIN). So when rlock runs in
 * the foreground of the terminal on its standard input, COMMAND's group
 * becomes the foreground, as a shell does for a job, and rlock takes it
 * back when COMMAND ends or stops. tcsetpgrp() from outside the
 * foreground raises SIGTTOU unless it is blocked: rlock blocks it.
 *
 * The guardian: rlock killed by SIGKILL can do nothing, and
 * PR_SET_PDEATHSIG reaches COMMAND only, not what COMMAND started (a
 * grandchild of `sh -c`). So a small process, forked before COMMAND may
 * exec, holds the read end of a pipe whose write end only rlock has.
 * When rlock is done it writes one byte and closes it: the guardian
 * exits. When rlock dies the kernel closes it with no byte: the guardian
 * sends SIGTERM to COMMAND's whole group, SIGKILL after the grace, as
 * rlock does when the lock is lost - which it is, since rlockd releases
 * it when rlock's connection closes.
 *
 * rlock has threads when it forks (librlock's heartbeat), so until they
 * exec or exit the children call only async-signal-safe functions (but
 * for COMMAND's message when exec fails, as rlock always did); the
 * guardian's message is written out before the fork.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "report.h"

#define GUARDIAN_POLL_MS 50

/* True when rlock's process group is the foreground of the terminal on
 * its standard input (false if that is no terminal). */
static bool in_foreground(void)
{
    pid_t foreground = tcgetpgrp(STDIN_FILENO);

    return foreground != -1 && foreground == getpgrp();
}

/* Makes pgrp the terminal's foreground; SIGTTOU is blocked. */
static void terminal_give(pid_t pgrp)
{
    tcsetpgrp(STDIN_FILENO, pgrp);
}

/* True when COMMAND's group is the terminal's foreground. */
static bool command_has_terminal(const struct child *ch)
{
    return tcgetpgrp(STDIN_FILENO) == ch->pid;
}

/* read() of one byte, through EINTR: 1, 0 at EOF, -1. */
static ssize_t read_byte(int fd, char *byte)
{
    ssize_t n;

    do
        n = read(fd, byte, 1);
    while (n < 0 && errno == EINTR);
    return n;
}

/* In COMMAND's process: never returns. go_fd: rlock's word that the
 * guardian stands; EOF means rlock died before, and nothing must run. */
static void exec_command(const struct child_spec *spec, bool foreground,
                         int go_fd)
{
    char go;
    int err;

    setpgid(0, 0);
    if (foreground)
        terminal_give(getpid());
    if (read_byte(go_fd, &go) != 1)
        _exit(EXIT_LOCK_LOST);
    sigprocmask(SIG_SETMASK, spec->mask, NULL);
    execvpe(spec->argv[0], spec->argv, spec->env);
    err = errno;
    fprintf(stderr, "rlock: %s: %s\n", spec->argv[0], strerror(err));
    _exit(err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000,
                          .tv_nsec = (long)(ms % 1000) * 1000000};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* In the guardian: never returns. It keeps only fd (as its stdin) and
 * stderr: an inherited socket of librlock's would keep rlock's session
 * open in rlockd after rlock died. Its own process group keeps it out of
 * reach of the terminal's Ctrl-C and Ctrl-Z; rlock's signal mask, which
 * it keeps, of a stray SIGTERM. */
static void guard(pid_t pgrp, int fd, int grace_ms, const char *message)
{
    char word;

    setpgid(0, 0);
    if (dup2(fd, STDIN_FILENO) < 0)
        _exit(EXIT_ERROR);
    close(STDOUT_FILENO);
    close_range(STDERR_FILENO + 1, ~0U, 0);
    if (read_byte(STDIN_FILENO, &word) == 1)
        _exit(0); /* rlock is done with COMMAND */
    if (write(STDERR_FILENO, message, strlen(message)) < 0) {
        /* no stderr: nobody left to tell */
    }
    kill(-pgrp, SIGTERM);
    kill(-pgrp, SIGCONT);
    for (int waited = 0; waited < grace_ms && kill(-pgrp, 0) == 0;
         waited += GUARDIAN_POLL_MS)
        sleep_ms(GUARDIAN_POLL_MS);
    kill(-pgrp, SIGKILL);
    _exit(0);
}

/* Forks the guardian of COMMAND's group; 0 or an exit status. */
static int spawn_guardian(const struct child_spec *spec, struct child *ch)
{
    char message[512];
    int fds[2];

    snprintf(message, sizeof message,
             "rlock: rlock (pid %d) died holding %s; sending SIGTERM "
             "to COMMAND's process group %d (SIGKILL after %d s)\n",
             (int)getpid(), spec->name, (int)ch->pid,
             spec->kill_grace_ms / 1000);
    if (pipe2(fds, O_CLOEXEC) != 0)
        return fail_sys("pipe");
    ch->guardian = fork();
    if (ch->guardian < 0) {
        close(fds[0]);
        close(fds[1]);
        return fail_sys("fork");
    }
    if (ch->guardian == 0)
        guard(ch->pid, fds[0], spec->kill_grace_ms, message);
    close(fds[0]);
    ch->guardian_fd = fds[1];
    return 0;
}

void child_blocked_signals(sigset_t *set)
{
    sigaddset(set, SIGTTOU);
}

int child_spawn(const struct child_spec *spec, struct child *ch)
{
    bool foreground = in_foreground();
    int go[2], status;

    if (pipe2(go, O_CLOEXEC) != 0)
        return fail_sys("pipe");
    *ch = (struct child){.pid = fork()};
    if (ch->pid < 0) {
        status = fail_sys("fork");
    } else if (ch->pid == 0) {
        close(go[1]);
        exec_command(spec, foreground, go[0]);
    } else {
        /* The child does it too: whichever runs first, the group exists
         * before the guardian or rlock can signal it. */
        setpgid(ch->pid, ch->pid);
        status = spawn_guardian(spec, ch);
    }
    close(go[0]);
    /* The word lets COMMAND exec; without it (closed) it exits. */
    if (status == 0 && write(go[1], "g", 1) != 1)
        status = fail_sys("starting COMMAND");
    close(go[1]);
    if (status != 0 && ch->pid > 0) {
        if (command_has_terminal(ch))
            terminal_give(getpgrp());
        waitpid(ch->pid, NULL, 0);
    }
    return status;
}

void child_signal(const struct child *ch, int sig)
{
    kill(-ch->pid, sig);
    kill(-ch->pid, SIGCONT);
}

/* rlock's parent, process group and session, from /proc (the kernel
 * gives no call for another process's). False if pid is gone. */
static bool process_ids(pid_t pid, pid_t *ppid, pid_t *pgrp, pid_t *sid)
{
    char path[64], stat[1024], *end;
    FILE *f;
    size_t n;

    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (f == NULL)
        return false;
    n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    end = strrchr(stat, ')'); /* the name before it may hold anything */
    return end != NULL &&
           sscanf(end + 1, " %*c %d %d %d", ppid, pgrp, sid) == 3;
}

/* Whether rlock's process group is orphaned (POSIX): no member has its
 * parent in another group of the same session, so no shell could
 * continue it, and the kernel drops a SIGTSTP sent to it. rlock's own
 * ancestors within its group are the members looked at: the shell, or
 * the script run by it, that started rlock. */
static bool group_orphaned(void)
{
    pid_t pid = getpid(), pgrp = getpgrp(), sid = getsid(0);
    pid_t ppid, parent_pgrp, parent_sid, unused;

    for (;;) {
        if (!process_ids(pid, &ppid, &unused, &unused) || ppid <= 0 ||
            !process_ids(ppid, &unused, &parent_pgrp, &parent_sid))
            return true;
        if (parent_pgrp != pgrp)
            return parent_sid != sid;
        pid = ppid;
    }
}

void child_stopped(struct child *ch)
{
    if (command_has_terminal(ch))
        terminal_give(getpgrp());
    if (group_orphaned()) {
        child_continued(ch); /* as the kernel would for the whole group */
        return;
    }
    /* rlock's whole group, as the terminal would have stopped it: a
     * script that runs rlock stops too, and its shell gets the terminal
     * back. (The guardian has a group of its own.) The stop may reach
     * rlock only after kill() returned; SIGCONT tells when it is over. */
    kill(0, SIGTSTP);
}

void child_continued(struct child *ch)
{
    if (in_foreground())
        terminal_give(ch->pid);
    kill(-ch->pid, SIGCONT);
}

void child_finish(struct child *ch)
{
    if (command_has_terminal(ch))
        terminal_give(getpgrp());
    if (write(ch->guardian_fd, "d", 1) != 1)
        fail_sys("dismissing the guardian"); /* it then kills the group */
    close(ch->guardian_fd);
    waitpid(ch->guardian, NULL, 0);
}

/* SPDX-License-Identifier: MIT */
/*
 * interpose_exec.c - the exec family as the program sees it while the
 * library is loaded: each waits for the checkpoint this process is writing.
 *
 * A checkpoint asked for by a signal, or by selfckpt_save() with
 * SELFCKPT_FORK=1, is written by a library thread after the program goes on.
 * An exec replaces the whole process, that thread with it: the image (or
 * the process's part of a job's set) would never be finished, and its
 * temporary file would stay behind. So an exec first waits for the write,
 * as an exit does (interpose_exit.c).
 *
 * glibc's execv(), execvp(), execl() and the rest reach execve() through
 * names of its own, which a definition of execve() does not interpose: each
 * entry point is defined here. A child of vfork() that executes a program
 * shares its parent's memory, and sc_checkpoint_wait_idle() returns at once
 * there: the parent's checkpoint is not the child's, and the child must not
 * touch the parent's locks. (posix_spawn() and system() execute through the
 * C library's own names: their children never come here.)
 *
 * Built into the shared library only, as interpose_exit.c.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/core_internal.h"
#include "selfckpt.h"

typedef int execve_fn(const char *, char *const[], char *const[]);
typedef int execv_fn(const char *, char *const[]);
typedef int fexecve_fn(int, char *const[], char *const[]);
typedef int execveat_fn(int, const char *, char *const[], char *const[], int);

static execve_fn *next_execve, *next_execvpe;
static execv_fn *next_execv, *next_execvp;
static fexecve_fn *next_fexecve;
static execveat_fn *next_execveat;

/* Early, while one thread runs: an exec may come from a signal handler, dlsym() may not. */
__attribute__((constructor)) static void resolve(void)
{
	next_execve = (execve_fn *)dlsym(RTLD_NEXT, "execve");
	next_execvpe = (execve_fn *)dlsym(RTLD_NEXT, "execvpe");
	next_execv = (execv_fn *)dlsym(RTLD_NEXT, "execv");
	next_execvp = (execv_fn *)dlsym(RTLD_NEXT, "execvp");
	next_fexecve = (fexecve_fn *)dlsym(RTLD_NEXT, "fexecve");
	next_execveat = (execveat_fn *)dlsym(RTLD_NEXT, "execveat"); /* glibc 2.34 and later */
}

/* Before any exec: the checkpoint under way is finished first. */
static void ready(const void *next)
{
	if (!next)
		resolve(); /* called before the constructors ran (another's constructor) */
	sc_checkpoint_wait_idle();
}

SELFCKPT_API int execve(const char *path, char *const argv[], char *const envp[])
{
	ready(next_execve);
	return next_execve(path, argv, envp);
}

SELFCKPT_API int execv(const char *path, char *const argv[])
{
	ready(next_execv);
	return next_execv(path, argv);
}

SELFCKPT_API int execvp(const char *file, char *const argv[])
{
	ready(next_execvp);
	return next_execvp(file, argv);
}

SELFCKPT_API int execvpe(const char *file, char *const argv[], char *const envp[])
{
	ready(next_execvpe);
	return next_execvpe(file, argv, envp);
}

SELFCKPT_API int fexecve(int fd, char *const argv[], char *const envp[])
{
	ready(next_fexecve);
	return next_fexecve(fd, argv, envp);
}

SELFCKPT_API int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
			  int flags)
{
	ready(next_execveat);
	if (!next_execveat) /* a C library without the wrapper: the call itself */
		return (int)syscall(SYS_execveat, dirfd, path, argv, envp, flags);
	return next_execveat(dirfd, path, argv, envp, flags);
}

/*
 * The list forms: their arguments gathered into a vector on the stack, as
 * the C library does, then the vector form above. The list ends with a null
 * pointer, followed by the environment for execle().
 */

/* How many arguments come before the null pointer (@ap itself is not moved). */
static size_t list_length(va_list *ap)
{
	va_list copy;
	size_t n = 0;

	va_copy(copy, *ap);
	while (va_arg(copy, char *))
		n++;
	va_end(copy);
	return n;
}

/* @argv: @arg, the @n arguments of @ap, and the null pointer after them. */
static void list_gather(char **argv, const char *arg, size_t n, va_list *ap)
{
	argv[0] = (char *)arg;
	for (size_t i = 1; i <= n + 1; i++)
		argv[i] = va_arg(*ap, char *);
}

/* How a list form ends: in execv(), in execvp() (a search of PATH), or in execve(). */
enum list_form { LIST_PATH, LIST_SEARCH, LIST_ENVIRONMENT };

/* @arg and the arguments of @ap as a vector, which lives until the exec returns. */
static int exec_list(enum list_form form, const char *name, const char *arg, va_list *ap)
{
	size_t n = list_length(ap);
	char *argv[n + 2];

	list_gather(argv, arg, n, ap);
	if (form == LIST_ENVIRONMENT)
		return execve(name, argv, va_arg(*ap, char **));
	return form == LIST_SEARCH ? execvp(name, argv) : execv(name, argv);
}

SELFCKPT_API int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	int res;

	va_start(ap, arg);
	res = exec_list(LIST_PATH, path, arg, &ap);
	va_end(ap);
	return res;
}

SELFCKPT_API int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	int res;

	va_start(ap, arg);
	res = exec_list(LIST_SEARCH, file, arg, &ap);
	va_end(ap);
	return res;
}

SELFCKPT_API int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	int res;

	va_start(ap, arg);
	res = exec_list(LIST_ENVIRONMENT, path, arg, &ap);
	va_end(ap);
	return res;
}

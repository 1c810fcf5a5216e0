/* SPDX-License-Identifier: MIT */
/*
 * run_held.c - selfckpt-run's part of taking a trigger signal sent early.
 *
 * Between selfckpt-run's exec of the program and the library's constructor,
 * which installs the trigger handlers, the dynamic loader maps and relocates
 * every library: milliseconds, more on a loaded machine. A trigger signal
 * sent then would take its default action and end the program. Blocked
 * across the exec, it stays pending; the library unblocks what this tool
 * blocked once its handlers are in place (core/trigger.c), and the
 * checkpoint is taken. A static program never loads the library and would
 * keep the signals blocked for good, so it is left alone.
 */
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/run_held.h"
#include "core/sc_core.h"
#include "core/sc_trigger.h"

/* @prog as execvp() finds it, into @path (PATH_MAX bytes); false when none is. */
static bool find_program(const char *prog, char *path)
{
	if (strchr(prog, '/'))
		return snprintf(path, PATH_MAX, "%s", prog) < PATH_MAX;
	return sc_find_on_path(prog, path, PATH_MAX);
}

/* Does @fd hold a 64-bit ELF program with an interpreter (dynamically linked)? */
static bool elf_has_interpreter(int fd)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;

	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(ph))
		return false;
	for (unsigned i = 0; i < eh.e_phnum; i++)
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) !=
		    (ssize_t)sizeof(ph))
			return false;
		else if (ph.p_type == PT_INTERP)
			return true;
	return false;
}

/*
 * Will the library load in @prog? A dynamic ELF program, or a script (its
 * interpreter, a shell or Python, is one in practice); anything else is not
 * held, as before.
 */
static bool loads_library(const char *prog)
{
	char path[PATH_MAX], magic[2];
	bool dynamic;
	int fd;

	if (!find_program(prog, path) || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	dynamic = (pread(fd, magic, 2, 0) == 2 && magic[0] == '#' && magic[1] == '!') ||
		  elf_has_interpreter(fd);
	close(fd);
	return dynamic;
}

void sc_run_hold_triggers(const char *prog, int sig_soon, int sig_now)
{
	const int sigs[] = { sig_soon, sig_now };
	char list[32] = "";
	sigset_t now, hold;

	if (!loads_library(prog) || sigprocmask(SIG_BLOCK, NULL, &now) < 0)
		return;
	sigemptyset(&hold);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (!sigismember(&now, sigs[i])) { /* one the program gets blocked stays its own */
			sigaddset(&hold, sigs[i]);
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%d",
				 *list ? "," : "", sigs[i]);
		}
	if (*list && setenv(SC_ENV_HELD_SIGNALS, list, 1) == 0)
		sigprocmask(SIG_BLOCK, &hold, NULL);
}

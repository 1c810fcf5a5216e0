/* SPDX-License-Identifier: MIT */
/*
 * signals - signal actions, the blocked mask, an alternate stack and pending
 * signals across a checkpoint.
 *
 * Before point 1: handlers with SA_SIGINFO, SA_RESTART, SA_NODEFER,
 * SA_ONSTACK and their masks, an ignored signal, an alternate stack, a set of
 * blocked signals, and signals raised while blocked: SIGUSR2 to the thread
 * (raise), SIGWINCH to the process (kill), two queued SIGRTMIN+3 with values.
 * After it: the actions, the mask and the pending set are as they were; once
 * unblocked, every pending signal is delivered, the real-time ones in order
 * with their values.
 */
#include <signal.h>

#include "prog.h"

#define RT (SIGRTMIN + 3)

static volatile sig_atomic_t count[65];
static volatile int rt_values[8], n_rt;
static volatile int on_altstack;
static char altstack[64 * 1024];

static void h_info(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	count[sig]++;
	if (sig == RT && n_rt < 8)
		rt_values[n_rt++] = si->si_value.sival_int;
}

static void h_plain(int sig)
{
	char here;

	count[sig]++;
	if (sig == SIGALRM)
		on_altstack = &here >= altstack && &here < altstack + sizeof(altstack);
}

static void set(int sig, void *fn, int info, int flags, int mask_sig)
{
	struct sigaction sa = { 0 };

	if (info)
		sa.sa_sigaction = fn;
	else
		sa.sa_handler = fn;
	sa.sa_flags = flags | (info ? SA_SIGINFO : 0);
	sigemptyset(&sa.sa_mask);
	if (mask_sig)
		sigaddset(&sa.sa_mask, mask_sig);
	if (sigaction(sig, &sa, NULL))
		prog_die("sigaction(%d): %s", sig, strerror(errno));
}

static const char *fn_name(void *fn)
{
	if (fn == (void *)h_info)
		return "h_info";
	if (fn == (void *)h_plain)
		return "h_plain";
	if (fn == (void *)SIG_IGN)
		return "SIG_IGN";
	if (fn == (void *)SIG_DFL)
		return "SIG_DFL";
	return "unknown";
}

static void print_action(const char *name, int sig)
{
	struct sigaction sa;
	int flags;

	sigaction(sig, NULL, &sa);
	flags = sa.sa_flags & (SA_SIGINFO | SA_RESTART | SA_NODEFER | SA_ONSTACK | SA_RESETHAND);
	printf("action %s: %s flags 0x%x mask", name, fn_name((void *)sa.sa_handler), flags);
	for (int s = 1; s < 65; s++)
		if (sigismember(&sa.sa_mask, s) == 1)
			printf(" %d", s);
	printf("\n");
}

static void print_set(const char *what, const sigset_t *set)
{
	printf("%s:", what);
	for (int s = 1; s < 65; s++)
		if (sigismember(set, s) == 1)
			printf(" %d", s);
	printf("\n");
}

static void print_all(void)
{
	static const struct {
		const char *name;
		int sig;
	} sigs[] = { { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "WINCH", SIGWINCH },
		     { "ALRM", SIGALRM },  { "PIPE", SIGPIPE }, { "RT3", 0 },
		     { "HUP", SIGHUP } };
	sigset_t s;

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		print_action(sigs[i].name, sigs[i].sig ? sigs[i].sig : RT);
	sigprocmask(SIG_BLOCK, NULL, &s);
	print_set("blocked", &s);
	sigpending(&s);
	print_set("pending", &s);
}

int main(int argc, char **argv)
{
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) }, now;
	union sigval v;
	struct prog p;
	sigset_t block;

	prog_init(&p, argc, argv);
	set(SIGUSR1, h_info, 1, SA_RESTART, SIGUSR2);
	set(SIGUSR2, h_plain, 0, SA_NODEFER, 0);
	set(SIGWINCH, h_plain, 0, SA_RESTART, SIGUSR1);
	set(SIGALRM, h_plain, 0, SA_ONSTACK, 0);
	set(RT, h_info, 1, 0, 0);
	signal(SIGPIPE, SIG_IGN);
	if (sigaltstack(&ss, NULL))
		prog_die("sigaltstack: %s", strerror(errno));
	sigemptyset(&block);
	sigaddset(&block, SIGUSR2);
	sigaddset(&block, SIGWINCH);
	sigaddset(&block, RT);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, NULL);
	raise(SIGUSR2);
	kill(getpid(), SIGWINCH);
	v.sival_int = 42;
	sigqueue(getpid(), RT, v);
	v.sival_int = 43;
	sigqueue(getpid(), RT, v);
	print_all();

	prog_checkpoint(&p, 1);

	print_all();
	sigaltstack(NULL, &now);
	prog_check("alternate stack kept", now.ss_sp == altstack && now.ss_size == sizeof(altstack),
		   "%p size %zu", now.ss_sp, now.ss_size);
	sigdelset(&block, SIGHUP);
	sigprocmask(SIG_UNBLOCK, &block, NULL);
	printf("delivered: USR2 %d WINCH %d RT3 %d, values", (int)count[SIGUSR2],
	       (int)count[SIGWINCH], (int)count[RT]);
	for (int i = 0; i < n_rt; i++)
		printf(" %d", rt_values[i]);
	printf("\n");
	raise(SIGUSR1);
	raise(SIGALRM);
	prog_check("SIGUSR1 handled", count[SIGUSR1] == 1, "count %d", (int)count[SIGUSR1]);
	prog_check("SIGALRM on the alternate stack", count[SIGALRM] == 1 && on_altstack,
		   "count %d, on the alternate stack %d", (int)count[SIGALRM], on_altstack);
	prog_check("SIGPIPE ignored", raise(SIGPIPE) == 0, "raise failed");

	prog_checkpoint(&p, 2);

	raise(SIGUSR2);
	prog_check("SIGUSR2 handled again", count[SIGUSR2] == 2, "count %d", (int)count[SIGUSR2]);
	print_all();
	return 0;
}

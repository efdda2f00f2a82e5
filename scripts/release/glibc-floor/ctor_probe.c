/*
 * ctor_probe: a check of the start file (start_<arch>.S, init.c), used by
 * scripts/release/check.sh. Built as gpu-bootstrap's release is (the same
 * crt1.o, glibc_floor.h and libraries), it prints how often its constructor
 * ran and what it was given, and calls dlopen/dlerror through their old
 * versions. On every glibc, old (which runs only the init function
 * __libc_start_main is given) and new (which calls that init function
 * instead of running the constructors itself), the constructor must run
 * exactly once, before main, with main's argc.
 */
#include <dlfcn.h>
#include <stdio.h>

static int ctor_calls;
static int ctor_argc = -1;

__attribute__((constructor)) static void probe_ctor(int argc, char **argv, char **envp)
{
	(void)argv;
	(void)envp;
	ctor_calls++;
	ctor_argc = argc;
}

int main(int argc, char **argv)
{
	(void)argv;
	void *lib = dlopen("libgpu-bootstrap-probe-absent.so.1", RTLD_NOW);
	printf("constructor calls=%d argc=%d main argc=%d dlopen=%s\n", ctor_calls, ctor_argc, argc,
	       lib == NULL && dlerror() != NULL ? "fails with dlerror" : "unexpected");
	return ctor_calls == 1 && ctor_argc == argc ? 0 : 1;
}

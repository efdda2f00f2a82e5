/*
 * gpu_bootstrap_init: the init function start_<arch>.S hands to
 * __libc_start_main. It does what glibc's __libc_csu_init did for a
 * dynamically linked program before glibc 2.34 (glibc csu/elf-init.c, removed
 * in 2.34): call _init (crti.o's DT_INIT) and then every function in the
 * program's .init_array with argc, argv and envp. The .preinit_array is not
 * its business: for a dynamically linked program the dynamic linker runs it.
 *
 * The __init_array_* symbols are defined by ld's default linker script
 * (PROVIDE_HIDDEN around .init_array).
 */
#include <stddef.h>

typedef void (*init_fn)(int, char **, char **);

extern init_fn __init_array_start[] __attribute__((visibility("hidden")));
extern init_fn __init_array_end[] __attribute__((visibility("hidden")));
extern void _init(void);

void gpu_bootstrap_init(int argc, char **argv, char **envp) __attribute__((visibility("hidden")));

void gpu_bootstrap_init(int argc, char **argv, char **envp)
{
	_init();
	size_t n = (size_t)(__init_array_end - __init_array_start);
	for (size_t i = 0; i < n; i++)
		(*__init_array_start[i])(argc, argv, envp);
}

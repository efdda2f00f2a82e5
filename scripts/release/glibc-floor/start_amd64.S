/*
 * _start for gpu-bootstrap on x86_64, replacing the system's crt1.o (gcc
 * finds this one first through -B, see build-crt1.sh).
 *
 * glibc >= 2.34's crt1.o calls __libc_start_main@GLIBC_2.34 with no init
 * function, because that libc runs the program's constructors itself. A
 * libc older than 2.34 has no such version (the binary does not start:
 * "version `GLIBC_2.34' not found"), and its __libc_start_main runs only the
 * init function it is given. So this _start calls the old version
 * (GLIBC_2.2.5, which every libc.so.6 on x86_64 still defines) and passes
 * gpu_bootstrap_init (init.c), which runs the constructors as the old
 * crt1.o's __libc_csu_init did. A libc >= 2.34 given an init function calls
 * it instead of running the constructors itself (glibc csu/libc-start.c,
 * "This is a legacy program which supports calling init"), so they run once
 * either way.
 *
 * The calling sequence is the x86-64 psABI's process entry (System V ABI
 * AMD64 supplement, "Process Initialization": %rsp points at argc, argv
 * follows, %rdx holds the function to register with atexit) as glibc's
 * sysdeps/x86_64/start.S uses it:
 *   __libc_start_main(main, argc, argv, init, fini, rtld_fini, stack_end)
 * Written position-independent (GOT loads), so it links into PIE and non-PIE.
 */
	.symver __libc_start_main,__libc_start_main@GLIBC_2.2.5

	.text
	.globl	_start
	.type	_start,@function
_start:
	.cfi_startproc
	.cfi_undefined rip
	xorl	%ebp, %ebp			/* outermost frame */
	movq	%rdx, %r9			/* rtld_fini */
	popq	%rsi				/* argc */
	movq	%rsp, %rdx			/* argv */
	andq	$-16, %rsp			/* the ABI's 16-byte alignment */
	pushq	%rax				/* padding, keeps it */
	pushq	%rsp			/* stack_end */
	xorl	%r8d, %r8d			/* fini: none; the dynamic linker's _dl_fini runs destructors */
	leaq	gpu_bootstrap_init(%rip), %rcx	/* init */
	movq	main@GOTPCREL(%rip), %rdi	/* main */
	call	*__libc_start_main@GOTPCREL(%rip)
	hlt					/* __libc_start_main does not return */
	.cfi_endproc
	.size	_start, .-_start

/* glibc's crt1.o defines it (csu/init.c): libio tells the program's stdio ABI by it. */
	.section .rodata
	.globl	_IO_stdin_used
	.type	_IO_stdin_used,@object
	.p2align 2
_IO_stdin_used:
	.long	0x20001
	.size	_IO_stdin_used, 4

	.section .note.GNU-stack,"",@progbits

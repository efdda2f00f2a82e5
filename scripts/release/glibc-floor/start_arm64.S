/*
 * _start for gpu-bootstrap on aarch64, replacing the system's crt1.o (gcc
 * finds this one first through -B, see build-crt1.sh). Why: see
 * start_amd64.S; here the old version is GLIBC_2.17, aarch64's first.
 *
 * The entry state is the one glibc's sysdeps/aarch64/start.S reads: x0 holds
 * rtld_fini, sp points at argc with argv after it. Arguments go in x0..x6:
 *   __libc_start_main(main, argc, argv, init, fini, rtld_fini, stack_end)
 * Position-independent (GOT load of main, adrp for init).
 */
	.symver __libc_start_main,__libc_start_main@GLIBC_2.17

	.text
	.globl	_start
	.type	_start,%function
_start:
	.cfi_startproc
	.cfi_undefined x30
	mov	x29, #0				/* outermost frame: zero FP and LR */
	mov	x30, #0
	mov	x5, x0				/* rtld_fini */
	ldr	x1, [sp]			/* argc */
	add	x2, sp, #8			/* argv */
	mov	x6, sp				/* stack_end */
	adrp	x0, :got:main			/* main */
	ldr	x0, [x0, #:got_lo12:main]
	adrp	x3, gpu_bootstrap_init		/* init */
	add	x3, x3, #:lo12:gpu_bootstrap_init
	mov	x4, #0				/* fini: none; _dl_fini runs destructors */
	bl	__libc_start_main
	bl	abort				/* __libc_start_main does not return */
	.cfi_endproc
	.size	_start, .-_start

/* glibc's crt1.o defines it (csu/init.c): libio tells the program's stdio ABI by it. */
	.section .rodata
	.globl	_IO_stdin_used
	.type	_IO_stdin_used,%object
	.p2align 2
_IO_stdin_used:
	.word	0x20001
	.size	_IO_stdin_used, 4

	.section .note.GNU-stack,"",%progbits

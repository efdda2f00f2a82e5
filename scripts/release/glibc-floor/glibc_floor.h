/*
 * glibc_floor.h: binds gpu-bootstrap's references to glibc symbols to the
 * oldest version glibc defines them at, so a binary linked on Debian 12
 * (glibc 2.36) runs on glibc 2.28 (RHEL 8 / Rocky 8), 2.31 (Debian 11,
 * Ubuntu 20.04) and later.
 *
 * Every cgo compilation unit gets it through CGO_CFLAGS="-include ..."
 * (.goreleaser.yml's gpu-bootstrap builds). glibc keeps each symbol at every
 * version it was ever defined at; a plain link picks the newest (the "@@"
 * default). In glibc 2.34 libdl and libpthread moved into libc.so.6, and
 * their symbols got a new default version GLIBC_2.34 (pthread_sigmask and
 * pthread_getattr_np: GLIBC_2.32), which an older libc.so.6 lacks.
 * ".symver name,name@VERSION" makes the assembler emit a reference to that
 * exact version instead (GNU as manual, "Directives: .symver",
 * https://sourceware.org/binutils/docs/as/Symver.html). The old versions are
 * compat symbols in glibc >= 2.34, so the binary keeps running there too.
 * The versions below are those of glibc's own Versions files
 * (glibc dlfcn/Versions, nptl/Versions) as `objdump -T libc.so.6` of glibc
 * 2.36 lists them: GLIBC_2.2.5 is x86_64's base version, GLIBC_2.17 aarch64's.
 *
 * On glibc < 2.34 these symbols live in libdl.so.2 and libpthread.so.0, so
 * the link also names those libraries (-l:libdl.so.2 -l:libpthread.so.0 with
 * --no-as-needed): glibc >= 2.34 still ships them as empty stubs, and an old
 * dynamic linker then finds the symbols where they are.
 *
 * The one reference this header cannot reach is __libc_start_main in the
 * system's crt1.o: see start_<arch>.S. scripts/release/check.sh fails the
 * release when `objdump -T` shows any version above GLIBC_2.28, which is how
 * a new symbol that needs a line here is found.
 *
 * Why this and not another way: linking against an old glibc (a build
 * container or sysroot of RHEL 8 or older) needs such a glibc for amd64 and
 * arm64, and none is reachable from the machines this is built on (Debian's
 * archive serves bookworm and bullseye, whose 2.31 is above RHEL 8's 2.28);
 * zig cc, which carries old glibc stubs, is not reachable either; and Go's
 * internal linker does not resolve versioned references ("relocation target
 * dlopen@GLIBC_2.2.5 not defined"), so the build links externally.
 *
 * Guarded against assembler sources: runtime/cgo has .S files, and CGO_CFLAGS
 * reach them too.
 */
#ifndef GPU_BOOTSTRAP_GLIBC_FLOOR_H
#define GPU_BOOTSTRAP_GLIBC_FLOOR_H
#ifndef __ASSEMBLER__

#if defined(__x86_64__)
#define GLIBC_FLOOR_BASE "GLIBC_2.2.5"
#define GLIBC_FLOOR_DLINFO "GLIBC_2.3.3"
#elif defined(__aarch64__)
#define GLIBC_FLOOR_BASE "GLIBC_2.17"
#define GLIBC_FLOOR_DLINFO "GLIBC_2.17"
#else
#error "glibc_floor.h: no glibc floor versions for this architecture (amd64 and arm64 only)"
#endif

#define GLIBC_FLOOR_SYMVER(sym, ver) __asm__(".symver " #sym "," #sym "@" ver)

/* libdl, merged into libc.so.6 at GLIBC_2.34. */
GLIBC_FLOOR_SYMVER(dlopen, GLIBC_FLOOR_BASE);
GLIBC_FLOOR_SYMVER(dlsym, GLIBC_FLOOR_BASE);
GLIBC_FLOOR_SYMVER(dlclose, GLIBC_FLOOR_BASE);
GLIBC_FLOOR_SYMVER(dlerror, GLIBC_FLOOR_BASE);
GLIBC_FLOOR_SYMVER(dlinfo, GLIBC_FLOOR_DLINFO);

/* libpthread, merged into libc.so.6 at GLIBC_2.34 (runtime/cgo uses these). */
GLIBC_FLOOR_SYMVER(pthread_create, GLIBC_FLOOR_BASE);
GLIBC_FLOOR_SYMVER(pthread_key_create, GLIBC_FLOOR_BASE);
GLIBC_FLOOR_SYMVER(pthread_setspecific, GLIBC_FLOOR_BASE);
GLIBC_FLOOR_SYMVER(pthread_attr_getstack, GLIBC_FLOOR_BASE);
GLIBC_FLOOR_SYMVER(pthread_attr_getstacksize, GLIBC_FLOOR_BASE);
GLIBC_FLOOR_SYMVER(pthread_detach, GLIBC_FLOOR_BASE);
/* Given a new default version at GLIBC_2.32. */
GLIBC_FLOOR_SYMVER(pthread_sigmask, GLIBC_FLOOR_BASE);
GLIBC_FLOOR_SYMVER(pthread_getattr_np, GLIBC_FLOOR_BASE);

#endif /* __ASSEMBLER__ */
#endif /* GPU_BOOTSTRAP_GLIBC_FLOOR_H */

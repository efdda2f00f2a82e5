// Package debroot makes Debian-family root filesystems with debootstrap,
// once, caches them as tarballs, and hands out fresh copies, so tests run
// gpu-bootstrap against real apt and dpkg in a real Debian root.
//
// A root is built from the machine's Debian mirror the first time a Spec
// is asked for: Spec.Mirror (gpu-testbed rootfs --mirror), else
// $GPU_TESTBED_DEBIAN_MIRROR, else the mirror the machine's own apt sources
// (/etc/apt/sources.list, sources.list.d/*.list and deb822 *.sources,
// and the mirror+file: lists Debian's cloud images use) name for Debian's
// main archive, for the Spec's suite and architecture; mirror.go says
// which entry that is. A debootstrap failure names that mirror, where it
// came from and the override (a partial mirror fails there). debootstrap
// checks the suite's Release signature against Debian's keyring whatever
// the mirror, so the mirror is not part of the cache key. The root is then
// kept as a tarball under <testbed.CacheRoot()>/roots; building is guarded
// by a file lock and the tarball appears by an atomic rename, so two test processes never build the
// same root twice or see a half-written one. After debootstrap the root's
// apt sources are emptied and its package lists removed: a test's
// `apt-get update` sees only the repositories the test adds, and nothing at
// test time needs a Debian mirror.
//
// Foreign (arm64) roots are made with `debootstrap --foreign` and a second
// stage run under qemu-user through the kernel's binfmt_misc (see binfmt.go).
//
// What it does not do: mount /proc, /sys or /dev into a copy (a test that
// needs them mounts them itself), keep a copy's changes, or reach any
// archive but a mirror of Debian's.
package debroot

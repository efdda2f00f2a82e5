// Package debroot makes Debian-family root filesystems with debootstrap,
// once, caches them as tarballs, and hands out fresh copies, so tests run
// gpu-bootstrap against real apt and dpkg in a real Debian root.
//
// A root is built from Debian's archive (http://deb.debian.org/debian) the
// first time a Spec is asked for, then kept as a tarball under
// <testbed.CacheRoot()>/roots; building is guarded by a file lock and the
// tarball appears by an atomic rename, so two test processes never build the
// same root twice or see a half-written one. After debootstrap the root's
// apt sources are emptied and its package lists removed: a test's
// `apt-get update` sees only the repositories the test adds, and nothing at
// test time needs Debian's archive.
//
// Foreign (arm64) roots are made with `debootstrap --foreign` and a second
// stage run under qemu-user through the kernel's binfmt_misc (see binfmt.go).
//
// What it does not do: mount /proc, /sys or /dev into a copy (a test that
// needs them mounts them itself), keep a copy's changes, or reach any
// archive but Debian's.
package debroot

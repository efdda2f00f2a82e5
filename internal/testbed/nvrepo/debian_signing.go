package nvrepo

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// SigningKey is an OpenPGP key made with the host's gpg, as NVIDIA signs
// its repositories' Release files. Each signing works in a fresh
// GNUPGHOME with the key imported and stops that home's gpg-agent after,
// so no agent outlives an operation and concurrent signings share nothing.
type SigningKey struct {
	Name        string
	fingerprint string
	secret      []byte // armored secret key, imported for each signing
	public      []byte // binary public key: what /usr/share/keyrings/*.gpg holds
	armored     []byte // armored public key: what a gpgkey URL serves
}

var (
	defaultKeyOnce sync.Once
	defaultKey     *SigningKey
	defaultKeyErr  error
)

// processKey is the key the apt models sign with unless told otherwise,
// made once per process.
func processKey() (*SigningKey, error) {
	defaultKeyOnce.Do(func() {
		defaultKey, defaultKeyErr = NewSigningKey("gpu-testbed model of NVIDIA's repository signing key <cudatools@nvidia.com>")
	})
	return defaultKey, defaultKeyErr
}

// NewSigningKey makes a new ed25519 signing key with the given user ID
// (NVIDIA's keys are RSA; the kind does not matter to apt's checks, and
// ed25519 is made instantly).
func NewSigningKey(userID string) (*SigningKey, error) {
	home, cleanup, err := gpgHome()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if _, err := runGPG(home, nil, "--quick-generate-key", userID, "ed25519", "sign", "never"); err != nil {
		return nil, err
	}
	listing, err := runGPG(home, nil, "--with-colons", "--list-secret-keys")
	if err != nil {
		return nil, err
	}
	k := &SigningKey{Name: userID}
	for _, line := range strings.Split(string(listing), "\n") {
		if fields := strings.Split(line, ":"); fields[0] == "fpr" && len(fields) > 9 {
			k.fingerprint = fields[9]
			break
		}
	}
	if k.fingerprint == "" {
		return nil, fmt.Errorf("nvrepo: no fingerprint in gpg's listing of the new key:\n%s", listing)
	}
	if k.secret, err = runGPG(home, nil, "--armor", "--export-secret-keys", k.fingerprint); err != nil {
		return nil, err
	}
	if k.public, err = runGPG(home, nil, "--export", k.fingerprint); err != nil {
		return nil, err
	}
	if k.armored, err = runGPG(home, nil, "--armor", "--export", k.fingerprint); err != nil {
		return nil, err
	}
	return k, nil
}

// Fingerprint is the key's full fingerprint.
func (k *SigningKey) Fingerprint() string { return k.fingerprint }

// PublicKeyring is the binary public key, the format of
// /usr/share/keyrings/cuda-archive-keyring.gpg (apt's signed-by= accepts it).
func (k *SigningKey) PublicKeyring() []byte { return bytes.Clone(k.public) }

// ArmoredPublicKey is the ASCII-armored public key, as served at
// https://nvidia.github.io/libnvidia-container/gpgkey.
func (k *SigningKey) ArmoredPublicKey() []byte { return bytes.Clone(k.armored) }

// signRelease writes InRelease (clearsigned) and Release.gpg (detached,
// armored) next to the Release file in dir.
func (k *SigningKey) signRelease(dir string) error {
	home, cleanup, err := gpgHome()
	if err != nil {
		return err
	}
	defer cleanup()
	if _, err := runGPG(home, k.secret, "--import"); err != nil {
		return err
	}
	release := filepath.Join(dir, "Release")
	for _, out := range []struct{ name, mode string }{{"InRelease", "--clearsign"}, {"Release.gpg", "--detach-sign"}} {
		target := filepath.Join(dir, out.name)
		_ = os.Remove(target)
		if _, err := runGPG(home, nil, "--digest-algo", "SHA512", "--local-user", k.fingerprint, "--armor", out.mode, "--output", target, release); err != nil {
			return err
		}
	}
	return nil
}

// gpgHome makes a throwaway GNUPGHOME; cleanup stops its agent and
// removes it. It lives under /tmp: gpg-agent's socket path must be short.
func gpgHome() (string, func(), error) {
	home, err := os.MkdirTemp("", "nvrepo-gpg-")
	if err != nil {
		return "", nil, fmt.Errorf("nvrepo: creating a GNUPGHOME: %w", err)
	}
	return home, func() {
		_ = exec.Command("gpgconf", "--homedir", home, "--kill", "all").Run()
		_ = os.RemoveAll(home)
	}, nil
}

// runGPG runs the host's gpg in batch mode without a passphrase.
func runGPG(home string, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.Command("gpg", append([]string{"--homedir", home, "--batch", "--no-tty", "--pinentry-mode", "loopback", "--passphrase", ""}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("nvrepo: gpg %s: %w: %s (install gnupg: apt-get install gnupg)", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

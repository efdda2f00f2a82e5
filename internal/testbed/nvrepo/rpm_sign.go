package nvrepo

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// This file signs model rpms the way NVIDIA signs its own: an OpenPGP
// signature in each package's header, checked by dnf when the .repo file
// says gpgcheck=1 against the key its gpgkey= URL names (for the CUDA
// repositories D42D0685.pub, beside the packages; NVIDIA/cuda-repo-management
// repo-rpm.sh, publicKey="D42D0685"). The model's key is made with the
// host's gpg, once per cached repository; it is not NVIDIA's.

// rpmKeyFileName is the public key's name in a CUDA repository directory.
const rpmKeyFileName = "D42D0685.pub"

// rpmKeyUID names the model's signing key.
const rpmKeyUID = "gpu-bootstrap test model of NVIDIA's CUDA repository signing key"

// rpmSigner signs with the key in a gpg home directory.
type rpmSigner struct {
	home string
}

// newRPMSigner makes a signing key in home (created).
func newRPMSigner(ctx context.Context, home string) (*rpmSigner, error) {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	s := &rpmSigner{home: home}
	defer s.stopAgent()
	if out, err := s.gpg(ctx, "--quick-generate-key", rpmKeyUID, "rsa2048", "sign", "never").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("nvrepo: generating the rpm signing key: %w: %s", err, out)
	}
	return s, nil
}

// exportKey writes the public key, armored, to path.
func (s *rpmSigner) exportKey(ctx context.Context, path string) error {
	defer s.stopAgent()
	pub, err := s.gpg(ctx, "--armor", "--export", rpmKeyUID).Output()
	if err != nil || len(pub) == 0 {
		return fmt.Errorf("nvrepo: exporting the rpm signing key: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, pub, 0o644)
}

// detachSign writes path.asc, an armored detached signature of path, as
// dnf's repo_gpgcheck checks repodata/repomd.xml against
// repodata/repomd.xml.asc (dnf.conf(5), repo_gpgcheck).
func (s *rpmSigner) detachSign(ctx context.Context, path string) error {
	defer s.stopAgent()
	os.Remove(path + ".asc")
	if out, err := s.gpg(ctx, "--armor", "--detach-sign", "--local-user", rpmKeyUID, "--output", path+".asc", path).CombinedOutput(); err != nil {
		return fmt.Errorf("nvrepo: signing %s: %w: %s", filepath.Base(path), err, out)
	}
	return nil
}

func (s *rpmSigner) gpg(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "gpg", append([]string{"--homedir", s.home, "--batch", "--pinentry-mode", "loopback", "--passphrase", ""}, args...)...)
	return cmd
}

// sign adds the key's signature to each rpm's header (rpmsign --addsign,
// which runs gpg through the %__gpg_sign_cmd macro).
func (s *rpmSigner) sign(ctx context.Context, rpms []string) error {
	if len(rpms) == 0 {
		return nil
	}
	defer s.stopAgent()
	gpgPath, err := exec.LookPath("gpg")
	if err != nil {
		return err
	}
	args := []string{"--addsign",
		"--define", "_gpg_path " + s.home,
		"--define", "_gpg_name " + rpmKeyUID,
		// Debian's rpm names /usr/bin/gpg2, which Debian's gnupg no longer
		// ships.
		"--define", "__gpg " + gpgPath,
		"--define", "_gpg_sign_cmd_extra_args --batch --pinentry-mode loopback --passphrase ''",
	}
	cmd := exec.CommandContext(ctx, "rpmsign", append(args, rpms...)...)
	cmd.Env = append(os.Environ(), "GNUPGHOME="+s.home)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nvrepo: rpmsign %s: %w: %s", filepath.Base(rpms[0]), err, out)
	}
	return nil
}

// stopAgent ends the gpg-agent that gpg started for this home, so no
// process outlives the build.
func (s *rpmSigner) stopAgent() {
	_ = exec.Command("gpgconf", "--homedir", s.home, "--kill", "gpg-agent").Run()
}

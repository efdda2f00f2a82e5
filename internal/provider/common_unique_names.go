package provider

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"
)

// uniqueSuffixLength is the length of uniqueSuffix's result, as
// terraform-provider-aws's name prefixes leave room for.
const uniqueSuffixLength = 26

// uniqueSuffix is a suffix that makes a name prefix unique: the UTC time to
// the second, then 12 random hex digits (26 characters, sorting by time).
func uniqueSuffix() string {
	return time.Now().UTC().Format("20060102150405") + randomHex(6)
}

// newClientRequestToken is an idempotency token for a create (a random
// UUID, version 4): EKS treats a retried request with the same token as
// the same request.
func newClientRequestToken() string {
	b := randomBytes(16)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func randomHex(n int) string { return hex.EncodeToString(randomBytes(n)) }

func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error()) // rand.Read never fails on supported platforms
	}
	return b
}
